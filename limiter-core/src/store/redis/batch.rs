//! Checks sent together: the checks that arrive while earlier ones are in Redis go out as one
//! script call, decided in order, each all or nothing, exactly as if sent one by one. On a
//! cluster, checks are batched per node, a call carrying the checks of every slot the node
//! serves (see `node_batches.rs`).
//!
//! Redis's cost per call — reading and parsing the command, starting the script, reading
//! `TIME`, writing the reply — is paid once per batch instead of once per check, and so is
//! the client's. An idle store sends a check at once; under load, one batch is in flight on
//! one server (a cluster: at most [`DRIVERS`] per node) and the checks that arrive meanwhile
//! form the next one. After a call of several checks, the next waits for as many to gather,
//! at most as long as that call took (see [`RedisStore::gather`]): a busy client's checks
//! went 12 to a call without it, 28 with it. On one server a batch is one pipeline —
//! new clients' first checks as plain writes, the script for the others — and a second call
//! for a first check whose key existed after all and for the checks held back behind a first
//! check of their keys (see `fresh.rs`), within one timeout; the next batch waits until it is
//! decided, so that checks of one key reach Redis in the order they came.
//!
//! Load is not an outage. The timeout judges Redis — each call's answer — never the time a
//! check waits for its turn; at most [`MOST_WAITING`] checks wait, and a check that finds
//! no room waits for some (backpressure) rather than failing. A call that fails on a dropped
//! connection is sent once more at once (the connection reconnects); a call that times out
//! or fails again fails every check then waiting in the same queue (node) — one Redis answers
//! with an error, only its own — so that a stalled Redis
//! costs each request at most about one timeout and a half (see `deadline.rs`: a late call
//! fails once a probe of Redis on a connection of its own goes unanswered too).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};

use super::fresh::Decided;
use super::{RedisStore, StoreError};

/// Calls in flight at once per node of a cluster: one is being answered while the next
/// fills. (On one server, one batch: see the module's documentation.)
const DRIVERS: usize = 2;
/// Checks per call at most, so that one call never holds Redis long.
const MOST: usize = 128;
/// The longest a driver waits for its last call's callers to come back (see
/// [`RedisStore::gather`]).
const MOST_GATHERING: std::time::Duration = std::time::Duration::from_millis(1);
/// Checks waiting for a call at most, over all queues: 32 calls' worth.
pub(super) const MOST_WAITING: usize = 32 * MOST;

/// Numbers the failed calls, so that the checks one failure failed count as one.
static INCIDENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// One check's part of a script call: its keys (on one node) and arguments.
pub(super) struct CheckArgs {
    /// Each limit's key, and after it its block's for a limit with a penalty.
    pub(super) names: Vec<String>,
    /// The caller's reading (ms), or none for the server's clock.
    pub(super) now: Option<u64>,
    /// Count nothing, answer as if rejected by another limit ([`Peek::Read`]: a limit
    /// that rejects still starts its penalty's block; [`Peek::Status`]: nothing changes).
    pub(super) peek: Peek,
    /// Per limit: algorithm code, window_ms, max, interval_ns, capacity_ns, the penalty's
    /// block_ms, after, within_ms, escalated block_ms (0s for none), the calendar's period
    /// and offset + 840 (0s for none), the bucket's delay in ns, then the cost.
    pub(super) limits: Vec<[u64; 13]>,
    /// The policy, when a new client's first check of it may go without the script (see
    /// `fresh.rs`).
    pub(super) first: Option<crate::Policy>,
    /// The hash slot of its keys (0 on one server).
    pub(super) slot: u16,
    /// Left by a batch for the next (see `fresh.rs`): it is never tried as a first check
    /// again, nor left a second time.
    pub(super) carried: bool,
}

/// A charge's numbers in [`CheckArgs::limits`].
pub(super) fn limit_numbers(charge: &super::Charge<'_>) -> [u64; 13] {
    let policy = charge.limit.policy();
    let [block, after, within, long] = policy.penalty().map_or([0; 4], |p| p.to_numbers());
    let (period, offset) = calendar_numbers(policy);
    [
        u64::from(super::scripts::code(policy)),
        policy.window_ms(),
        u64::from(policy.max().get()),
        policy.emission_interval_ns(),
        u64::from(policy.burst().get()) * policy.emission_interval_ns(),
        block,
        after,
        within,
        long,
        period,
        offset,
        policy.delay().map_or(0, |d| d.as_nanos() as u64),
        u64::from(charge.units()),
    ]
}

/// A calendar quota's period (1 day, 2 week, 3 month; 0: not a quota) and its offset from
/// UTC in minutes plus 840 (never negative), as the check script's header takes them.
fn calendar_numbers(policy: &crate::Policy) -> (u64, u64) {
    use crate::algorithm::calendar::Period;
    match policy.calendar() {
        Some(calendar) => {
            let period = match calendar.period() {
                Period::Day => 1,
                Period::Week => 2,
                Period::Month => 3,
            };
            let offset = i64::from(calendar.offset_minutes()) + 840;
            (period, offset.max(0) as u64)
        }
        None => (0, 0),
    }
}

/// Whether a check counts, or only reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Peek {
    /// It counts: the usual check.
    No,
    /// It reads, as the other nodes of a check another node rejected: a limit that rejects
    /// it itself starts its block, as it would alone.
    Read,
    /// It reads where the limits stand and changes nothing (a part given back).
    Status,
}

/// A check's answer from the script: three numbers per limit, then the clock reading.
pub(super) type Answer = Result<Vec<i64>, StoreError>;

/// A check waiting for its call, with its place in the queue.
type Waiting = (CheckArgs, oneshot::Sender<Answer>, OwnedSemaphorePermit);

/// The checks waiting, per queue: one on one server; on a cluster, one per node (see
/// `node_batches.rs`), or per slot while the store does not know the slot's node.
pub(super) struct Batcher {
    queues: Mutex<HashMap<u32, Queue>>,
    /// Places in the queues.
    room: Arc<Semaphore>,
}

impl Default for Batcher {
    fn default() -> Batcher {
        Batcher {
            queues: Mutex::default(),
            room: Arc::new(Semaphore::new(MOST_WAITING)),
        }
    }
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Tasks sending batches now.
    drivers: usize,
    /// While a driver gathers (see [`RedisStore::gather`]): the checks it waits for.
    wanted: usize,
    /// Told when `wanted` checks wait.
    gathered: Arc<Notify>,
}

impl RedisStore {
    /// Sends `check` with whatever else is waiting for its node (on a cluster, its slot's
    /// node), and returns its answer. Works from any thread: the calls run on the store's
    /// own runtime.
    pub(super) async fn batched(&self, check: CheckArgs) -> Answer {
        // Waiting for room is load, not a failure: it is never timed.
        let Ok(place) = Arc::clone(&self.inner.batcher.room).acquire_owned().await else {
            return Err(StoreError::msg("the Redis store is shutting down"));
        };
        let (answer, answered) = oneshot::channel();
        let queue_id = self.queue_of(check.slot);
        let (start_driver, gathered) = {
            let mut queues = self.inner.batcher.queues.lock();
            let queue = queues.entry(queue_id).or_default();
            queue.waiting.push((check, answer, place));
            let gathered = (queue.wanted != 0 && queue.waiting.len() >= queue.wanted).then(|| {
                queue.wanted = 0;
                Arc::clone(&queue.gathered)
            });
            let start = queue.drivers < DRIVERS;
            queue.drivers += usize::from(start);
            (start, gathered)
        };
        if let Some(gathered) = gathered {
            gathered.notify_one();
        }
        if start_driver {
            self.inner.runtime.spawn(self.clone().drive(queue_id));
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::msg(
                "the Redis call carrying this check was dropped",
            ))
        })
    }

    /// Sends the batches of queue `queue_id` until none is waiting.
    async fn drive(self, queue_id: u32) {
        let mut driver = Driver {
            store: Arc::clone(&self.inner),
            queue_id,
            running: true,
        };
        // The checks of this moment (other requests being served now) join this call.
        tokio::task::yield_now().await;
        // The last call's checks and how long it took.
        let mut last: (usize, std::time::Duration) = (0, std::time::Duration::ZERO);
        loop {
            // On one server, one batch at a time (see `fresh.rs`): a new client's first check
            // whose key turns out to exist, and the checks held back behind a first check,
            // are decided by a second call, which must reach Redis before any later batch's
            // checks of those keys. What arrives meanwhile forms the next batch.
            let _turn = match self.inner.connection.is_cluster() {
                false => Some(self.inner.turn.lock().await),
                true => None,
            };
            self.gather(queue_id, last).await;
            let Some(batch) = self.next_batch(queue_id, &mut driver) else {
                return;
            };
            if batch.is_empty() {
                continue;
            }
            let mut checks = Vec::with_capacity(batch.len());
            let mut answers = Vec::with_capacity(batch.len());
            let mut places = Vec::with_capacity(batch.len());
            for (check, answer, place) in batch {
                checks.push(check);
                answers.push(answer);
                places.push(place);
            }
            let mut decided: Vec<Option<Vec<i64>>> = vec![None; checks.len()];
            let sent = std::time::Instant::now();
            let result = self.call_within_timeout(&checks, &mut decided).await;
            last = (checks.len(), sent.elapsed());
            match result {
                Ok(Decided::All) => {
                    for (answer, reply) in answers.into_iter().zip(decided) {
                        let _ = answer.send(reply.ok_or_else(|| {
                            StoreError::msg("the Redis call answered no decision for this check")
                        }));
                    }
                }
                Ok(Decided::Carried) => {
                    // What is left goes first in the next batch, before anything that came
                    // since: its checks still reach Redis in the order they came.
                    let mut carried = Vec::new();
                    let batch = checks.into_iter().zip(answers).zip(places).zip(decided);
                    for (((check, answer), place), reply) in batch {
                        match reply {
                            Some(reply) => {
                                let _ = answer.send(Ok(reply));
                            }
                            None => carried.push((
                                CheckArgs {
                                    carried: true,
                                    first: None,
                                    ..check
                                },
                                answer,
                                place,
                            )),
                        }
                    }
                    let mut queues = self.inner.batcher.queues.lock();
                    let queue = queues.entry(queue_id).or_default();
                    queue.waiting.splice(0..0, carried);
                }
                Err(error) => {
                    let message = error.to_string();
                    // Redis's own refusal: it is up (see `StoreError::was_answered`).
                    let answered = error.was_answered();
                    // One failure, however many checks it fails: the limiter counts it once.
                    let incident = INCIDENTS.fetch_add(1, Ordering::Relaxed);
                    let failed = || {
                        let error = StoreError::msg(message.clone()).of_incident(incident);
                        match answered {
                            true => error.of_refusal(),
                            false => error,
                        }
                    };
                    // Those Redis decided before the failure (new clients' first checks)
                    // keep their answers: they were counted.
                    for (answer, reply) in answers.into_iter().zip(decided) {
                        let _ = answer.send(reply.ok_or_else(failed));
                    }
                    // Redis answered (refused a write for want of memory, say): it is there,
                    // and what waits goes in the next call. (Failed with this one, checks
                    // that came after its answer got a failure no call of theirs had: a
                    // flood's rejections, on a full Redis, behind a new client's write.)
                    if answered {
                        continue;
                    }
                    // Redis did not answer: what waits behind this call would wait as long
                    // for as little. Each gets the failure now, and the fault policy.
                    let waiting: Vec<Waiting> = {
                        let mut queues = self.inner.batcher.queues.lock();
                        queues
                            .get_mut(&queue_id)
                            .map(|queue| std::mem::take(&mut queue.waiting))
                            .unwrap_or_default()
                    };
                    for (_, answer, _) in waiting {
                        let _ = answer.send(Err(failed()));
                    }
                }
            }
        }
    }

    /// Waits, at most as long as the last call took, for as many checks as it carried, when
    /// fewer wait. Its callers are answered on their own threads: sent at once, the next call
    /// would carry the few checks that came during the last one, and the callers' next
    /// checks, back a moment later, would wait a whole call for their turn. At most one call's
    /// round trip is spent here, which those checks would have spent behind the small call.
    async fn gather(&self, queue_id: u32, (carried, took): (usize, std::time::Duration)) {
        if carried < 2 {
            return;
        }
        let gathered = {
            let mut queues = self.inner.batcher.queues.lock();
            let Some(queue) = queues.get_mut(&queue_id) else {
                return;
            };
            if queue.waiting.len() >= carried {
                return;
            }
            queue.wanted = carried;
            Arc::clone(&queue.gathered)
        };
        let _ = tokio::time::timeout(took.min(MOST_GATHERING), gathered.notified()).await;
        if let Some(queue) = self.inner.batcher.queues.lock().get_mut(&queue_id) {
            queue.wanted = 0;
        }
    }

    /// The next batch of queue `queue_id`, or `None` when none is waiting (the driver then
    /// stops).
    fn next_batch(&self, queue_id: u32, driver: &mut Driver) -> Option<Vec<Waiting>> {
        let mut queues = self.inner.batcher.queues.lock();
        let Some(queue) = queues.get_mut(&queue_id) else {
            driver.running = false;
            return None;
        };
        if queue.waiting.is_empty() {
            // Under the lock: a check queued after this sees one driver fewer.
            queue.drivers -= 1;
            if queue.drivers == 0 {
                match self.lasts(queue_id) {
                    // Kept with its room for the checks to come: made anew, a queue and its
                    // list grew again, allocation by allocation, each time it emptied.
                    true => {
                        queue.wanted = 0;
                        queue.waiting.shrink_to(MOST);
                    }
                    false => drop(queues.remove(&queue_id)),
                }
            }
            driver.running = false;
            return None;
        }
        let n = queue.waiting.len().min(MOST);
        // A check whose caller stopped waiting (its request was dropped) would count a
        // request nobody is waiting for.
        Some(
            queue
                .waiting
                .drain(..n)
                .filter(|(_, answer, _)| !answer.is_closed())
                .collect(),
        )
    }

    /// Decides `checks` within the store's timeout, filling `decided` as Redis answers; sent
    /// once more at once, within the same timeout, if the connection dropped under it (the
    /// connection reconnects): a blip is not an outage. What was decided before a failure
    /// stays decided and is not sent again. What a first round trip left may be left to the
    /// next batch ([`Decided::Carried`]).
    async fn call_within_timeout(
        &self,
        checks: &[CheckArgs],
        decided: &mut [Option<Vec<i64>>],
    ) -> Result<Decided, StoreError> {
        let call = async {
            let mut retried = false;
            loop {
                match self.decide(checks, decided, true).await {
                    Ok(done) => return Ok(done),
                    Err(error) if !retried && error.is_transient() => retried = true,
                    Err(error) => return Err(error.into_store_error()),
                }
            }
        };
        self.within(call).await?
    }
}

/// A driver that stops early (its runtime shut down) gives its place back, so that the next
/// check starts another; the checks it carried get an error, answered by the fault policy.
struct Driver {
    store: Arc<super::Inner>,
    queue_id: u32,
    running: bool,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if !self.running {
            return;
        }
        let orphans = {
            let mut queues = self.store.batcher.queues.lock();
            let Some(queue) = queues.get_mut(&self.queue_id) else {
                return;
            };
            queue.drivers -= 1;
            if queue.drivers > 0 {
                return;
            }
            // The last driver of the queue: nothing would send what still waits.
            queues
                .remove(&self.queue_id)
                .map(|q| q.waiting)
                .unwrap_or_default()
        };
        for (_, answer, _) in orphans {
            let _ = answer.send(Err(StoreError::msg(
                "the Redis call carrying this check was dropped",
            )));
        }
    }
}
