//! On a cluster, the checks of every slot one node serves go out together: one script call
//! per node, not one per slot. Most checks a busy cluster sees are of clients it holds
//! nothing for, each in a slot of its own, so that batches per slot would hold one check
//! each and every check would pay for a script call of its own.
//!
//! A node takes a call's declared keys from one slot only, but a script (without flags) may
//! read and write the keys of every slot the node serves: the first slot's names are the
//! call's `KEYS`, which route it, and the others follow (see `call.rs`). Which node serves
//! which slot is the store's reading of `CLUSTER SLOTS` ([`NodeMap`]), taken when it
//! connects (or at its first check) and again whenever a call finds it wrong. A wrong map
//! costs no exactness: the script reads every slot's keys before it writes anything, a node
//! that does not serve one of them (a slot moved, a key migrating) fails that read, and the
//! call answers so without having changed a thing — its checks then go one call per slot,
//! all at once, routed and redirected by the cluster connection as any call is.

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

/// How often the map is read for a slot it says no node serves.
const REREAD_UNSERVED: Duration = Duration::from_secs(1);

/// Which node serves each hash slot, by the store's latest reading.
#[derive(Default)]
pub(super) struct NodeMap {
    /// Per slot, the number of the node serving it ([`NONE`]: none known).
    node_of: ArcSwapOption<Vec<u16>>,
    /// A reading under way.
    reading: AtomicBool,
    /// When the latest reading started.
    read_at: Mutex<Option<Instant>>,
    /// The nodes seen, by id, in the order they were numbered.
    known: Mutex<Vec<Vec<u8>>>,
}

/// A slot no node was seen serving.
const NONE: u16 = u16::MAX;

/// The queue of a check on one server.
pub(super) const ONE_SERVER: u32 = 0;

impl NodeMap {
    /// The queue a check of `slot` waits in: its node's; while no node is known for it, the
    /// slot's own (`Err`, with how often the map is worth reading again for it).
    fn queue_of(&self, slot: u16) -> Result<u32, Duration> {
        let map = self.node_of.load();
        let Some(map) = map.as_ref() else {
            return Err(REREAD_EVERY);
        };
        match map.get(usize::from(slot)) {
            Some(&node) if node != NONE => Ok(SLOTS as u32 + u32::from(node)),
            // A slot no node served at the reading (a master down, no replica): asked again
            // now and then, not at every check.
            _ => Err(REREAD_UNSERVED),
        }
    }

    /// Whether a reading may start now (one at a time, one per `every`); if so the caller
    /// reads and then calls [`read`](Self::read).
    fn may_read(&self, every: Duration) -> bool {
        let mut read_at = self.read_at.lock();
        if read_at.is_some_and(|at| at.elapsed() < every)
            || self.reading.swap(true, Ordering::AcqRel)
        {
            return false;
        }
        *read_at = Some(Instant::now());
        true
    }

    /// Takes a reading's outcome: the map from `CLUSTER SLOTS`, or on `None` the old one.
    fn read(&self, reply: Option<Value>) {
        let map = reply.and_then(|reply| parse_slots(&reply, &mut self.known.lock()));
        if let Some(map) = map {
            self.node_of.store(Some(Arc::new(map)));
        }
        self.reading.store(false, Ordering::Release);
    }
}

/// The node of each slot in a `CLUSTER SLOTS` reply: entries of a slot range, then its
/// master first (`[start, end, [host, port, id, ...], replicas...]`). A node is known by its
/// id (by its address before Redis 4 gave ids), and numbered in `known`, which only grows:
/// a node keeps its number from one reading to the next, so that checks queued under it
/// still go together. `None` for a reply of another shape.
fn parse_slots(reply: &Value, known: &mut Vec<Vec<u8>>) -> Option<Vec<u16>> {
    let Value::Array(ranges) = reply else {
        return None;
    };
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
        let identity = match (master.first(), master.get(1), master.get(2)) {
            (_, _, Some(Value::BulkString(id))) => id.clone(),
            (Some(Value::BulkString(host)), Some(Value::Int(port)), _) => {
                let mut address = host.clone();
                address.extend_from_slice(format!(":{port}").as_bytes());
                address
            }
            _ => return None,
        };
        let number = match known.iter().position(|id| *id == identity) {
            Some(at) => at,
            None => {
                known.push(identity);
                known.len() - 1
            }
        };
        let number = u16::try_from(number).ok().filter(|&n| n != NONE)?;
        let (start, end) = (usize::try_from(*start).ok()?, usize::try_from(*end).ok()?);
        node_of.get_mut(start..=end)?.fill(number);
    }
    Some(node_of)
}

impl RedisStore {
    /// Whether queue `queue_id` stays once it empties: one server's and each node's, as few
    /// as the nodes; not a slot's (the queue of a slot whose node is not known yet).
    pub(super) fn lasts(&self, queue_id: u32) -> bool {
        !self.inner.connection.is_cluster() || queue_id >= SLOTS as u32
    }

    /// The queue a check of `slot` waits in: on one server, the only one; on a cluster, its
    /// node's (its slot's until the store knows the nodes, which it then learns).
    pub(super) fn queue_of(&self, slot: u16) -> u32 {
        if !self.inner.connection.is_cluster() {
            return ONE_SERVER;
        }
        match self.inner.node_map.queue_of(slot) {
            Ok(queue) => queue,
            Err(every) => {
                self.read_node_map(every);
                u32::from(slot)
            }
        }
    }

    /// Reads which node serves which slot, in the background (at most one reading at a
    /// time, one per `every`). A reading that fails keeps the map as it was.
    fn read_node_map(&self, every: Duration) {
        if self.inner.node_map.may_read(every) {
            let store = self.clone();
            self.inner
                .runtime
                .spawn(async move { store.take_node_map().await });
        }
    }

    /// Reads which node serves which slot now, for a store just connected (its first
    /// checks then go one call per node already).
    pub(super) async fn read_node_map_now(&self) {
        if self.inner.node_map.may_read(REREAD_EVERY) {
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
        let reply = self
            .within(self.inner.connection.query::<Value>(&command))
            .await;
        self.inner.node_map.read(reply.ok().and_then(Result::ok));
    }

    /// Decides the checks `open` of `checks`, all on one cluster node by the map, in one
    /// call, filling `decided`: each slot's checks side by side, each slot's in their order
    /// (checks of different slots share no key, so their order between them decides
    /// nothing). If the node does not serve them all, each slot's go in a call of their own,
    /// all at once, and the map is read again; the slots Redis answered stay decided whatever
    /// the others met.
    pub(super) async fn call_on_node(
        &self,
        checks: &[CheckArgs],
        mut open: Vec<usize>,
        decided: &mut [Option<Vec<i64>>],
    ) -> Result<(), CallError> {
        open.sort_by_key(|&i| checks[i].slot);
        let sorted: Vec<&CheckArgs> = open.iter().map(|&i| &checks[i]).collect();
        match self.call(&sorted).await {
            Ok(replies) => {
                for (&i, reply) in open.iter().zip(replies) {
                    decided[i] = Some(reply);
                }
                Ok(())
            }
            Err(CallError::Redis(e)) if is_elsewhere(&e) => {
                self.read_node_map(REREAD_EVERY);
                self.call_per_slot(checks, &open, decided).await
            }
            Err(e) => Err(e),
        }
    }

    /// Decides the checks `open` (side by side by slot) one call per slot, the calls sent
    /// at once; the first failure is returned once every call is answered.
    async fn call_per_slot(
        &self,
        checks: &[CheckArgs],
        open: &[usize],
        decided: &mut [Option<Vec<i64>>],
    ) -> Result<(), CallError> {
        // Each slot's checks: where they are in the batch, and themselves.
        let slots: Vec<(&[usize], Vec<&CheckArgs>)> = open
            .chunk_by(|&a, &b| checks[a].slot == checks[b].slot)
            .map(|at| (at, at.iter().map(|&i| &checks[i]).collect()))
            .collect();
        let mut calls = tokio::task::JoinSet::new();
        for (group, (_, members)) in slots.iter().enumerate() {
            let command = self.script_call(members);
            let store = self.clone();
            calls.spawn(async move {
                let sent = Instant::now();
                let reply = store.run_check(&command).await;
                (group, sent, reply)
            });
        }
        let mut failure = None;
        while let Some(done) = calls.join_next().await {
            let outcome = match done {
                Ok((group, sent, Ok(reply))) => {
                    let (at, members) = &slots[group];
                    self.answers(members, reply, sent).map(|replies| {
                        for (&i, reply) in at.iter().zip(replies) {
                            decided[i] = Some(reply);
                        }
                    })
                }
                Ok((_, _, Err(e))) => Err(CallError::Redis(e)),
                Err(e) => Err(CallError::Reply(crate::StoreError::msg(format!(
                    "a Redis call stopped: {e}"
                )))),
            };
            if let Err(e) = outcome {
                failure = failure.or(Some(e));
            }
        }
        failure.map_or(Ok(()), Err)
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
                Value::BulkString(format!("id-{port}").into_bytes()),
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
        let map = parse_slots(&reply, &mut Vec::new()).unwrap();
        assert_eq!((map[0], map[5460], map[5461]), (0, 0, 1));
        assert_eq!(
            (map[10923], map[16000], map[16001], map[16383]),
            (2, 2, 0, 0)
        );
    }

    /// A node keeps its number from one reading to the next, whatever order the reply
    /// lists the nodes in; a node is its id, whatever its address says (`?` or empty
    /// endpoints on several hosts).
    #[test]
    fn a_node_keeps_its_number_across_readings() {
        let mut known = Vec::new();
        parse_slots(
            &Value::Array(vec![range(0, 99, 7000), range(100, 199, 7001)]),
            &mut known,
        )
        .unwrap();
        let map = parse_slots(
            &Value::Array(vec![range(0, 49, 7001), range(50, 199, 7000)]),
            &mut known,
        )
        .unwrap();
        assert_eq!((map[0], map[50], map[199]), (1, 0, 0));
        let same_address = |id: &str| {
            Value::Array(vec![
                Value::Int(0),
                Value::Int(0),
                Value::Array(vec![
                    Value::BulkString(b"?".to_vec()),
                    Value::Int(6379),
                    Value::BulkString(id.as_bytes().to_vec()),
                ]),
            ])
        };
        let a = parse_slots(&Value::Array(vec![same_address("a")]), &mut known).unwrap();
        let b = parse_slots(&Value::Array(vec![same_address("b")]), &mut known).unwrap();
        assert_ne!(a[0], b[0]);
    }

    #[test]
    fn an_unserved_slot_has_no_node_and_a_strange_reply_no_map() {
        let known = &mut Vec::new();
        let map = parse_slots(&Value::Array(vec![range(0, 99, 7000)]), known).unwrap();
        assert_eq!((map[99], map[100]), (0, NONE));
        assert!(parse_slots(&Value::Int(1), known).is_none());
        assert!(parse_slots(&Value::Array(vec![range(0, 16_384, 7000)]), known).is_none());
    }
}
