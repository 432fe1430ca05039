//! Which responses keep a request counted (`count = "failures"`, `count = fn`): a limit's
//! option, which the pipeline's last stage applies to its response.

use crate::Front;

/// Which responses keep a request counted: `count = "failures"`, or `count = fn`.
#[derive(Debug)]
pub enum Counts<F: Front> {
    /// Responses with status 400 or above.
    Failures,
    /// Those the function says.
    When(fn(F::Status) -> bool),
    /// Every response: only a CORS layer's own answer to a preflight, or a place in the
    /// line given back, gives it back (`Refund::give_back_all`).
    Always,
}

impl<F: Front> Clone for Counts<F> {
    fn clone(&self) -> Counts<F> {
        *self
    }
}

impl<F: Front> Copy for Counts<F> {}

impl<F: Front> Counts<F> {
    /// Whether a response of `status` keeps the request counted.
    pub(crate) fn keep(self, status: F::Status) -> bool {
        match self {
            Counts::Failures => F::status_code(status) >= 400,
            Counts::When(counts) => counts(status),
            Counts::Always => true,
        }
    }
}
