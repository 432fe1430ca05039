//! On a cluster, the checks of every slot one node serves go out together: one script call
//! per node, not one per slot. Most checks a busy cluster sees are of clients it holds
//! nothing for, each in a slot of its own, so that batches per slot would hold one check
//! each and every check would pay for a script call of its own.
//!
//! A node takes a call's declared keys from one slot only, but a script (without flags) may
//! read and write the keys of every slot the node serves: the first slot's names are the
//! call's `KEYS`, which route it, and the others follow (see `call.rs`). Which node serves
//! which slot is the store's reading of `CLUSTER SLOTS` ([`NodeMap`]), taken at the first
//! check and again whenever a call finds it wrong. A wrong map costs no exactness: the script
//! reads every slot's keys before it writes anything, a node that does not serve one of
//! them (a slot moved, a key migrating) fails that read, and the call answers so without
//! having changed a thing — its checks then go one slot at a time, routed and redirected
//! by the cluster connection as any call is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use redis::Value;

use super::batch::CheckArgs;
use super::call::CallError;
use super::RedisStore;

/// Slots in a Redis Cluster.
const SLOTS: usize = 16_384;

/// How often the map is read at most: a resharding moves slots one by one.
const REREAD_EVERY: Duration = Duration::from_millis(100);

/// Which node serves each hash slot, by the store's latest reading.
#[derive(Default)]
pub(super) struct NodeMap {
    /// Per slot, the number of the node serving it ([`NONE`]: none known).
    node_of: ArcSwapOption<Vec<u16>>,
    /// A reading under way.
    reading: AtomicBool,
    /// When the latest reading started.
    read_at: Mutex<Option<Instant>>,
}

/// A slot no node was seen serving.
const NONE: u16 = u16::MAX;

/// The queue of a check on one server.
pub(super) const ONE_SERVER: u32 = 0;

impl NodeMap {
    /// The queue a check of `slot` waits in: its node's, or while no node is known for it,
    /// the slot's own.
    fn queue_of(&self, slot: u16) -> Option<u32> {
        let map = self.node_of.load();
        let node = *map.as_ref()?.get(usize::from(slot))?;
        (node != NONE).then(|| SLOTS as u32 + u32::from(node))
    }

    /// Whether a reading may start now (one at a time, one per [`REREAD_EVERY`]); if so the
    /// caller reads and then calls [`read`](Self::read).
    fn may_read(&self) -> bool {
        let mut read_at = self.read_at.lock();
        if read_at.is_some_and(|at| at.elapsed() < REREAD_EVERY)
            || self.reading.swap(true, Ordering::AcqRel)
        {
            return false;
        }
        *read_at = Some(Instant::now());
        true
    }

    /// Takes a reading's outcome: the map from `CLUSTER SLOTS`, or on `None` the old one.
    fn read(&self, reply: Option<Value>) {
        if let Some(map) = reply.as_ref().and_then(parse_slots) {
            self.node_of.store(Some(Arc::new(map)));
        }
        self.reading.store(false, Ordering::Release);
    }
}

/// The node of each slot in a `CLUSTER SLOTS` reply: entries of a slot range, then its
/// master's address first (`[start, end, [host, port, ...], replicas...]`); nodes are
/// numbered in the order they appear. `None` for a reply of another shape.
fn parse_slots(reply: &Value) -> Option<Vec<u16>> {
    let Value::Array(ranges) = reply else {
        return None;
    };
    let mut nodes: Vec<(Vec<u8>, i64)> = Vec::new();
    let mut node_of = vec![NONE; SLOTS];
    for range in ranges {
        let Value::Array(fields) = range else {
            return None;
        };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            return None;
        };
        let (Some(Value::BulkString(host)), Some(Value::Int(port))) =
            (master.first(), master.get(1))
        else {
            return None;
        };
        let address = (host.clone(), *port);
        let number = match nodes.iter().position(|known| *known == address) {
            Some(at) => at,
            None => {
                nodes.push(address);
                nodes.len() - 1
            }
        };
        let number = u16::try_from(number).ok().filter(|&n| n != NONE)?;
        let (start, end) = (usize::try_from(*start).ok()?, usize::try_from(*end).ok()?);
        node_of.get_mut(start..=end)?.fill(number);
    }
    Some(node_of)
}

impl RedisStore {
    /// The queue a check of `slot` waits in: on one server, the only one; on a cluster, its
    /// node's (its slot's until the store knows the nodes, which it then learns).
    pub(super) fn queue_of(&self, slot: u16) -> u32 {
        if !self.inner.connection.is_cluster() {
            return ONE_SERVER;
        }
        match self.inner.node_map.queue_of(slot) {
            Some(queue) => queue,
            None => {
                self.read_node_map();
                u32::from(slot)
            }
        }
    }

    /// Reads which node serves which slot, in the background (at most one reading at a
    /// time, one per [`REREAD_EVERY`]). A reading that fails keeps the map as it was.
    fn read_node_map(&self) {
        if self.inner.node_map.may_read() {
            let store = self.clone();
            self.inner
                .runtime
                .spawn(async move { store.take_node_map().await });
        }
    }

    /// Reads which node serves which slot now, for a store just connected (its first
    /// checks then go one call per node already).
    pub(super) async fn read_node_map_now(&self) {
        if self.inner.node_map.may_read() {
            let store = self.clone();
            let _ = self
                .inner
                .runtime
                .run(async move { store.take_node_map().await })
                .await;
        }
    }

    /// One reading of `CLUSTER SLOTS`, taken into the map (after [`NodeMap::may_read`]).
    async fn take_node_map(&self) {
        let mut command = redis::cmd("CLUSTER");
        command.arg("SLOTS");
        let reply = super::deadline::within(
            self.timeout(),
            self.inner.connection.query::<Value>(&command),
        )
        .await;
        self.inner.node_map.read(reply.ok().and_then(Result::ok));
    }

    /// Decides `checks`, all on one cluster node by the map, in one call: each slot's checks
    /// side by side, each slot's in their order (checks of different slots share no key, so
    /// their order between them decides nothing). If the node does not serve them all, each
    /// slot's go in a call of their own, and the map is read again.
    pub(super) async fn call_on_node(
        &self,
        checks: &[&CheckArgs],
    ) -> Result<Vec<Vec<i64>>, CallError> {
        let mut order: Vec<usize> = (0..checks.len()).collect();
        order.sort_by_key(|&i| checks[i].slot);
        let sorted: Vec<&CheckArgs> = order.iter().map(|&i| checks[i]).collect();
        let replies = match self.call(&sorted).await {
            Err(CallError::Redis(e)) if is_elsewhere(&e) => {
                self.read_node_map();
                let mut replies = Vec::with_capacity(sorted.len());
                for slot in sorted.chunk_by(|a, b| a.slot == b.slot) {
                    replies.extend(self.call(slot).await?);
                }
                replies
            }
            other => other?,
        };
        let mut answers = vec![Vec::new(); checks.len()];
        for (i, reply) in order.into_iter().zip(replies) {
            answers[i] = reply;
        }
        Ok(answers)
    }
}

/// Whether a call was refused because its node does not serve every slot it carried
/// (check.lua's answer, before it changed anything).
fn is_elsewhere(error: &redis::RedisError) -> bool {
    error.code() == Some("LIMITER_ELSEWHERE") || error.to_string().contains("LIMITER_ELSEWHERE")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: i64, end: i64, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(start),
            Value::Int(end),
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(port),
            ]),
        ])
    }

    #[test]
    fn slots_are_numbered_by_their_masters() {
        let reply = Value::Array(vec![
            range(0, 5460, 7000),
            range(5461, 10922, 7001),
            range(10923, 16000, 7002),
            range(16001, 16383, 7000),
        ]);
        let map = parse_slots(&reply).unwrap();
        assert_eq!((map[0], map[5460], map[5461]), (0, 0, 1));
        assert_eq!(
            (map[10923], map[16000], map[16001], map[16383]),
            (2, 2, 0, 0)
        );
    }

    #[test]
    fn an_unserved_slot_has_no_node_and_a_strange_reply_no_map() {
        let map = parse_slots(&Value::Array(vec![range(0, 99, 7000)])).unwrap();
        assert_eq!((map[99], map[100]), (0, NONE));
        assert!(parse_slots(&Value::Int(1)).is_none());
        assert!(parse_slots(&Value::Array(vec![range(0, 16_384, 7000)])).is_none());
    }
}
