//! The Redis store against a Redis Cluster that these tests start themselves: three
//! masters on free loopback ports. The same decisions as the memory store (keys spread
//! over every node, stacks whose keys live on different nodes), several instances sharing
//! one exact budget with the rejection cache on, scripts reloaded on whichever node serves a
//! slot, and a master killed mid-run. Run with `cargo test --features redis`.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix_web::{test, web, App, HttpResponse};
use common::redis_cluster::RedisCluster;
use common::replays::{self, runtime};
use limiter::{
    rate_limit, Charge, Limit, Limiter, ManualClock, OnStoreError, Policy, RedisStore, Store,
};
use proptest::prelude::*;

async fn connect(cluster: &RedisCluster) -> RedisStore {
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    RedisStore::connect_cluster(&urls).await.unwrap()
}

/// Keys 0 to 8: their slots fall on every node of a three-node cluster (`{AA}` to `{CA}`
/// in the key names; 8's alone is on the first).
const KEYS: u8 = 9;

fn steps() -> impl Strategy<Value = Vec<(u8, u64)>> + Clone {
    replays::steps(KEYS, 50)
}

/// The keys these tests use live on all three nodes (else they would prove little).
#[::std::prelude::v1::test]
fn the_keys_cover_every_node() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster));
    let limit = Limit::new("cover", Policy::new(5, Duration::from_secs(60)).unwrap());
    let nodes: BTreeSet<usize> = (0..KEYS)
        .map(|key| cluster.node_of(&store.key_name(&limit, &[key])))
        .collect();
    assert_eq!(nodes.len(), 3);
    // And the store's connection to each node sends a call at once (TCP_NODELAY; with
    // Nagle's algorithm a batch in two segments waits for a delayed acknowledgement).
    let limiter = Limiter::builder().store(store).build();
    for key in 0..KEYS {
        assert!(rt
            .block_on(limiter.check(&limit, &[key]))
            .unwrap()
            .allowed());
    }
    for node in 0..3 {
        let sockets = common::sockets_to(cluster.node(node).port());
        assert!(
            !sockets.is_empty() && sockets.iter().all(|&on| on),
            "node {node}: {sockets:?}"
        );
    }
}

#[::std::prelude::v1::test]
fn decisions_on_a_cluster_equal_the_memory_stores() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let redis = rt.block_on(connect(&cluster)).use_caller_clock();
    replays::single_checks_decide_as_in_memory(&rt, &redis, steps(), 20, "cluster");
}

/// Costs and refunds — late ones too — decide on a cluster as in memory: each refund goes
/// to the node that counted its check, and gives back only what is still counted there.
#[::std::prelude::v1::test]
fn costs_and_refunds_on_a_cluster_equal_the_memory_stores() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let redis = rt.block_on(connect(&cluster)).use_caller_clock();
    assert!(redis.accept_timeout(Duration::from_secs(10)));
    replays::costs_and_refunds_decide_as_in_memory(&rt, &redis, 15, "cluster-cost");
}

/// Stacks whose keys live on different nodes: each node's part is one script, and a part
/// that rejects makes the parts counted before it give their units back. The answers are
/// the memory store's all-or-nothing ones: the same admissions, the same statuses.
#[::std::prelude::v1::test]
fn stacks_across_nodes_answer_as_the_memory_store_does() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let redis = rt.block_on(connect(&cluster)).use_caller_clock();
    replays::stacks_answer_as_in_memory(&rt, &redis, steps(), 40, "cluster-stack", |key| {
        [[key], [(key + 1) % KEYS], [(key + 2) % KEYS]]
    });
}

/// Checks batch per hash slot on a cluster: 800 concurrent checks of 8 keys (on every node)
/// take a fraction of the calls, and each key admits exactly 30 with the remaining counts
/// of a sequence, as if each check had been sent alone.
#[::std::prelude::v1::test]
fn concurrent_checks_batch_per_slot_and_stay_exact() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster)).use_caller_clock();
    let limit = Limit::new(
        "cluster-batched",
        Policy::new(30, Duration::from_secs(60)).unwrap(),
    );
    cluster.on_every_node(&["CONFIG", "RESETSTAT"]);
    replays::concurrent_checks_keep_exact_sequences(&rt, &store, &limit, "cluster");
    let calls = cluster.calls("fcall") + cluster.calls("evalsha") + cluster.calls("eval");
    assert!(calls <= 800 / 4, "{calls} calls for 800 checks");
}

/// `n` concurrent checks of `keys`, each its answer (true: admitted), in the keys' order.
fn concurrently(
    rt: &tokio::runtime::Runtime,
    store: &RedisStore,
    limit: &Limit,
    keys: &[Vec<u8>],
) -> Vec<bool> {
    rt.block_on(async {
        let checks: Vec<_> = keys
            .iter()
            .map(|key| {
                let (store, limit, key) = (store.clone(), limit.clone(), key.clone());
                tokio::spawn(async move {
                    store
                        .check(&limit, &key, Duration::ZERO)
                        .await
                        .unwrap()
                        .allowed()
                })
            })
            .collect();
        let mut answers = Vec::new();
        for check in checks {
            answers.push(check.await.unwrap());
        }
        answers
    })
}

/// New clients, each in a slot of its own, are batched per node, not per slot: 600
/// concurrent first checks take a fraction of the script calls, and every client is
/// admitted once and refused next. A slot moved to another node after the store read the
/// map costs nothing either: the node the call reached refuses it before writing anything
/// (`LIMITER_ELSEWHERE` in its error stats), each slot's checks go alone, and the moved
/// client's budget lives where its slot now is.
#[::std::prelude::v1::test]
fn new_clients_batch_per_node_and_a_moved_slot_stays_exact() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster));
    let limit = Limit::new("per-node", Policy::new(1, Duration::from_secs(60)).unwrap());
    let clients: Vec<Vec<u8>> = (0..600u32).map(|i| i.to_be_bytes().to_vec()).collect();
    cluster.on_every_node(&["CONFIG", "RESETSTAT"]);
    let first = concurrently(&rt, &store, &limit, &clients);
    let again = concurrently(&rt, &store, &limit, &clients);
    let calls = cluster.calls("fcall") + cluster.calls("evalsha") + cluster.calls("eval");
    let usec: u64 = (0..3).map(|n| cluster.node(n).usec_of_calls()).sum();
    println!(
        "1200 checks of 600 new clients on 3 nodes: {calls} script calls ({:.3} a check), {:.2} µs of Redis a check",
        calls as f64 / 1200.0,
        usec as f64 / 1200.0
    );
    assert!(first.iter().all(|&a| a), "a new client refused");
    assert!(again.iter().all(|&a| !a), "a client admitted twice");
    assert!(calls <= 1200 / 4, "{calls} calls for 1200 checks");

    // A fresh client whose (empty) slot moves from its node to the next one.
    let moved = (10_000u32..)
        .map(|i| i.to_be_bytes().to_vec())
        .find(|key| {
            let name = store.key_name(&limit, key);
            let slot = cluster.node(0).integer(&["CLUSTER", "KEYSLOT", &name]);
            let node = cluster.node_of(&name);
            cluster
                .node(node)
                .integer(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()])
                == 0
        })
        .unwrap();
    let name = store.key_name(&limit, &moved);
    // Redis Cluster's resharding steps, with no key to migrate.
    let moving = cluster.start_moving(&name);
    cluster.finish_moving(&moving, &[]);
    let to = moving.to;
    // It, and new clients on every node (some on its old node), twice.
    let mut keys: Vec<Vec<u8>> = (20_000..20_300u32)
        .map(|i| i.to_be_bytes().to_vec())
        .collect();
    keys.insert(150, moved.clone());
    let first = concurrently(&rt, &store, &limit, &keys);
    let again = concurrently(&rt, &store, &limit, &keys);
    assert!(
        first.iter().all(|&a| a),
        "a new client refused after the move"
    );
    assert!(
        again.iter().all(|&a| !a),
        "a client admitted twice after the move"
    );
    assert_eq!(cluster.node_of(&name), to);
    assert!(
        cluster.node(to).integer(&["EXISTS", &name]) == 1,
        "the moved client's state is on the node serving its slot"
    );
    let refused: String = (0..3)
        .map(|n| cluster.node(n).text(&["INFO", "errorstats"]))
        .collect();
    assert!(
        refused.contains("LIMITER_ELSEWHERE"),
        "the stale map was never used: {refused}"
    );
}

/// A slot being migrated, with a client's long log still on its old node: the client's
/// check runs there (its key exists), and a log whose every instant has left the window is
/// rewritten without the key ever ceasing to exist (a node refuses a key of a migrating slot
/// it no longer holds, which would leave the call half done). Once the key has moved, the
/// client's log continues on the new node.
#[::std::prelude::v1::test]
fn a_long_log_in_a_migrating_slot_is_rewritten_in_one_piece() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster)).use_caller_clock();
    let limit = Limit::new(
        "migrating",
        Policy::new(200, Duration::from_secs(60)).unwrap(),
    );
    let t0 = Duration::from_secs(1_700_000_000);
    let check = |at: Duration| rt.block_on(store.check(&limit, b"moving", at));
    assert!(check(t0).unwrap().allowed());
    let name = store.key_name(&limit, b"moving");
    let moving = cluster.start_moving(&name);
    let (from, to) = (moving.from, moving.to);
    // Every instant of the log has left the window: the check rewrites it.
    let later = t0 + Duration::from_secs(61);
    let decision = check(later).expect("a check of a migrating slot's key that exists");
    assert!(
        decision.allowed() && decision.remaining() == 199,
        "{decision:?}"
    );
    assert_eq!(cluster.node(from).integer(&["LLEN", &name]), 1);
    // The key moves, then the slot.
    cluster.finish_moving(&moving, &[&name]);
    let decision = check(later + Duration::from_millis(500)).unwrap();
    assert!(
        decision.allowed() && decision.remaining() == 198,
        "{decision:?}"
    );
    assert_eq!(cluster.node(to).integer(&["LLEN", &name]), 2);
}

// ---- instances sharing the cluster ----------------------------------------------------------

#[rate_limit(5, per = "1m")]
async fn five() -> HttpResponse {
    HttpResponse::Ok().finish()
}

const CLIENTS: u8 = 24;

fn client(i: u8) -> std::net::SocketAddr {
    format!("203.0.113.{}:4000", 10 + i).parse().unwrap()
}

/// The node holding client `i`'s state, found by its key's hash tag in the key names.
fn node_of_client(cluster: &RedisCluster, i: u8) -> usize {
    let tag = format!("{{{}}}", common::base64url(&[b'4', 203, 0, 113, 10 + i]));
    (0..3)
        .find(|&n| match cluster.node(n).command(&["KEYS", "*"]) {
            redis::Value::Array(keys) => keys.iter().any(|k| match k {
                redis::Value::BulkString(name) => String::from_utf8_lossy(name).contains(&tag),
                _ => false,
            }),
            _ => false,
        })
        .expect("the client's state is in the cluster")
}

async fn instance(
    limiter: Limiter,
) -> impl actix_web::dev::Service<
    actix_http::Request,
    Response = actix_web::dev::ServiceResponse,
    Error = actix_web::Error,
> {
    test::init_service(App::new().app_data(limiter).route("/", web::get().to(five))).await
}

/// Two instances, 24 clients spread over the three nodes, 20 requests per client at once:
/// exactly 5 admitted each. Then a flood of 4,800 more is answered by the instances' caches
/// of rejections, with at most one call per client and instance.
#[actix_web::test]
async fn instances_on_a_cluster_admit_exactly_and_answer_floods_locally() {
    let cluster = RedisCluster::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_000));
    let mut apps = Vec::new();
    for _ in 0..2 {
        let limiter = Limiter::builder()
            .store(connect(&cluster).await.use_caller_clock())
            .clock(clock.clone())
            .store_timeout(Duration::from_secs(2))
            .build();
        apps.push(Rc::new(instance(limiter).await));
    }
    let send = |rounds: usize| {
        let mut requests = Vec::new();
        for i in 0..rounds * usize::from(CLIENTS) {
            let app = Rc::clone(&apps[i % 2]);
            let peer = client((i % usize::from(CLIENTS)) as u8);
            requests.push(tokio::task::spawn_local(async move {
                let req = test::TestRequest::get()
                    .uri("/")
                    .peer_addr(peer)
                    .to_request();
                test::call_service(&*app, req).await.status().as_u16()
            }));
        }
        requests
    };
    let mut admitted = vec![0; usize::from(CLIENTS)];
    for (i, request) in send(20).into_iter().enumerate() {
        let status = request.await.unwrap();
        assert!(status == 200 || status == 429, "{status}");
        admitted[i % usize::from(CLIENTS)] += usize::from(status == 200);
    }
    assert_eq!(admitted, vec![5; usize::from(CLIENTS)]);
    let nodes: BTreeSet<usize> = (0..CLIENTS).map(|i| node_of_client(&cluster, i)).collect();
    assert_eq!(nodes.len(), 3, "the clients live on every node");

    cluster.on_every_node(&["CONFIG", "RESETSTAT"]);
    for request in send(200) {
        assert_eq!(request.await.unwrap(), 429);
    }
    let calls = cluster.calls("fcall") + cluster.calls("evalsha") + cluster.calls("eval");
    assert!(
        calls <= 2 * u64::from(CLIENTS),
        "{calls} calls for a flood of 4,800"
    );
}

/// The check's library is loaded on every primary: after `FUNCTION FLUSH` on every node (as
/// after a restart), the first check that finds no function loads it on all of them
/// again, and every check is one call of it.
#[::std::prelude::v1::test]
fn the_library_reloads_on_every_primary() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster));
    let limit = Limit::new("reload", Policy::new(100, Duration::from_secs(60)).unwrap());
    for key in 0..KEYS {
        assert!(rt
            .block_on(store.check(&limit, &[key], Duration::ZERO))
            .unwrap()
            .allowed());
    }
    cluster.on_every_node(&["FUNCTION", "FLUSH"]);
    cluster.on_every_node(&["CONFIG", "RESETSTAT"]);
    for round in 0..3u32 {
        for key in 0..KEYS {
            let decision = rt
                .block_on(store.check(&limit, &[key], Duration::ZERO))
                .unwrap();
            assert_eq!(decision.remaining(), 98 - round, "key {key}");
        }
    }
    assert_eq!(cluster.calls("function|load"), 3, "once per primary");
    assert_eq!(
        cluster.calls("fcall"),
        3 * u64::from(KEYS) + 1,
        "one per check (one answered that it had no function)"
    );
    assert_eq!(cluster.calls("eval") + cluster.calls("evalsha"), 0);
}

/// A burst of new clients on a cluster whose primaries lost the library (restarted): each
/// node's first call finds no function, one load (on every primary) is made while the
/// other calls meanwhile go as the script, and every client is admitted once, exactly.
#[::std::prelude::v1::test]
fn a_burst_after_the_library_is_lost_loads_it_once() {
    let cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster));
    let limit = Limit::new("lost", Policy::new(1, Duration::from_secs(60)).unwrap());
    assert!(concurrently(&rt, &store, &limit, &[b"warm-up".to_vec()])[0]);
    cluster.on_every_node(&["FUNCTION", "FLUSH"]);
    cluster.on_every_node(&["CONFIG", "RESETSTAT"]);
    let clients: Vec<Vec<u8>> = (0..600u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let first = concurrently(&rt, &store, &limit, &clients);
    let again = concurrently(&rt, &store, &limit, &clients);
    assert!(first.iter().all(|&admitted| admitted), "each admitted once");
    assert!(again.iter().all(|&admitted| !admitted), "and refused next");
    let loads = cluster.calls("function|load");
    println!(
        "{loads} loads (3 primaries); {} function calls, {} script calls",
        cluster.calls("fcall"),
        cluster.calls("evalsha") + cluster.calls("eval")
    );
    assert_eq!(loads, 3, "one load, on each primary");
}

// ---- a master fails -------------------------------------------------------------------------

const TIMEOUT: Duration = Duration::from_millis(200);
/// Scheduling slack on a shared machine, on top of the timeout.
const SLACK: Duration = Duration::from_millis(400);

/// A master is killed mid-run. The clients whose state it held get the fault policy, each
/// request within the timeout, and nothing panics; the clients on the other two nodes keep
/// their exact budgets, request after request, on both instances.
#[actix_web::test]
async fn a_killed_master_fails_its_own_slots_only() {
    for policy in [OnStoreError::FailClosed, OnStoreError::FailOpen] {
        let mut cluster = RedisCluster::start();
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = Limiter::builder()
                .store(connect(&cluster).await)
                .on_store_error(policy)
                .store_timeout(TIMEOUT)
                .build();
            apps.push(instance(limiter).await);
        }
        let call = |app: usize, i: u8| {
            let app = &apps[app];
            async move {
                let started = Instant::now();
                let req = test::TestRequest::get()
                    .uri("/")
                    .peer_addr(client(i))
                    .to_request();
                let status = test::call_service(app, req).await.status().as_u16();
                (status, started.elapsed())
            }
        };
        // Two requests per client, one on each instance.
        for i in 0..CLIENTS {
            assert_eq!(call(0, i).await.0, 200);
            assert_eq!(call(1, i).await.0, 200);
        }
        let node: Vec<usize> = (0..CLIENTS).map(|i| node_of_client(&cluster, i)).collect();
        cluster.kill(0);
        for round in 0..8 {
            for i in 0..CLIENTS {
                let (status, took) = call(usize::from(round % 2 == 1), i).await;
                if node[usize::from(i)] == 0 {
                    let expected = match policy {
                        OnStoreError::FailClosed => 503,
                        _ => 200,
                    };
                    assert_eq!(status, expected, "{policy:?}: client {i} on the dead node");
                    assert!(took <= TIMEOUT + SLACK, "{policy:?}: waited {took:?}");
                } else {
                    // 2 counted before, 3 more admitted, then rejections.
                    let expected = if round < 3 { 200 } else { 429 };
                    assert_eq!(
                        status,
                        expected,
                        "{policy:?}: client {i} on node {} in round {round}",
                        node[usize::from(i)]
                    );
                }
            }
        }
    }
}

/// A master fails and its replica takes over. The replica never ran the scripts (Redis does
/// not replicate its script cache), so the first check it serves runs the source; its
/// clients' state came with replication, and their budgets carry on exactly, on both
/// instances, as do everyone else's.
#[actix_web::test]
async fn a_replica_taking_over_gets_the_scripts_and_keeps_the_budgets() {
    let mut cluster = RedisCluster::start_with(1);
    let mut apps = Vec::new();
    for _ in 0..2 {
        let limiter = Limiter::builder()
            .store(connect(&cluster).await)
            .on_store_error(OnStoreError::FailClosed)
            .store_timeout(TIMEOUT)
            .build();
        apps.push(instance(limiter).await);
    }
    let call = |app: usize, i: u8| {
        let app = &apps[app];
        async move {
            let req = test::TestRequest::get()
                .uri("/")
                .peer_addr(client(i))
                .to_request();
            test::call_service(app, req).await.status().as_u16()
        }
    };
    for i in 0..CLIENTS {
        assert_eq!(call(0, i).await, 200);
        assert_eq!(call(1, i).await, 200);
    }
    let node: Vec<usize> = (0..CLIENTS).map(|i| node_of_client(&cluster, i)).collect();
    // One client of the failing master probes until its slots are served again; the
    // others are counted exactly.
    let probe = (0..CLIENTS).find(|&i| node[usize::from(i)] == 0).unwrap();
    // Replication is asynchronous: let the replicas catch up before the master goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.kill(0);
    let promoted = cluster.wait_for_failover(0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut probed = 2;
    loop {
        let status = call(0, probe).await;
        assert!(status == 200 || status == 429 || status == 503, "{status}");
        probed += usize::from(status == 200);
        if status != 503 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the promoted replica never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(probed <= 5);
    for round in 0..8 {
        for i in (0..CLIENTS).filter(|&i| i != probe) {
            let status = call(usize::from(round % 2 == 1), i).await;
            let expected = if round < 3 { 200 } else { 429 };
            assert_eq!(
                status,
                expected,
                "client {i} on node {} in round {round}",
                node[usize::from(i)]
            );
        }
    }
    // The promoted replica had the library (a load reaches a primary's replicas): it ran
    // the checks as its function.
    assert!(cluster.node(promoted).calls("fcall") >= 1);
    assert_eq!(cluster.node(promoted).calls("eval"), 0);
}

/// A stack whose second part lives on a node that is down fails (the fault policy answers
/// it), and the part its first node counted is given back: the request counts nowhere.
#[::std::prelude::v1::test]
fn a_stack_across_a_dead_node_gives_back_what_it_counted() {
    let mut cluster = RedisCluster::start();
    let rt = runtime();
    let store = rt.block_on(connect(&cluster)).use_caller_clock();
    let minute = Duration::from_secs(60);
    let a = Limit::new("across-a", Policy::new(5, minute).unwrap());
    let b = Limit::new("across-b", Policy::new(5, minute).unwrap());
    // A key for `a` on a node that stays, one for `b` on the node that goes.
    let alive = (0..=255u8)
        .find(|k| cluster.node_of(&store.key_name(&a, &[*k])) == 1)
        .unwrap();
    let dead = (0..=255u8)
        .find(|k| cluster.node_of(&store.key_name(&b, &[*k])) == 0)
        .unwrap();
    let now = Duration::from_secs(1_700_000_000);
    let (alive, dead) = ([alive], [dead]);
    let stack = [Charge::new(&a, &alive), Charge::new(&b, &dead)];
    let first = rt.block_on(store.check_all(&stack, now)).unwrap();
    assert!(first.iter().all(|d| d.allowed()));
    cluster.kill(0);
    for _ in 0..2 {
        let failed = rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), store.check_all(&stack, now)).await
        });
        assert!(matches!(failed, Ok(Err(_))), "{failed:?}");
    }
    // `a` alone: the first stack's unit and this one, nothing from the failed stacks.
    let alone = rt.block_on(store.check(&a, &alive, now)).unwrap();
    assert_eq!(alone.remaining(), 3);
}
