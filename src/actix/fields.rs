//! What every limited response carries: the IETF RateLimit header fields and the legacy
//! `X-RateLimit-*` ones, written from the request's decisions.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

use super::pipeline::settle::Refund;
use crate::{Decision, Policy};

/// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10).
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10).
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// The limits that would have rejected a request that was let through (a dry run, or a
/// client outside the share a limit is enforced on), as a list of their names.
pub(crate) static X_RATELIMIT_DRY_RUN: HeaderName = HeaderName::from_static("x-ratelimit-dry-run");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// A limit's name as the header fields carry it (a structured-field string): printable
/// ASCII, with `"`, `\\`, `%` and everything else percent-encoded from UTF-8 (`über` is
/// `%C3%BCber`), so that any handler name makes a valid field.
pub(crate) fn field_name(name: Cow<'static, str>) -> Cow<'static, str> {
    let plain = |c: char| (' '..='~').contains(&c) && !matches!(c, '"' | '\\' | '%');
    if name.chars().all(plain) {
        return name;
    }
    let mut out = String::with_capacity(name.len() * 3);
    for c in name.chars() {
        if plain(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{byte:02X}");
            }
        }
    }
    Cow::Owned(out)
}

/// One `RateLimit-Policy` list member: `"login";q=5;w=60` (the window in whole seconds,
/// rounded up).
pub(crate) fn policy_member(out: &mut String, name: &str, quota: u32, window_ms: u64) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    let _ = write!(
        out,
        "\"{name}\";q={quota};w={}",
        window_ms.div_ceil(1000).max(1)
    );
}

/// The decisions taken for one request, in the order of the handler's limits; the header
/// fields are written from them only when the response is built, and only if enabled.
pub(crate) struct RateLimitFields {
    /// Most handlers have one limit: its decision needs no allocation.
    first: Option<Decision>,
    /// When the limits decided are not the set's exactly as declared (some exempt, some
    /// policies chosen for this request, a limit checked inside the handler): what each
    /// decision's member is called and limits. `None`: the set's limits, in order.
    members: Option<Vec<Member>>,
    /// A limit went undecided (the store failed open): `RateLimit` is left out, since its
    /// members would no longer line up with the limits.
    incomplete: bool,
    /// What few requests have, boxed: every request moves these fields through its
    /// decision and its handler's future, and drops them.
    rare: Option<Box<Rare>>,
}

/// The fields of a request with stacked limits, or with limits let through.
#[derive(Default)]
struct Rare {
    /// The decisions after the first.
    stacked: Vec<Decision>,
    /// The limits that would have rejected the request but were not enforced on it (a dry
    /// run, or a client outside the share a limit is enforced on), by name.
    let_through: Vec<Cow<'static, str>>,
}

/// The decisions of limits checked inside a handler, waiting in the request's extensions
/// for the response's fields, and what a success takes back (`check_failures`).
#[derive(Default)]
pub(crate) struct InlineChecks {
    pub(crate) checks: Vec<(Member, Decision)>,
    pub(crate) refunds: Vec<Refund>,
    /// The names of those that would have rejected the request and were on trial.
    pub(crate) let_through: Vec<Cow<'static, str>>,
}

/// Whether any request of this process was checked inside its handler: until one is, no
/// response looks for their decisions in its request's extensions (a lookup per request).
static ANY_INLINE: AtomicBool = AtomicBool::new(false);

impl InlineChecks {
    /// Called before a request's first inline check is stored: the request is answered on
    /// the thread that checked it, so its response then looks.
    pub(crate) fn made() {
        if !ANY_INLINE.load(Ordering::Relaxed) {
            ANY_INLINE.store(true, Ordering::Relaxed);
        }
    }
}

/// The name and policy of one list member, when they are not the declared ones.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) name: Cow<'static, str>,
    pub(crate) policy: Policy,
}

impl RateLimitFields {
    /// The decision of a handler's one limit.
    #[inline]
    pub(crate) fn one(decision: Decision) -> RateLimitFields {
        RateLimitFields {
            first: Some(decision),
            members: None,
            incomplete: false,
            rare: None,
        }
    }

    /// The one decision, when they are its limits' one limit as declared and nothing else
    /// (what a flood's 429s carry).
    pub(crate) fn only_decision(&self) -> Option<&Decision> {
        match (&self.first, &self.members, &self.rare, self.incomplete) {
            (Some(decision), None, None, false) => Some(decision),
            _ => None,
        }
    }

    /// The decisions of a handler's stacked limits, in order.
    pub(crate) fn many(mut decisions: Vec<Decision>) -> RateLimitFields {
        let first = (!decisions.is_empty()).then(|| decisions.remove(0));
        let rare = (!decisions.is_empty()).then(|| {
            Box::new(Rare {
                stacked: decisions,
                let_through: Vec::new(),
            })
        });
        RateLimitFields {
            first,
            members: None,
            incomplete: false,
            rare,
        }
    }

    /// Decisions whose members are named and limited as `members` says, in order.
    pub(crate) fn of_members(decisions: Vec<Decision>, members: Vec<Member>) -> RateLimitFields {
        let mut fields = RateLimitFields::many(decisions);
        fields.members = Some(members);
        fields
    }

    /// No decision: the store failed and the limiter lets requests through meanwhile.
    pub(crate) fn undecided() -> RateLimitFields {
        RateLimitFields {
            first: None,
            members: None,
            incomplete: true,
            rare: None,
        }
    }

    /// No decision, and no field: an exempt request.
    pub(crate) fn none() -> RateLimitFields {
        RateLimitFields::of_members(Vec::new(), Vec::new())
    }

    /// Adds the decisions of limits checked inside the handler ([`crate::check`]), which
    /// the request carries in its extensions; returns what a success takes back of them.
    #[inline]
    pub(crate) fn take_inline_checks(
        &mut self,
        req: &actix_web::HttpRequest,
        declared: impl FnOnce() -> Vec<Member>,
    ) -> Vec<Refund> {
        match ANY_INLINE.load(Ordering::Relaxed) {
            false => Vec::new(),
            true => self.take_inline_checks_made(req, declared),
        }
    }

    /// [`take_inline_checks`](Self::take_inline_checks) once this process has checked a
    /// limit inside a handler: out of line, so that every other response pays a load.
    #[inline(never)]
    fn take_inline_checks_made(
        &mut self,
        req: &actix_web::HttpRequest,
        declared: impl FnOnce() -> Vec<Member>,
    ) -> Vec<Refund> {
        use actix_web::HttpMessage;
        let Some(checked) = req.extensions_mut().remove::<InlineChecks>() else {
            return Vec::new();
        };
        if self.incomplete {
            return checked.refunds;
        }
        if !checked.let_through.is_empty() {
            self.rare_mut().let_through.extend(checked.let_through);
        }
        let members = self.members.get_or_insert_with(declared);
        for (member, decision) in checked.checks {
            members.push(member);
            match self.first {
                None => self.first = Some(decision),
                Some(_) => self
                    .rare
                    .get_or_insert_with(Box::default)
                    .stacked
                    .push(decision),
            }
        }
        checked.refunds
    }

    /// Gives `units` back to the decision at `place` (its check was taken back: the
    /// response did not count), so that its `r` says what the client has left.
    pub(crate) fn give_back(&mut self, place: usize, units: u32) {
        let decision = match place {
            0 => self.first.as_mut(),
            _ => self
                .rare
                .as_mut()
                .and_then(|r| r.stacked.get_mut(place - 1)),
        };
        if let Some(d) = decision.filter(|d| d.allowed()) {
            let remaining = d.remaining().saturating_add(units).min(d.limit());
            *d = Decision::allow(d.limit(), remaining, d.reset_after());
        }
    }

    /// Names the limits that would have rejected the request and were not enforced on it:
    /// its response says so in [`X_RATELIMIT_DRY_RUN`].
    pub(crate) fn let_through(&mut self, names: Vec<Cow<'static, str>>) {
        if !names.is_empty() || self.rare.is_some() {
            self.rare_mut().let_through = names;
        }
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Each decision with its member's name and policy, where they are named.
    pub(crate) fn named(&self) -> impl Iterator<Item = (Member, Decision)> + '_ {
        let members = self.members.iter().flatten().cloned();
        members.zip(self.decisions().copied())
    }

    fn decisions(&self) -> impl Iterator<Item = &Decision> {
        let stacked = self.rare.as_deref().map_or(&[][..], |r| &r.stacked[..]);
        self.first.iter().chain(stacked)
    }

    /// Writes the fields into a response's headers, as `write` says: replacing what is
    /// there (which saves a lookup per field on every response), keeping the fields a
    /// custom rejection response set itself, or before a handler's own (a middleware).
    #[inline]
    pub(crate) fn apply(
        &self,
        headers: &mut HeaderMap,
        policy: &HeaderValue,
        prefixes: &[Box<str>],
        options: HeaderOptions,
        write: Write,
    ) {
        if options.ietf || options.legacy {
            self.write(headers, policy, prefixes, options, write);
        }
    }

    /// [`apply`](Self::apply) with some fields enabled.
    fn write(
        &self,
        headers: &mut HeaderMap,
        policy: &HeaderValue,
        prefixes: &[Box<str>],
        options: HeaderOptions,
        write: Write,
    ) {
        if options.ietf && !self.incomplete {
            if matches!(&self.members, Some(members) if members.is_empty()) {
                return;
            }
            self.write_ietf(headers, policy, prefixes, write);
        }
        // Beside the RateLimit fields, which already tell the client its `r=0`.
        if let Some(rare) = self.rare.as_deref().filter(|r| !r.let_through.is_empty()) {
            if options.ietf {
                Self::write_let_through(&rare.let_through, headers, write);
            }
        }
        if options.legacy {
            self.write_legacy(headers, write);
        }
    }

    /// `RateLimit-Policy` and `RateLimit`: each limit's quota and window, then what is left
    /// of it and when it is whole again.
    #[inline]
    fn write_ietf(
        &self,
        headers: &mut HeaderMap,
        policy: &HeaderValue,
        prefixes: &[Box<str>],
        write: Write,
    ) {
        let mut value = Vec::with_capacity(64);
        let member = |value: &mut Vec<u8>, prefix: &[u8], decision: &Decision| {
            if !value.is_empty() {
                value.extend_from_slice(b", ");
            }
            value.extend_from_slice(prefix);
            push_decimal(value, u64::from(decision.remaining()));
            value.extend_from_slice(b";t=");
            push_decimal(value, decision.reset_after_secs());
        };
        match &self.members {
            None => {
                write.field(headers, &RATELIMIT_POLICY, policy.clone());
                for (decision, prefix) in self.decisions().zip(prefixes) {
                    member(&mut value, prefix.as_bytes(), decision);
                }
            }
            Some(members) => {
                let mut policies = String::new();
                for (m, decision) in members.iter().zip(self.decisions()) {
                    let p = &m.policy;
                    policy_member(&mut policies, &m.name, p.max().get(), p.window_ms());
                    member(&mut value, member_prefix(&m.name).as_bytes(), decision);
                }
                if let Ok(policies) = HeaderValue::from_str(&policies) {
                    write.field(headers, &RATELIMIT_POLICY, policies);
                }
            }
        }
        if let Ok(value) = HeaderValue::from_maybe_shared(bytes_of(value)) {
            write.field(headers, &RATELIMIT, value);
        }
    }

    /// [`X_RATELIMIT_DRY_RUN`]: the limits on trial that would have refused the request.
    #[cold]
    fn write_let_through(names_of: &[Cow<'static, str>], headers: &mut HeaderMap, write: Write) {
        let mut names = Vec::with_capacity(16 * names_of.len());
        for name in names_of {
            if !names.is_empty() {
                names.extend_from_slice(b", ");
            }
            names.push(b'"');
            names.extend_from_slice(name.as_bytes());
            names.push(b'"');
        }
        if let Ok(names) = HeaderValue::from_maybe_shared(bytes_of(names)) {
            write.field(headers, &X_RATELIMIT_DRY_RUN, names);
        }
    }

    /// The `X-RateLimit-*` fields of the most restrictive limit: the fewest remaining, then
    /// the longest wait.
    fn write_legacy(&self, headers: &mut HeaderMap, write: Write) {
        let tightest = self
            .decisions()
            .min_by_key(|d| (d.remaining(), std::cmp::Reverse(d.reset_after())));
        if let Some(d) = tightest {
            write.field(headers, &X_LIMIT, HeaderValue::from(d.limit()));
            write.field(headers, &X_REMAINING, HeaderValue::from(d.remaining()));
            write.field(headers, &X_RESET, number_value(d.reset_after_secs()));
        }
    }
}

fn bytes_of(value: Vec<u8>) -> actix_web::web::Bytes {
    actix_web::web::Bytes::from(value)
}

/// The decimal digits of 0 to 99, two by two.
const PAIRS: &str = "00010203040506070809101112131415161718192021222324\
                     25262728293031323334353637383940414243444546474849\
                     50515253545556575859606162636465666768697071727374\
                     75767778798081828384858687888990919293949596979899";

/// Appends `n` in decimal, without the formatting machinery (this runs on every response),
/// two digits a division.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let pairs = PAIRS.as_bytes();
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&pairs[pair..pair + 2]);
    }
    // Below 100: the cast cannot truncate.
    let n = n as usize;
    if n >= 10 {
        at -= 2;
        digits[at..at + 2].copy_from_slice(&pairs[2 * n..2 * n + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[at..]);
}

/// `n` as a header field value, with no allocation below 100 — most `Retry-After`s, and
/// every `X-RateLimit-Reset` of a minute's window.
pub(crate) fn number_value(n: u64) -> HeaderValue {
    match usize::try_from(n) {
        Ok(n @ 0..=9) => HeaderValue::from_static(&PAIRS[2 * n + 1..2 * n + 2]),
        Ok(n @ 10..=99) => HeaderValue::from_static(&PAIRS[2 * n..2 * n + 2]),
        _ => recent_number_value(n),
    }
}

/// `n`'s value as [`number_value`] last made it on this thread, else made anew: a flood's
/// refusals carry the same `Retry-After` for a second at a time, and cloning a value is a
/// reference count where making one is a formatting and an allocation.
fn recent_number_value(n: u64) -> HeaderValue {
    thread_local! {
        static LAST: RefCell<Option<(u64, HeaderValue)>> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((made, value)) if *made == n => value.clone(),
            _ => {
                let value = HeaderValue::from(n);
                *last = Some((n, value.clone()));
                value
            }
        }
    })
}

/// How [`RateLimitFields::apply`] writes a field a response may carry already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Ours replace it (the response is ours, or the handler's and knows of no fields).
    Replace,
    /// Theirs stays (a custom rejection response set it).
    KeepExisting,
    /// Ours go first, theirs after (a middleware above a limited handler).
    Prepend,
}

impl Write {
    /// Writes the field `name` as this says.
    #[inline]
    fn field(self, headers: &mut HeaderMap, name: &HeaderName, value: HeaderValue) {
        match self {
            Write::Replace => {
                headers.insert(name.clone(), value);
            }
            Write::KeepExisting => set_if_absent(headers, name, value),
            Write::Prepend => match headers.get(name) {
                // Fields a handler below wrote: ours come first, theirs follow.
                Some(theirs)
                    if name == RATELIMIT_POLICY
                        || name == RATELIMIT
                        || name == X_RATELIMIT_DRY_RUN =>
                {
                    let mut joined = value.as_bytes().to_vec();
                    joined.extend_from_slice(b", ");
                    joined.extend_from_slice(theirs.as_bytes());
                    if let Ok(joined) = HeaderValue::from_maybe_shared(bytes_of(joined)) {
                        headers.insert(name.clone(), joined);
                    }
                }
                Some(_) => {}
                None => {
                    headers.insert(name.clone(), value);
                }
            },
        }
    }
}

/// Which rate limit header fields responses carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeaderOptions {
    pub(crate) ietf: bool,
    pub(crate) legacy: bool,
}

pub(crate) fn set_if_absent(headers: &mut HeaderMap, name: &HeaderName, value: HeaderValue) {
    if !headers.contains_key(name) {
        headers.insert(name.clone(), value);
    }
}

/// The opening of a limit's `RateLimit` list member: `"login";r=`.
pub(crate) fn member_prefix(name: &str) -> Box<str> {
    format!("\"{name}\";r=").into_boxed_str()
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    #[test]
    fn numbers_as_header_values() {
        for n in [0, 1, 9, 10, 42, 99, 100, 3_600, u64::MAX] {
            assert_eq!(super::number_value(n).to_str().unwrap(), n.to_string());
        }
    }

    #[test]
    fn decimals() {
        let mut every_width: Vec<u64> = (0..=20).map(|d| 10u64.saturating_pow(d)).collect();
        every_width.extend(every_width.clone().iter().map(|n| n.saturating_sub(1)));
        every_width.extend([7, 42, 65_535, 3_600, 86_399, 1_000_001, u64::MAX]);
        for n in every_width.into_iter().chain(0..10_000) {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes(), "{n}");
        }
    }
}
