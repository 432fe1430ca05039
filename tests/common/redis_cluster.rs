//! A Redis Cluster of the tests' own: three masters on free loopback ports (each with its
//! cluster bus at port + 10,000), the slots split among them by `redis-cli --cluster
//! create`. A master can be killed to test a failure; the others keep serving their slots
//! (`cluster-require-full-coverage no`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::redis_server::{free_port, RedisServer};

pub(crate) struct RedisCluster {
    nodes: Vec<RedisServer>,
    dir: PathBuf,
}

impl RedisCluster {
    /// Three masters, no replicas, every slot served.
    pub(crate) fn start() -> RedisCluster {
        RedisCluster::start_with(0)
    }

    /// Three masters with `replicas` replicas each (nodes 0–2 are the masters).
    pub(crate) fn start_with(replicas: usize) -> RedisCluster {
        // A creation that fails or hangs (a port taken between choosing and binding it, a
        // node that never meets the others) is tried again on new ports, and says why.
        let mut failures = Vec::new();
        for _ in 0..3 {
            match RedisCluster::create(replicas) {
                Ok(cluster) => return cluster,
                Err(why) => {
                    eprintln!("a test cluster did not form, trying again: {why}");
                    failures.push(why);
                }
            }
        }
        panic!("redis-cli --cluster create failed three times: {failures:?}");
    }

    fn create(replicas: usize) -> Result<RedisCluster, String> {
        static STARTED: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "limiter-cluster-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut nodes = Vec::new();
        for port in free_ports(3 * (1 + replicas)) {
            let options = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                &format!("nodes-{port}.conf"),
                "--dir",
                dir.to_str().unwrap(),
                "--cluster-node-timeout",
                "1000",
                "--cluster-require-full-coverage",
                "no",
            ];
            let options = options.iter().map(|o| o.to_string()).collect();
            match RedisServer::try_start_on(port, options) {
                Ok(node) => nodes.push(node),
                Err(why) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(why);
                }
            }
        }
        let mut create = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("redis-cli comes with redis-server (apt-get install -y redis-server)");
        // redis-cli waits for the nodes to agree, without end if they never do.
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = create.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = create.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let output = create.wait_with_output().unwrap();
        if !status.is_some_and(|s| s.success()) {
            let said = String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr);
            let tail: String = said.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            let _ = std::fs::remove_dir_all(&dir);
            return Err(match status {
                None => format!("no agreement within 30 s: {tail}"),
                Some(status) => format!("{status}: {tail}"),
            });
        }
        let cluster = RedisCluster { nodes, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cluster.nodes.iter().all(|node| {
            let info = node.text(&["CLUSTER", "INFO"]);
            info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
        }) {
            assert!(Instant::now() < deadline, "the cluster did not form");
            std::thread::sleep(Duration::from_millis(50));
        }
        if replicas > 0 {
            for master in &cluster.nodes[..3] {
                assert!(master
                    .text(&["INFO", "replication"])
                    .contains("role:master"));
            }
            // Every replica attached and in sync with its master.
            while !cluster.nodes[..3].iter().all(|master| {
                let info = master.text(&["INFO", "replication"]);
                info.matches("state=online").count() == replicas
            }) {
                assert!(Instant::now() < deadline, "the replicas did not sync");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(cluster)
    }

    /// Waits until the live nodes serve every slot again, a replica having been promoted
    /// in place of the killed master `killed`; returns the promoted replica.
    pub(crate) fn wait_for_failover(&self, killed: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        let live = || self.nodes.iter().enumerate().filter(|(i, _)| *i != killed);
        loop {
            let served = live().all(|(_, node)| {
                node.try_text(&["CLUSTER", "INFO"]).is_some_and(|info| {
                    info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
                })
            });
            let promoted = live().find(|(i, node)| {
                *i >= 3
                    && node
                        .try_text(&["INFO", "replication"])
                        .is_some_and(|info| info.contains("role:master"))
            });
            if let (true, Some((promoted, _))) = (served, promoted) {
                return promoted;
            }
            assert!(Instant::now() < deadline, "no replica took over");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every node's URL, for the store's list of nodes.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    pub(crate) fn node(&self, index: usize) -> &RedisServer {
        &self.nodes[index]
    }

    /// Kills a master: its slots go unserved.
    pub(crate) fn kill(&mut self, index: usize) {
        self.nodes[index].stop();
    }

    /// The node serving `key`'s slot, from the live nodes' view of the cluster.
    pub(crate) fn node_of(&self, key: &str) -> usize {
        let slot = self.nodes[0].integer(&["CLUSTER", "KEYSLOT", key]);
        let view = self.nodes[0].text(&["CLUSTER", "NODES"]);
        for line in view.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port: u16 = fields[1]
                .split(['@', ':'])
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap();
            let serves = fields[8..].iter().any(|range| {
                let (from, to) = range.split_once('-').unwrap_or((range, range));
                match (from.parse::<i64>(), to.parse::<i64>()) {
                    (Ok(from), Ok(to)) => (from..=to).contains(&slot),
                    _ => false,
                }
            });
            if serves {
                return self.nodes.iter().position(|n| n.port() == port).unwrap();
            }
        }
        panic!("no node serves slot {slot}")
    }

    /// Calls of `command` on the nodes still running, from `INFO commandstats`.
    pub(crate) fn calls(&self, command: &str) -> u64 {
        self.nodes
            .iter()
            .filter(|n| n.try_command(&["PING"]).is_some())
            .map(|n| n.calls(command))
            .sum()
    }

    /// Starts moving the slot of `key` from the node serving it to the next one, by Redis
    /// Cluster's resharding steps (`IMPORTING` on the target, `MIGRATING` on the source).
    pub(crate) fn start_moving(&self, key: &str) -> SlotMove {
        let slot = self.nodes[0]
            .integer(&["CLUSTER", "KEYSLOT", key])
            .to_string();
        let from = self.node_of(key);
        let to = (from + 1) % self.nodes.len();
        let id = |node: usize| {
            self.nodes[node]
                .text(&["CLUSTER", "MYID"])
                .trim()
                .to_owned()
        };
        let (from_id, to_id) = (id(from), id(to));
        self.nodes[to].command(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        self.nodes[from].command(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        SlotMove {
            slot,
            from,
            to,
            to_id,
        }
    }

    /// Ends a move: `keys` migrate to the target, and every node is told it serves the slot.
    pub(crate) fn finish_moving(&self, moving: &SlotMove, keys: &[&str]) {
        if !keys.is_empty() {
            let port = self.nodes[moving.to].port().to_string();
            let mut migrate = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            migrate.extend_from_slice(keys);
            self.nodes[moving.from].command(&migrate);
        }
        // The target first, then the source, then the others.
        let others = (0..self.nodes.len()).filter(|&n| n != moving.to && n != moving.from);
        for node in [moving.to, moving.from].into_iter().chain(others) {
            self.nodes[node].command(&["CLUSTER", "SETSLOT", &moving.slot, "NODE", &moving.to_id]);
        }
    }

    /// Runs a command on every node still running.
    pub(crate) fn on_every_node(&self, args: &[&str]) {
        for node in &self.nodes {
            let _ = node.try_command(args);
        }
    }
}

/// A slot being moved between two nodes (see [`RedisCluster::start_moving`]).
pub(crate) struct SlotMove {
    slot: String,
    pub(crate) from: usize,
    pub(crate) to: usize,
    to_id: String,
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` ports free on loopback, each with its cluster bus port (+ 10,000) free too.
fn free_ports(n: usize) -> Vec<u16> {
    let mut ports = Vec::new();
    while ports.len() < n {
        let port = free_port();
        if !ports.contains(&port) {
            ports.push(port);
        }
    }
    ports
}
