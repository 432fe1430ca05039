//! Penalties: a client that a limit rejects is refused outright for a while (a block), and
//! for longer when it keeps coming back (escalation).

use std::time::Duration;

use crate::PolicyError;

/// How a limit punishes the clients it rejects: a block of a fixed length, escalated for
/// repeat offenders. Set on a [`Policy`](crate::Policy) with
/// [`with_penalty`](crate::Policy::with_penalty); `#[rate_limit(..., block = "15m",
/// penalty = "3 in 1h -> 1d")]` declares one.
///
/// The rules, which every store follows (`now` a clock reading in milliseconds):
///
/// - While a client's block under a limit lasts (`now < until`), every request of it is
///   refused without being counted, `Retry-After` counting the block down.
/// - When the limit itself rejects a request of a client not blocked, a block starts. It
///   lasts the penalty's block, or the escalated one when at least `after` blocks started
///   within `within` before it — and never less than the limit's own wait, so that a client
///   that waits out its block is admitted, not blocked again on its first request.
/// - Only the limit that rejects starts its block: a request that a stacked limit rejects
///   starts nothing on the others. A reset ([`Limiter::reset`](crate::Limiter::reset))
///   lifts the block and forgets the past blocks.
///
/// A reading earlier than a block's start (it reached the store late) is within the block:
/// an old reading never lifts one.
///
/// ```
/// use std::time::Duration;
/// use limiter::Penalty;
/// let minutes = |m: u64| Duration::from_secs(60 * m);
/// let penalty = Penalty::block(minutes(15))?.escalating(3, minutes(60), minutes(1440))?;
/// assert_eq!(penalty.to_string(), "block 15m, 3 in 1h -> 1d");
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Penalty {
    block_ms: u64,
    escalation: Option<Escalation>,
}

/// Longer blocks for repeat offenders: once `after` blocks started within `within`, the next
/// one lasts `block`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Escalation {
    after: u8,
    within_ms: u64,
    block_ms: u64,
}

impl Penalty {
    /// The longest block, and the longest escalation window: 30 days.
    pub const MAX_BLOCK: Duration = Duration::from_secs(30 * 86_400);

    /// The most past blocks an escalation counts: 16 (each is kept while it counts).
    pub const MAX_STRIKES: u32 = 16;

    /// Refuses a rejected client for `block` (a whole number of milliseconds, at least 1 ms,
    /// at most [`MAX_BLOCK`](Self::MAX_BLOCK)).
    pub const fn block(block: Duration) -> Result<Penalty, PolicyError> {
        match block_ms(block) {
            Ok(block_ms) => Ok(Penalty {
                block_ms,
                escalation: None,
            }),
            Err(error) => Err(error),
        }
    }

    /// The same penalty, whose block lasts `block` instead once `after` blocks (1 to
    /// [`MAX_STRIKES`](Self::MAX_STRIKES)) started within `within`.
    pub const fn escalating(
        self,
        after: u32,
        within: Duration,
        block: Duration,
    ) -> Result<Penalty, PolicyError> {
        if after == 0 || after > Penalty::MAX_STRIKES {
            return Err(PolicyError::StrikesOutOfRange(after));
        }
        let within_ms = match block_ms(within) {
            Ok(ms) => ms,
            Err(error) => return Err(error),
        };
        let long_ms = match block_ms(block) {
            Ok(ms) => ms,
            Err(error) => return Err(error),
        };
        Ok(Penalty {
            escalation: Some(Escalation {
                after: after as u8,
                within_ms,
                block_ms: long_ms,
            }),
            ..self
        })
    }

    /// How long a first block lasts.
    pub const fn block_duration(&self) -> Duration {
        Duration::from_millis(self.block_ms)
    }

    /// The escalation, if repeat offenders get longer blocks.
    pub const fn escalation(&self) -> Option<Escalation> {
        self.escalation
    }

    /// The numbers a store's script takes: the block, the strikes that escalate, their
    /// window and the escalated block, in ms (0s without an escalation).
    pub(crate) fn to_numbers(self) -> [u64; 4] {
        match self.escalation {
            Some(e) => [self.block_ms, u64::from(e.after), e.within_ms, e.block_ms],
            None => [self.block_ms, 0, 0, 0],
        }
    }

    /// The penalty as the attribute writes it (`block_ms`, and 0s without an escalation):
    /// not a public API.
    #[doc(hidden)]
    pub const fn __from_attribute(
        block_ms: u64,
        after: u32,
        within_ms: u64,
        long_ms: u64,
    ) -> Result<Penalty, PolicyError> {
        let penalty = match Penalty::block(Duration::from_millis(block_ms)) {
            Ok(penalty) => penalty,
            Err(error) => return Err(error),
        };
        if after == 0 {
            return Ok(penalty);
        }
        penalty.escalating(
            after,
            Duration::from_millis(within_ms),
            Duration::from_millis(long_ms),
        )
    }

    /// How long a block starting at `now_ms` lasts, given the starts of the blocks before it
    /// (`strikes`, any order), at least `wait_ms` (the limit's own wait).
    fn length(&self, now_ms: u64, strikes: &[u64], wait_ms: u64) -> u64 {
        let length = match self.escalation {
            Some(e) if recent(strikes, now_ms, e.within_ms) >= usize::from(e.after) => e.block_ms,
            _ => self.block_ms,
        };
        length.max(wait_ms)
    }

    /// How many past blocks a client's record must keep.
    fn strikes_kept(&self) -> usize {
        self.escalation.map_or(0, |e| usize::from(e.after))
    }

    /// How long past blocks matter, in ms (0 without an escalation).
    fn within_ms(&self) -> u64 {
        self.escalation.map_or(0, |e| e.within_ms)
    }
}

impl Escalation {
    /// How many blocks within [`within`](Self::within) make the next one longer.
    pub const fn after(&self) -> u32 {
        self.after as u32
    }

    /// The window the past blocks are counted in.
    pub const fn within(&self) -> Duration {
        Duration::from_millis(self.within_ms)
    }

    /// How long an escalated block lasts.
    pub const fn block(&self) -> Duration {
        Duration::from_millis(self.block_ms)
    }
}

/// `block 15m`, then `, 3 in 1h -> 1d` with an escalation: the form a policy's text uses.
impl std::fmt::Display for Penalty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "block {}", crate::policy::Span(self.block_ms))?;
        if let Some(e) = self.escalation {
            write!(
                f,
                ", {} in {} -> {}",
                e.after,
                crate::policy::Span(e.within_ms),
                crate::policy::Span(e.block_ms)
            )?;
        }
        Ok(())
    }
}

const fn block_ms(block: Duration) -> Result<u64, PolicyError> {
    let nanos = block.as_nanos();
    if nanos < 1_000_000 {
        return Err(PolicyError::BlockTooShort(block));
    }
    if nanos > Penalty::MAX_BLOCK.as_nanos() {
        return Err(PolicyError::BlockTooLong(block));
    }
    if !nanos.is_multiple_of(1_000_000) {
        return Err(PolicyError::WindowNotWholeMillis(block));
    }
    Ok((nanos / 1_000_000) as u64)
}

/// How many of `strikes` lie within `within_ms` before `now_ms` (a later one counts).
fn recent(strikes: &[u64], now_ms: u64, within_ms: u64) -> usize {
    strikes
        .iter()
        .filter(|&&at| now_ms.saturating_sub(at) < within_ms)
        .count()
}

/// One client's penalty record under one limit: the block in force (until `until_ms`) and
/// the starts of its latest blocks, as many as the escalation counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Block {
    until_ms: u64,
    strikes: Vec<u64>,
    /// When the record stops mattering: the block's end, or the last strike's leaving the
    /// escalation's window.
    expires_ms: u64,
}

impl Block {
    /// The milliseconds the block still lasts at `now_ms`, if it is in force.
    pub(crate) fn left(&self, now_ms: u64) -> Option<u64> {
        (now_ms < self.until_ms).then(|| self.until_ms - now_ms)
    }

    /// Starts a block at `now_ms`, lasting at least `wait_ms` (the limit's own wait): how
    /// long it lasts.
    pub(crate) fn start(&mut self, now_ms: u64, penalty: &Penalty, wait_ms: u64) -> u64 {
        let within = penalty.within_ms();
        self.strikes
            .retain(|&at| now_ms.saturating_sub(at) < within);
        let length = penalty.length(now_ms, &self.strikes, wait_ms);
        self.until_ms = self.until_ms.max(now_ms.saturating_add(length));
        self.expires_ms = self.expires_ms.max(self.until_ms);
        let kept = penalty.strikes_kept();
        if kept > 0 {
            if self.strikes.len() >= kept {
                self.strikes.remove(0);
            }
            self.strikes.push(now_ms);
            self.expires_ms = self.expires_ms.max(now_ms.saturating_add(within));
        }
        self.until_ms - now_ms
    }

    /// Whether the record no longer matters at `now_ms`: no block in force, no past block
    /// that an escalation still counts.
    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms
    }

    /// The record as a saved file holds it: the block's end, when the record stops
    /// mattering, and the past blocks' starts (ms).
    pub(crate) fn parts(&self) -> (u64, u64, &[u64]) {
        (self.until_ms, self.expires_ms, &self.strikes)
    }

    /// A record from [`parts`](Self::parts).
    pub(crate) fn from_parts(until_ms: u64, expires_ms: u64, strikes: Vec<u64>) -> Block {
        Block {
            until_ms,
            strikes,
            expires_ms,
        }
    }

    /// When the block in force ends (ms): what an eviction weighs.
    pub(crate) fn until_ms(&self) -> u64 {
        self.until_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn escalating() -> Penalty {
        Penalty::__from_attribute(15 * MIN, 3, 60 * MIN, 1440 * MIN).unwrap()
    }

    #[test]
    fn a_block_lasts_its_length_then_lifts() {
        let penalty = Penalty::block(Duration::from_secs(900)).unwrap();
        let mut block = Block::default();
        assert_eq!(block.left(0), None);
        assert_eq!(block.start(1_000, &penalty, 30_000), 15 * MIN);
        assert_eq!(block.left(1_000 + 15 * MIN - 1), Some(1));
        assert_eq!(block.left(1_000 + 15 * MIN), None);
        // A late reading is within the block.
        assert_eq!(block.left(0), Some(1_000 + 15 * MIN));
        assert!(block.is_expired(1_000 + 15 * MIN));
    }

    #[test]
    fn a_block_never_ends_before_the_limit_admits() {
        let penalty = Penalty::block(Duration::from_secs(1)).unwrap();
        let mut block = Block::default();
        assert_eq!(block.start(0, &penalty, 45_000), 45_000);
    }

    #[test]
    fn the_fourth_block_within_the_hour_lasts_a_day() {
        let penalty = escalating();
        let mut block = Block::default();
        let mut at = 0;
        for _ in 0..3 {
            assert_eq!(block.start(at, &penalty, 0), 15 * MIN);
            at += 15 * MIN;
        }
        // Three blocks started within the last hour (at 0, 15 and 30 minutes).
        assert_eq!(block.start(at, &penalty, 0), 1440 * MIN);
        assert_eq!(block.strikes.len(), 3);
        // A day later, the hour holds no block: back to the first length.
        assert_eq!(block.start(at + 1440 * MIN, &penalty, 0), 15 * MIN);
    }

    #[test]
    fn blocks_spread_beyond_the_window_do_not_escalate() {
        let penalty = escalating();
        let mut block = Block::default();
        for i in 0..10 {
            assert_eq!(block.start(i * 25 * MIN, &penalty, 0), 15 * MIN);
        }
        assert!(!block.is_expired(9 * 25 * MIN + 20 * MIN));
        assert!(block.is_expired(9 * 25 * MIN + 60 * MIN));
    }

    #[test]
    fn refuses_what_no_store_keeps() {
        assert_eq!(
            Penalty::block(Duration::ZERO),
            Err(PolicyError::BlockTooShort(Duration::ZERO))
        );
        assert!(matches!(
            Penalty::block(Duration::from_secs(31 * 86_400)),
            Err(PolicyError::BlockTooLong(_))
        ));
        let base = Penalty::block(Duration::from_secs(60)).unwrap();
        let hour = Duration::from_secs(3600);
        assert_eq!(
            base.escalating(0, hour, hour),
            Err(PolicyError::StrikesOutOfRange(0))
        );
        assert_eq!(
            base.escalating(17, hour, hour),
            Err(PolicyError::StrikesOutOfRange(17))
        );
    }
}
