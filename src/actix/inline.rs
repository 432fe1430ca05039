//! Limits decided inside a handler, once what the request says is known (the username in a
//! login form): [`check`], with the attribute's responses, fields and fault policy.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use actix_web::{HttpMessage, HttpRequest, HttpResponse, ResponseError};

use std::sync::Arc;

use super::fields::{InlineChecks, Member};
use super::keys::ClientKey;
use super::observe::Outcome;
use super::problem::Failure;
use super::refund::Refund;
use crate::{Charge, Limit, Limiter, Share, StoreError, Verdict};

/// A request a [`check`] turned away: return it with `?`, and actix answers with the
/// limiter's 429 (or its configured rejection response), or the 503 of a store that
/// failed closed. Under `#[rate_limit]` (or the `RateLimit` middleware) its response also
/// carries the RateLimit fields of every limit checked.
pub struct Rejected {
    response: RefCell<Option<HttpResponse>>,
    status: actix_web::http::StatusCode,
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rejected by the rate limiter ({})", self.status)
    }
}

impl ResponseError for Rejected {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.response
            .borrow_mut()
            .take()
            .unwrap_or_else(|| HttpResponse::build(self.status).finish())
    }
}

impl Rejected {
    fn new(response: HttpResponse) -> Rejected {
        Rejected {
            status: response.status(),
            response: RefCell::new(Some(response)),
        }
    }
}

/// Counts `req` against `limit` for `key` — a value the handler read from the request, such
/// as the username of a login form — with the limiter the request is counted by, its store
/// and its fault policy. `Err` is the response to answer with (`?` does).
///
/// The key lives in a namespace of its own (`"ann"` here never shares the budget of a user
/// id `"ann"` or of an address); configuration can override the limit's policy by its
/// scope, as for the attribute's.
///
/// ```no_run
/// use std::collections::HashMap;
/// use std::time::Duration;
/// use actix_web::{web, HttpRequest, HttpResponse};
/// use limiter::{Limit, Policy, Rejected};
///
/// const PER_USERNAME: Policy = match Policy::new(5, Duration::from_secs(900)) {
///     Ok(policy) => policy,
///     Err(error) => panic!("{}", error.message()),
/// };
/// static LOGINS_PER_USERNAME: Limit = Limit::constant("login-username", PER_USERNAME);
///
/// // With `limiter`, under `#[post("/login")] #[rate_limit(30, per = "1m")]`: per address
/// // before the body is read, then per username.
/// async fn login(
///     req: HttpRequest,
///     form: web::Form<HashMap<String, String>>,
/// ) -> Result<HttpResponse, Rejected> {
///     let user = form.get("user").map_or("", String::as_str);
///     limiter::check(&req, &LOGINS_PER_USERNAME, user).await?;
///     Ok(HttpResponse::Ok().finish())
/// }
/// ```
pub async fn check(req: &HttpRequest, limit: &Limit, key: &str) -> Result<(), Rejected> {
    check_inline(req, limit, key, false).await
}

/// [`check`], counting only failures (`count = "failures"`): the request is counted now,
/// and taken back if its response turns out a success (status below 400), before that
/// response leaves. For the username of a login form: five **failed** logins per username,
/// while a person who types the right password is never held back.
///
/// The taking back is done by `#[rate_limit]` (or the `RateLimit` middleware) around the
/// handler, which sees its response: without either, this counts every request, as
/// [`check`] does.
pub async fn check_failures(req: &HttpRequest, limit: &Limit, key: &str) -> Result<(), Rejected> {
    check_inline(req, limit, key, true).await
}

async fn check_inline(
    req: &HttpRequest,
    limit: &Limit,
    key: &str,
    failures_only: bool,
) -> Result<(), Rejected> {
    let limiter = Limiter::of(req);
    let overridden = limiter.overridden(limit);
    let limit = overridden.as_deref().unwrap_or(limit);
    // So that `Limiter::reset` finds this budget: a limit checked inline is declared nowhere.
    limiter.remember(limit);
    let key = ClientKey::checked(key.as_bytes());
    // On trial (a dry run, or a client outside the scope's enforced share): decided and
    // counted, never waited for nor refused, as a handler's limit on trial.
    let enforced = limiter.enforces_in(limit.scope(), Share::ALL, &key);
    let charge = [Charge::new(limit, key.as_bytes())];
    let mut check = limiter.check_all(&charge);
    let result = match check.take_ready() {
        Some(result) => result,
        None => check.await,
    };
    let result = result.and_then(|checked| {
        let (decisions, receipt) = checked.into_parts();
        decisions
            .into_iter()
            .next()
            .map(|decision| (decision, receipt))
            .ok_or_else(|| StoreError::msg("the store answered nothing"))
    });
    let (decision, receipt) = match limiter.verdict(result) {
        Verdict::Decided(decided) => decided,
        Verdict::Unlimited => {
            super::observe::count(limit.scope(), Outcome::StoreError);
            return Ok(());
        }
        Verdict::Unavailable => {
            super::observe::count(limit.scope(), Outcome::StoreError);
            if !enforced {
                return Ok(());
            }
            let response = limiter.failure(None, Failure::StoreUnavailable);
            return Err(Rejected::new(response));
        }
    };
    // Admitted ahead of its tokens (a bucket's `delay`): it waits its turn, as a handler's
    // limit does — or, the queue full, is refused, its place given back: a rejection of
    // this limit for the wait it would have had, counted, traced and in the fields as one.
    let decision = match decision.delayed() {
        Some(delay) if !enforced => {
            Limiter::would_have_waited(limit.scope(), "checked", delay);
            decision
        }
        Some(delay) => {
            let place = vec![(Arc::new(limit.clone()), key.clone(), 1)];
            match limiter.wait_turn(delay, place, receipt.clone()).await {
                true => super::delay::after_the_wait(decision, limit.policy()),
                false => crate::Decision::reject(limit.policy().max().get(), delay),
            }
        }
        None => decision,
    };
    let refund = (failures_only && decision.allowed())
        .then(|| Refund::one(Arc::new(limit.clone()), key.clone(), receipt));
    // A rejection of a limit on trial: let through, and said so.
    let let_through = !enforced && !decision.allowed();
    let name = super::fields::field_name(Cow::Owned(limit.scope().to_string()));
    let member = Member {
        name: name.clone(),
        policy: *limit.policy(),
    };
    {
        InlineChecks::made();
        let mut extensions = req.extensions_mut();
        if extensions.get::<InlineChecks>().is_none() {
            extensions.insert(InlineChecks::default());
        }
        if let Some(inline) = extensions.get_mut::<InlineChecks>() {
            inline.checks.push((member, decision));
            inline.refunds.extend(refund);
            if let_through {
                inline.let_through.push(name.clone());
            }
        }
    }
    if let_through {
        // The fallback memory's answer counts as the store's error, as for a handler's.
        let outcome = match decision.by_fallback() {
            true => Outcome::StoreError,
            false => Outcome::DryRun,
        };
        super::observe::count(limit.scope(), outcome);
        Limiter::would_have_rejected(limit.scope(), "checked", &decision);
        return Ok(());
    }
    super::observe::count(limit.scope(), Outcome::of(&decision));
    if decision.allowed() {
        return Ok(());
    }
    limiter.rejection_event(limit.scope(), "checked", &key, Some(decision));
    Err(Rejected::new(
        limiter.rejection(None, None, &name, decision),
    ))
}
