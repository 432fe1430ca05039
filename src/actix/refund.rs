//! What a success takes back (`count = "failures"`, `check_failures`): the charges a
//! request was counted, kept past its decision, and the receipts of their checks.

use std::sync::Arc;

use super::keys::ClientKey;
use crate::{Charge, Limit, Limiter, Receipt};

/// What to take back once the response is known, check by check: the charges (which
/// outlive the decision) and the receipt of what their check counted.
pub(crate) struct Refund {
    checks: Vec<(Vec<Owned>, Receipt)>,
}

/// A charge that outlives its request's decision: the limit, the key and the cost.
pub(crate) type Owned = (Arc<Limit>, ClientKey, u32);

impl Refund {
    /// The charges of each check, and what the check counted.
    pub(crate) fn new(checks: Vec<(Vec<Owned>, Receipt)>) -> Refund {
        Refund { checks }
    }

    /// One unit of `limit` for `key`, counted as `receipt` says.
    pub(crate) fn one(limit: Arc<Limit>, key: ClientKey, receipt: Receipt) -> Refund {
        Refund {
            checks: vec![(vec![(limit, key, 1)], receipt)],
        }
    }

    /// Takes the charges back (the response was a success), before the response leaves:
    /// the client's next request finds them back.
    pub(crate) async fn take_back(self, limiter: &Limiter) {
        for (charges, receipt) in &self.checks {
            let charges: Vec<Charge<'_>> = charges
                .iter()
                .map(|(limit, key, cost)| Charge::new(limit, key.as_bytes()).cost(*cost))
                .collect();
            let _ = limiter.refund(&charges, receipt).await;
        }
    }
}
