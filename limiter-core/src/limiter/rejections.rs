//! Rejections a networked store decided, remembered per instance until they end, so that a
//! flood from one client is answered here instead of in Redis.
//!
//! A store's rejection of one unit says "not before T" for that (limit, key): admissions
//! only consume, so nothing any instance does makes the key admissible earlier, and until T
//! every request of it gets the same answer Redis would give, with `Retry-After` counted
//! down from T. What could make a key admissible earlier is kept out: only single checks of
//! one unit are cached (a cheaper request is not answered by a costlier one's rejection),
//! no rejection is cached for a scope whose budgets may be given back — one that a
//! declaration counts with `count = "failures"` (the same on every instance: declarations
//! are the program's), or that this instance has refunded — a policy changed at run time is
//! another limit (another id), and a [`reset`](crate::Limiter::reset) drops this
//! instance's entries (another instance's run out at their T — at most the wait they
//! announced). A penalty's block, which may last a day, is remembered for a second at a
//! time: a reset made on another instance lifts it here within a second.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::Duration;

use parking_lot::Mutex;

use crate::{Decision, Limit};

/// Shards, so that workers rarely wait for each other.
const SHARDS: usize = 16;

/// (limit id, key) → the instant (ns of the limiter's clock) until which the key is
/// rejected, and the instant until which that may be answered here.
type Shard = Mutex<HashMap<(u64, Box<[u8]>), (u64, u64)>>;

/// How long a block is answered here before the store is asked again (ns).
const BLOCK_RECHECK_NS: u64 = 1_000_000_000;

/// Remembered rejections.
pub(crate) struct Rejections {
    shards: Box<[Shard]>,
    /// Scope → whether its rejections may be remembered (none of its budgets is ever given
    /// back), as the declarations said at the registry's `generation`, and the scopes this
    /// instance has refunded.
    scopes: Mutex<Scopes>,
    /// Entries per shard at most; a full shard drops its ended entries, then stops taking
    /// new ones until some end.
    per_shard: usize,
    hasher: std::collections::hash_map::RandomState,
}

#[derive(Default)]
struct Scopes {
    generation: u64,
    cacheable: HashMap<Box<str>, bool>,
    refunded: Vec<Box<str>>,
}

impl Rejections {
    /// Room for `capacity` rejections (0: none are remembered).
    pub(crate) fn new(capacity: usize) -> Rejections {
        Rejections {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            scopes: Mutex::new(Scopes::default()),
            per_shard: capacity.div_ceil(SHARDS),
            hasher: Default::default(),
        }
    }

    fn shard(&self, id: u64, key: &[u8]) -> &Shard {
        let mut hasher = self.hasher.build_hasher();
        id.hash(&mut hasher);
        key.hash(&mut hasher);
        &self.shards[hasher.finish() as usize % SHARDS]
    }

    /// The store's answer for `key` under `limit` at `now`, if a remembered rejection
    /// still holds: the same rejection, counted down.
    #[inline]
    pub(crate) fn answer(&self, limit: &Limit, key: &[u8], now: Duration) -> Option<Decision> {
        if self.per_shard == 0 {
            return None;
        }
        let now = at(now);
        let id = limit.id();
        let mut shard = self.shard(id, key).lock();
        let (until, answered_until) = *shard.get(&(id, key) as &dyn Lookup)?;
        if answered_until > now {
            let rejection = Decision::reject(
                limit.policy().max().get(),
                Duration::from_nanos(until - now),
            );
            return Some(match answered_until < until {
                true => rejection.marked_blocked(),
                false => rejection,
            });
        }
        shard.remove(&(id, key) as &dyn Lookup);
        None
    }

    /// Remembers the store's `decision` for `key` under `limit`, checked at `now`, if it
    /// is a rejection of a single unit.
    pub(crate) fn remember(&self, limit: &Limit, key: &[u8], now: Duration, decision: &Decision) {
        let Some(wait) = decision.retry_after() else {
            return;
        };
        if self.per_shard == 0 || wait.is_zero() || !self.may_remember(limit) {
            return;
        }
        let now = at(now);
        let until = now.saturating_add(wait.as_nanos().min(u128::from(u64::MAX)) as u64);
        let answered_until = match decision.blocked() {
            true => until.min(now.saturating_add(BLOCK_RECHECK_NS)),
            false => until,
        };
        let id = limit.id();
        let mut shard = self.shard(id, key).lock();
        if shard.len() >= self.per_shard {
            shard.retain(|_, &mut (_, answered_until)| answered_until > now);
            if shard.len() >= self.per_shard {
                return;
            }
        }
        shard.insert((id, key.into()), (until, answered_until));
    }

    /// Whether rejections of `limit` may be remembered: no budget of its scope is ever given
    /// back.
    fn may_remember(&self, limit: &Limit) -> bool {
        let generation = crate::registry::generation();
        let mut scopes = self.scopes.lock();
        if scopes.generation != generation {
            scopes.cacheable.clear();
            scopes.generation = generation;
        }
        if scopes.refunded.iter().any(|s| **s == *limit.scope()) {
            return false;
        }
        if let Some(&cacheable) = scopes.cacheable.get(limit.scope()) {
            return cacheable;
        }
        let cacheable = !crate::registry::refunds_in(limit.scope());
        scopes.cacheable.insert(limit.scope().into(), cacheable);
        cacheable
    }

    /// A budget of `limit`'s scope (this one, `key`'s) is being given back: its rejections
    /// are no longer the store's answer. From now on none of the scope is remembered here,
    /// and what was is forgotten.
    pub(crate) fn refunded(&self, limit: &Limit, key: &[u8]) {
        {
            let mut scopes = self.scopes.lock();
            if !scopes.refunded.iter().any(|s| **s == *limit.scope()) {
                scopes.refunded.push(limit.scope().into());
                drop(scopes);
                // Once per scope: the entries do not say their scope.
                for shard in self.shards.iter() {
                    shard.lock().clear();
                }
            }
        }
        self.forget(limit, key);
    }

    /// Forgets every remembered rejection (a reset made elsewhere, of clients unknown here).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn clear(&self) {
        for shard in self.shards.iter() {
            shard.lock().clear();
        }
    }

    /// Forgets what is remembered of `key` under `limit` (a reset).
    pub(crate) fn forget(&self, limit: &Limit, key: &[u8]) {
        let id = limit.id();
        self.shard(id, key).lock().remove(&(id, key) as &dyn Lookup);
    }
}

/// The reading as the stores count it: whole milliseconds, in nanoseconds, so that a
/// rejection counts down exactly as the store would.
fn at(now: Duration) -> u64 {
    (now.as_millis().min(u128::from(u64::MAX / 1_000_000)) as u64) * 1_000_000
}

/// Looks an entry up by borrowed parts, without building an owned key.
trait Lookup {
    fn parts(&self) -> (u64, &[u8]);
}

impl Lookup for (u64, Box<[u8]>) {
    fn parts(&self) -> (u64, &[u8]) {
        (self.0, &self.1)
    }
}

impl Lookup for (u64, &[u8]) {
    fn parts(&self) -> (u64, &[u8]) {
        (self.0, self.1)
    }
}

impl<'a> std::borrow::Borrow<dyn Lookup + 'a> for (u64, Box<[u8]>) {
    fn borrow(&self) -> &(dyn Lookup + 'a) {
        self
    }
}

impl Hash for dyn Lookup + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn Lookup + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn Lookup + '_ {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    fn limit() -> Limit {
        Limit::new(
            "rejections-unit",
            Policy::new(5, Duration::from_secs(60)).unwrap(),
        )
    }

    fn rejected(wait: Duration) -> Decision {
        Decision::reject(5, wait)
    }

    const T: Duration = Duration::from_secs(1_000);

    /// A rejection is the answer for its key until it ends, `Retry-After` counted down
    /// exactly; then the store is asked again.
    #[test]
    fn a_rejection_is_answered_until_it_ends_counted_down() {
        let rejections = Rejections::new(64);
        let limit = limit();
        rejections.remember(&limit, b"k", T, &rejected(Duration::from_secs(10)));
        let answer = rejections.answer(&limit, b"k", T + Duration::from_millis(2_500));
        assert_eq!(
            answer.and_then(|d| d.retry_after()),
            Some(Duration::from_millis(7_500))
        );
        assert!(rejections.answer(&limit, b"other", T).is_none());
        assert!(rejections
            .answer(&limit, b"k", T + Duration::from_secs(10))
            .is_none());
    }

    /// A block (a penalty, perhaps a day) is answered here a second at a time: a reset
    /// made elsewhere lifts it within a second.
    #[test]
    fn a_block_is_answered_a_second_at_a_time() {
        let rejections = Rejections::new(64);
        let limit = limit();
        let block = rejected(Duration::from_secs(86_400)).marked_blocked();
        rejections.remember(&limit, b"k", T, &block);
        let answer = rejections.answer(&limit, b"k", T + Duration::from_millis(999));
        assert!(answer.is_some_and(|d| d.blocked()), "{answer:?}");
        assert!(rejections
            .answer(&limit, b"k", T + Duration::from_secs(1))
            .is_none());
    }

    /// Capacity 0 remembers nothing: every request asks the store.
    #[test]
    fn a_capacity_of_zero_remembers_nothing() {
        let rejections = Rejections::new(0);
        let limit = limit();
        rejections.remember(&limit, b"k", T, &rejected(Duration::from_secs(10)));
        assert!(rejections.answer(&limit, b"k", T).is_none());
    }

    /// A flood of rejected clients fills the cache to its capacity and no further (its
    /// memory is bounded whatever keys clients choose); a full shard takes new entries
    /// again once old ones end.
    #[test]
    fn a_flood_of_rejected_keys_stays_within_the_capacity() {
        let rejections = Rejections::new(64);
        let limit = limit();
        let wait = Duration::from_secs(60);
        for client in 0..10_000u32 {
            rejections.remember(&limit, &client.to_be_bytes(), T, &rejected(wait));
        }
        let held = (0..10_000u32)
            .filter(|client| {
                rejections
                    .answer(&limit, &client.to_be_bytes(), T)
                    .is_some()
            })
            .count();
        assert_eq!(held, 64);
        let later = T + wait;
        for client in 10_000..20_000u32 {
            rejections.remember(&limit, &client.to_be_bytes(), later, &rejected(wait));
        }
        let held = (10_000..20_000u32)
            .filter(|client| {
                rejections
                    .answer(&limit, &client.to_be_bytes(), later)
                    .is_some()
            })
            .count();
        assert_eq!(held, 64);
    }
}
