//! Checks sent together: the checks that arrive while earlier ones are in Redis go out as one
//! script call, decided in order, each all or nothing, exactly as if sent one by one. On a
//! cluster a call's keys must share a hash slot, so checks are batched per slot (a busy
//! key — a `global` limit, a client spending its budget — is what fills a slot's batch).
//!
//! Redis's cost per call — reading and parsing the command, starting the script, reading
//! `TIME`, writing the reply — is paid once per batch instead of once per check, and so is
//! the client's. Nothing waits to fill a batch: an idle store sends a check at once; under
//! load, at most [`DRIVERS`] calls are in flight and the checks that arrive meanwhile form
//! the next one.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::{RedisStore, StoreError};

/// Calls in flight at once: one is being answered while the next fills.
const DRIVERS: usize = 2;
/// Checks per call at most, so that one call never holds Redis long.
const MOST: usize = 128;

/// One check's part of a script call: its keys (on one node) and arguments.
pub(super) struct CheckArgs {
    pub(super) names: Vec<String>,
    /// The caller's reading (ms), or none for the server's clock.
    pub(super) now: Option<u64>,
    /// Count nothing, answer as if rejected by another limit.
    pub(super) peek: bool,
    /// Per key: algorithm code, window_ms, max, interval_ns, capacity_ns, cost.
    pub(super) limits: Vec<[u64; 6]>,
}

/// A check's answer from the script: three numbers per key, then the clock reading.
pub(super) type Answer = Result<Vec<i64>, StoreError>;

type Waiting = (CheckArgs, oneshot::Sender<Answer>);

/// The checks waiting, per hash slot (always slot 0 on one server).
#[derive(Default)]
pub(super) struct Batcher {
    queues: Mutex<HashMap<u16, Queue>>,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Tasks sending batches now.
    drivers: usize,
}

impl RedisStore {
    /// Sends `check` (whose keys are all in `slot`) with whatever else is waiting for that
    /// slot, and returns its answer.
    pub(super) async fn batched(&self, slot: u16, check: CheckArgs) -> Answer {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(StoreError::msg(
                "the Redis store needs a Tokio runtime (actix provides one)",
            ));
        };
        let (answer, answered) = oneshot::channel();
        let start_driver = {
            let mut queues = self.inner.batcher.queues.lock();
            let queue = queues.entry(slot).or_default();
            queue.waiting.push((check, answer));
            let start = queue.drivers < DRIVERS;
            queue.drivers += usize::from(start);
            start
        };
        if start_driver {
            drop(runtime.spawn(self.clone().drive(slot)));
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::msg(
                "the Redis call carrying this check was dropped",
            ))
        })
    }

    /// Sends `slot`'s batches until none is waiting.
    async fn drive(self, slot: u16) {
        let mut driver = Driver {
            store: Arc::clone(&self.inner),
            slot,
            running: true,
        };
        // The checks of this moment (other requests being served now) join this call.
        tokio::task::yield_now().await;
        loop {
            let batch: Vec<Waiting> = {
                let mut queues = self.inner.batcher.queues.lock();
                let Some(queue) = queues.get_mut(&slot) else {
                    driver.running = false;
                    return;
                };
                if queue.waiting.is_empty() {
                    // Under the lock: a check queued after this sees one driver fewer.
                    queue.drivers -= 1;
                    if queue.drivers == 0 {
                        queues.remove(&slot);
                    }
                    driver.running = false;
                    return;
                }
                let n = queue.waiting.len().min(MOST);
                // A check whose caller stopped waiting (the limiter's timeout, while Redis
                // was slow) was answered by the fault policy: sending it now would count a
                // request twice.
                queue
                    .waiting
                    .drain(..n)
                    .filter(|(_, answer)| !answer.is_closed())
                    .collect()
            };
            if batch.is_empty() {
                continue;
            }
            let (checks, answers): (Vec<CheckArgs>, Vec<oneshot::Sender<Answer>>) =
                batch.into_iter().unzip();
            match self.call(&checks).await {
                Ok(replies) => {
                    for (answer, reply) in answers.into_iter().zip(replies) {
                        let _ = answer.send(Ok(reply));
                    }
                }
                Err(error) => {
                    for answer in answers {
                        let _ = answer.send(Err(StoreError::msg(error.to_string())));
                    }
                }
            }
        }
    }
}

/// A driver that stops early (its runtime shut down) gives its place back, so that the next
/// check starts another; the checks it carried get an error, answered by the fault policy.
struct Driver {
    store: Arc<super::Inner>,
    slot: u16,
    running: bool,
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.running {
            let mut queues = self.store.batcher.queues.lock();
            if let Some(queue) = queues.get_mut(&self.slot) {
                queue.drivers -= 1;
                if queue.drivers == 0 && queue.waiting.is_empty() {
                    queues.remove(&self.slot);
                }
            }
        }
    }
}
