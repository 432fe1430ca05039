//! What a check counted, so that a refund gives back exactly that: [`Receipt`], and the
//! answer of a check with its receipt, [`Checked`].

use std::ops::Deref;
use std::time::Duration;

use crate::Decision;

/// What one check counted, limit by limit, for [`Store::refund`](super::Store::refund) to
/// give back exactly that — on the store that counted it, and only what is still counted.
///
/// A store writes one *mark* per charge it counted: an instant of the clock it counted by,
/// whose meaning its algorithms define. The in-memory and Redis stores mark the instant a
/// sliding log recorded, the start of the fixed window that counted, an instant in the
/// counter's window, and for the token bucket the instant its units come back anyway (a
/// refund later than that gives nothing back: the tokens already returned by themselves).
/// A charge without a mark counted nothing (the check was rejected).
///
/// ```
/// use std::time::Duration;
/// use limiter::{Charge, Limit, MemoryStore, Policy};
/// let store = MemoryStore::new();
/// let login = Limit::new("login", Policy::new(1, Duration::from_secs(60))?);
/// let attempt = [Charge::new(&login, b"ann")];
/// let checked = store.check_all_at(&attempt, Duration::from_secs(5));
/// assert!(checked[0].allowed());
/// // It succeeded, and only failures count: give back exactly what it took.
/// store.refund_at(&attempt, checked.receipt(), Duration::from_secs(6));
/// assert!(store.check_all_at(&attempt, Duration::from_secs(7))[0].allowed());
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Receipt {
    marks: Vec<Option<Duration>>,
    /// Counted by the limiter's fallback memory while its store was away, not by the store.
    fallback: bool,
}

impl Receipt {
    /// A receipt with one mark per charge (`None` where nothing was counted).
    pub fn new(marks: Vec<Option<Duration>>) -> Receipt {
        Receipt {
            marks,
            fallback: false,
        }
    }

    /// A receipt of `charges` charges none of which counted anything.
    pub fn nothing(charges: usize) -> Receipt {
        Receipt::new(vec![None; charges])
    }

    /// The marks, one per charge of the check.
    pub fn marks(&self) -> &[Option<Duration>] {
        &self.marks
    }

    /// The receipt of some of the charges only (by their places in the check), as a refund
    /// of those gives them back.
    pub fn subset(&self, places: impl IntoIterator<Item = usize>) -> Receipt {
        Receipt {
            marks: places
                .into_iter()
                .map(|i| self.marks.get(i).copied().flatten())
                .collect(),
            fallback: self.fallback,
        }
    }

    /// Whether the check counted anything at all.
    pub fn counted_anything(&self) -> bool {
        self.marks.iter().any(Option::is_some)
    }

    /// The same receipt, as counted by the limiter's fallback memory.
    pub(crate) fn counted_by_fallback(mut self) -> Receipt {
        self.fallback = true;
        self
    }

    /// Whether the limiter's fallback memory counted it.
    pub(crate) fn is_fallback(&self) -> bool {
        self.fallback
    }
}

/// A check's decisions (one per charge, in order) and its [`Receipt`]. It reads as the
/// slice of decisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    decisions: Vec<Decision>,
    receipt: Receipt,
}

impl Checked {
    /// The decisions of a check and what it counted.
    pub fn new(decisions: Vec<Decision>, receipt: Receipt) -> Checked {
        Checked { decisions, receipt }
    }

    /// What the check counted, for a refund.
    pub fn receipt(&self) -> &Receipt {
        &self.receipt
    }

    /// The decisions, in the order of the charges.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    /// The decisions, owned.
    pub fn into_decisions(self) -> Vec<Decision> {
        self.decisions
    }

    /// Both parts.
    pub fn into_parts(self) -> (Vec<Decision>, Receipt) {
        (self.decisions, self.receipt)
    }
}

impl Deref for Checked {
    type Target = [Decision];

    fn deref(&self) -> &[Decision] {
        &self.decisions
    }
}
