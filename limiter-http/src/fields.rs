//! What every limited response carries: the IETF RateLimit header fields and the legacy
//! `X-RateLimit-*` ones, written from the request's decisions — the same bytes whichever
//! front end writes them.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Write as _;

use bytes::Bytes;
use limiter_core::{Decision, Policy};

use crate::headers::{Field, FieldMap};

/// A limit's name as the header fields carry it (a structured-field string): printable
/// ASCII, with `"`, `\\`, `%` and everything else percent-encoded from UTF-8 (`über` is
/// `%C3%BCber`), so that any handler name makes a valid field.
///
/// ```
/// assert_eq!(limiter_http::field_name("über".into()), "%C3%BCber");
/// assert_eq!(limiter_http::field_name("login".into()), "login");
/// ```
pub fn field_name(name: Cow<'static, str>) -> Cow<'static, str> {
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
/// rounded up), after a `, ` when `out` has one already.
///
/// ```
/// let mut policy = String::new();
/// limiter_http::policy_member(&mut policy, "login", 5, 60_000);
/// limiter_http::policy_member(&mut policy, "burst", 2, 1_500);
/// assert_eq!(policy, r#""login";q=5;w=60, "burst";q=2;w=2"#);
/// ```
pub fn policy_member(out: &mut String, name: &str, quota: u32, window_ms: u64) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    let _ = write!(
        out,
        "\"{name}\";q={quota};w={}",
        window_ms.div_ceil(1000).max(1)
    );
}

/// The opening of a limit's `RateLimit` list member: `"login";r=`.
pub fn member_prefix(name: &str) -> Box<str> {
    format!("\"{name}\";r=").into_boxed_str()
}

/// The decisions taken for one request, in the order of the handler's limits; the header
/// fields are written from them only when the response is built, and only if enabled.
pub struct RateLimitFields {
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

/// The name and policy of one list member, when they are not the declared ones.
#[derive(Clone, Debug)]
pub struct Member {
    /// Its name, as [`field_name`] writes it.
    pub name: Cow<'static, str>,
    /// Its policy: the quota and window of its `RateLimit-Policy` member.
    pub policy: Policy,
}

/// Which rate limit header fields responses carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderOptions {
    /// `RateLimit-Policy` and `RateLimit` (and `X-RateLimit-Dry-Run`).
    pub ietf: bool,
    /// `X-RateLimit-Limit`, `-Remaining` and `-Reset`.
    pub legacy: bool,
}

/// How [`RateLimitFields::apply`] writes a field a response may carry already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// Ours replace it (the response is ours, or the handler's and knows of no fields).
    Replace,
    /// Theirs stays (a custom rejection response set it).
    KeepExisting,
    /// Ours go first, theirs after (a middleware above a limited handler).
    Prepend,
}

/// A handler's declared limits as its fields name them: the `RateLimit-Policy` value and
/// each limit's `RateLimit` member opening ([`member_prefix`]), made once per handler.
pub struct Declared<'a, V> {
    /// The `RateLimit-Policy` value of the limits as declared (empty: none).
    pub policy: &'a V,
    /// Each declared limit's [`member_prefix`], in order.
    pub prefixes: &'a [Box<str>],
}

impl RateLimitFields {
    /// The decision of a handler's one limit.
    #[inline]
    pub fn one(decision: Decision) -> RateLimitFields {
        RateLimitFields {
            first: Some(decision),
            members: None,
            incomplete: false,
            rare: None,
        }
    }

    /// The one decision, when they are its limits' one limit as declared and nothing else
    /// (what a flood's 429s carry).
    pub fn only_decision(&self) -> Option<&Decision> {
        match (&self.first, &self.members, &self.rare, self.incomplete) {
            (Some(decision), None, None, false) => Some(decision),
            _ => None,
        }
    }

    /// The decisions of a handler's stacked limits, in order.
    pub fn many(mut decisions: Vec<Decision>) -> RateLimitFields {
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
    pub fn of_members(decisions: Vec<Decision>, members: Vec<Member>) -> RateLimitFields {
        let mut fields = RateLimitFields::many(decisions);
        fields.members = Some(members);
        fields
    }

    /// No decision: the store failed and the limiter lets requests through meanwhile.
    pub fn undecided() -> RateLimitFields {
        RateLimitFields {
            first: None,
            members: None,
            incomplete: true,
            rare: None,
        }
    }

    /// No decision, and no field: an exempt request.
    pub fn none() -> RateLimitFields {
        RateLimitFields::of_members(Vec::new(), Vec::new())
    }

    /// Adds the decisions of limits checked inside the handler, after the handler's own
    /// (whose members `declared` gives, where they were not named), and the names of those
    /// on trial that would have refused.
    pub fn add_checked(
        &mut self,
        checks: Vec<(Member, Decision)>,
        let_through: Vec<Cow<'static, str>>,
        declared: impl FnOnce() -> Vec<Member>,
    ) {
        if self.incomplete {
            return;
        }
        if !let_through.is_empty() {
            self.rare_mut().let_through.extend(let_through);
        }
        let members = self.members.get_or_insert_with(declared);
        for (member, decision) in checks {
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
    }

    /// Gives `units` back to the decision at `place` (its check was taken back: the
    /// response did not count), so that its `r` says what the client has left.
    pub fn give_back(&mut self, place: usize, units: u32) {
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
    /// its response says so in [`Field::DryRun`].
    pub fn let_through(&mut self, names: Vec<Cow<'static, str>>) {
        if !names.is_empty() || self.rare.is_some() {
            self.rare_mut().let_through = names;
        }
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// Each decision with its member's name and policy, where they are named.
    pub fn named(&self) -> impl Iterator<Item = (Member, Decision)> + '_ {
        let members = self.members.iter().flatten().cloned();
        members.zip(self.decisions().copied())
    }

    #[inline]
    fn decisions(&self) -> impl Iterator<Item = &Decision> {
        let stacked = self.rare.as_deref().map_or(&[][..], |r| &r.stacked[..]);
        self.first.iter().chain(stacked)
    }

    /// Writes the fields into a response's headers, as `write` says: replacing what is
    /// there (which saves a lookup per field on every response), keeping the fields a
    /// custom rejection response set itself, or before a handler's own (a middleware).
    #[inline]
    pub fn apply<M: FieldMap>(
        &self,
        headers: &mut M,
        declared: Declared<'_, M::Value>,
        options: HeaderOptions,
        write: Write,
    ) {
        if options.ietf || options.legacy {
            self.write(headers, declared, options, write);
        }
    }

    /// [`apply`](Self::apply) with some fields enabled.
    fn write<M: FieldMap>(
        &self,
        headers: &mut M,
        declared: Declared<'_, M::Value>,
        options: HeaderOptions,
        write: Write,
    ) {
        if options.ietf && !self.incomplete {
            if matches!(&self.members, Some(members) if members.is_empty()) {
                return;
            }
            self.write_ietf(headers, declared, write);
        }
        // Beside the RateLimit fields, which already tell the client its `r=0`.
        if let Some(rare) = self.rare.as_deref().filter(|r| !r.let_through.is_empty()) {
            if options.ietf {
                write_let_through(&rare.let_through, headers, write);
            }
        }
        if options.legacy {
            self.write_legacy(headers, write);
        }
    }

    /// `RateLimit-Policy` and `RateLimit`: each limit's quota and window, then what is left
    /// of it and when it is whole again.
    #[inline]
    fn write_ietf<M: FieldMap>(
        &self,
        headers: &mut M,
        declared: Declared<'_, M::Value>,
        write: Write,
    ) {
        let mut value = Vec::new();
        let member = |value: &mut Vec<u8>, prefix: &[u8], decision: &Decision| {
            if !value.is_empty() {
                value.extend_from_slice(b", ");
            }
            let (mut r, mut t) = ([0; 20], [0; 20]);
            let r = decimal(u64::from(decision.remaining()), &mut r);
            push_member(
                value,
                prefix,
                r,
                decimal(decision.reset_after_secs(), &mut t),
            );
        };
        match &self.members {
            None => {
                write.field(headers, Field::RateLimitPolicy, declared.policy.clone());
                value = match (&self.first, &self.rare, declared.prefixes) {
                    // Most responses: one limit. Its digits made on the stack, the value
                    // in one buffer of its length, which becomes a header value without a
                    // second allocation (`Bytes::from`).
                    (Some(decision), None, [prefix]) => {
                        let (mut r, mut t) = ([0; 20], [0; 20]);
                        let r = decimal(u64::from(decision.remaining()), &mut r);
                        let t = decimal(decision.reset_after_secs(), &mut t);
                        let mut value = Vec::with_capacity(prefix.len() + r.len() + 3 + t.len());
                        push_member(&mut value, prefix.as_bytes(), r, t);
                        value
                    }
                    _ => {
                        let members = self.decisions().zip(declared.prefixes);
                        let length: usize = members
                            .map(|(d, prefix)| {
                                let r = decimal_len(u64::from(d.remaining()));
                                2 + prefix.len() + r + 3 + decimal_len(d.reset_after_secs())
                            })
                            .sum();
                        value.reserve_exact(length.saturating_sub(2));
                        for (decision, prefix) in self.decisions().zip(declared.prefixes) {
                            member(&mut value, prefix.as_bytes(), decision);
                        }
                        value
                    }
                };
            }
            Some(members) => {
                let mut policies = String::new();
                for (m, decision) in members.iter().zip(self.decisions()) {
                    let p = &m.policy;
                    policy_member(&mut policies, &m.name, p.max().get(), p.window_ms());
                    member(&mut value, member_prefix(&m.name).as_bytes(), decision);
                }
                if let Some(policies) = M::value(Bytes::from(policies)) {
                    write.field(headers, Field::RateLimitPolicy, policies);
                }
            }
        }
        if let Some(value) = M::value(Bytes::from(value)) {
            write.field(headers, Field::RateLimit, value);
        }
    }

    /// The `X-RateLimit-*` fields of the most restrictive limit: the fewest remaining, then
    /// the longest wait.
    fn write_legacy<M: FieldMap>(&self, headers: &mut M, write: Write) {
        let tightest = self
            .decisions()
            .min_by_key(|d| (d.remaining(), std::cmp::Reverse(d.reset_after())));
        if let Some(d) = tightest {
            write.field(
                headers,
                Field::Limit,
                number_value::<M>(u64::from(d.limit())),
            );
            let remaining = number_value::<M>(u64::from(d.remaining()));
            write.field(headers, Field::Remaining, remaining);
            write.field(
                headers,
                Field::Reset,
                number_value::<M>(d.reset_after_secs()),
            );
        }
    }
}

/// One `RateLimit` list member after its opening `prefix` ([`member_prefix`]): `R;t=T`,
/// from the digits of what is left and of when it is whole again.
#[inline]
fn push_member(value: &mut Vec<u8>, prefix: &[u8], r: &[u8], t: &[u8]) {
    value.extend_from_slice(prefix);
    value.extend_from_slice(r);
    value.extend_from_slice(b";t=");
    value.extend_from_slice(t);
}

/// [`Field::DryRun`]: the limits on trial that would have refused the request.
#[cold]
fn write_let_through<M: FieldMap>(names_of: &[Cow<'static, str>], headers: &mut M, write: Write) {
    let mut names = Vec::with_capacity(16 * names_of.len());
    for name in names_of {
        if !names.is_empty() {
            names.extend_from_slice(b", ");
        }
        names.push(b'"');
        names.extend_from_slice(name.as_bytes());
        names.push(b'"');
    }
    if let Some(names) = M::value(Bytes::from(names)) {
        write.field(headers, Field::DryRun, names);
    }
}

impl Write {
    /// Writes `field` as this says.
    #[inline]
    fn field<M: FieldMap>(self, headers: &mut M, field: Field, value: M::Value) {
        match self {
            Write::Replace => headers.insert(field, value),
            Write::KeepExisting => set_if_absent(headers, field, value),
            Write::Prepend => match headers.get(field) {
                // Fields a handler below wrote: ours come first, theirs follow.
                Some(theirs)
                    if matches!(
                        field,
                        Field::RateLimitPolicy | Field::RateLimit | Field::DryRun
                    ) =>
                {
                    let mut joined = M::bytes_of(&value).to_vec();
                    joined.extend_from_slice(b", ");
                    joined.extend_from_slice(M::bytes_of(theirs));
                    if let Some(joined) = M::value(Bytes::from(joined)) {
                        headers.insert(field, joined);
                    }
                }
                Some(_) => {}
                None => headers.insert(field, value),
            },
        }
    }
}

/// Sets `field` unless the map has it.
#[inline]
pub fn set_if_absent<M: FieldMap>(headers: &mut M, field: Field, value: M::Value) {
    if !headers.contains(field) {
        headers.insert(field, value);
    }
}

/// The decimal digits of 0 to 99, two by two.
const PAIRS: &str = "00010203040506070809101112131415161718192021222324\
                     25262728293031323334353637383940414243444546474849\
                     50515253545556575859606162636465666768697071727374\
                     75767778798081828384858687888990919293949596979899";

/// How many digits `n` has in decimal.
#[inline]
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// `n`'s decimal digits, written at the end of `digits`, two by two (without the
/// formatting machinery: this runs on every response).
#[inline]
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let pairs = PAIRS.as_bytes();
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
    &digits[at..]
}

/// Appends `n` in decimal.
///
/// ```
/// let mut out = b"r=".to_vec();
/// limiter_http::push_decimal(&mut out, 3_600);
/// assert_eq!(out, b"r=3600");
/// ```
#[inline]
pub fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(decimal(n, &mut [0; 20]));
}

/// `n` as a header field value, with no allocation below 100 — most `Retry-After`s, and
/// every `X-RateLimit-Reset` of a minute's window.
#[inline]
pub fn number_value<M: FieldMap>(n: u64) -> M::Value {
    match usize::try_from(n) {
        Ok(n @ 0..=9) => M::value_static(&PAIRS[2 * n + 1..2 * n + 2]),
        Ok(n @ 10..=99) => M::value_static(&PAIRS[2 * n..2 * n + 2]),
        _ => recent_number_value::<M>(n),
    }
}

/// `n`'s bytes as [`number_value`] last made them on this thread, else made anew: a
/// flood's refusals carry the same `Retry-After` for a second at a time, and cloning the
/// bytes is a reference count where making them is a formatting and an allocation.
fn recent_number_value<M: FieldMap>(n: u64) -> M::Value {
    thread_local! {
        static LAST: RefCell<Option<(u64, Bytes)>> = const { RefCell::new(None) };
    }
    let bytes = LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((made, bytes)) if *made == n => bytes.clone(),
            _ => {
                let mut digits = Vec::with_capacity(20);
                push_decimal(&mut digits, n);
                let bytes = Bytes::from(digits);
                *last = Some((n, bytes.clone()));
                bytes
            }
        }
    });
    // Digits are always a valid value.
    M::value(bytes).unwrap_or_else(|| M::value_static("0"))
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    #[test]
    fn decimal_lengths() {
        for n in [0, 1, 9, 10, 99, 100, 65_535, u64::MAX] {
            assert_eq!(super::decimal_len(n), n.to_string().len(), "{n}");
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
