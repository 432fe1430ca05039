//! A restart is not an amnesty: a memory store saved and restored decides, after the
//! downtime, exactly as the same store would have had it kept running through it — every
//! algorithm, random schedules, a clock that kept running (the same boot) or one that
//! started again from another reading (a new machine); damaged, foreign and missing files
//! are refused with their reason, and the store starts empty.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use limiter_core::{Algorithm, Limit, MemoryStore, Policy, RestoreError};
use proptest::prelude::*;

/// A file of this test's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Scratch(
            std::env::temp_dir().join(format!("limiter-restart-{}-{n}.state", std::process::id())),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Midday, 1 December 2026.
fn wall() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_126_400)
}

fn policy(algorithm: Algorithm, max: u32, window_s: u64, burst: u32) -> Policy {
    let policy = Policy::for_algorithm(algorithm, max, Duration::from_secs(window_s)).unwrap();
    match algorithm {
        Algorithm::TokenBucket => policy.with_burst(burst).unwrap(),
        _ => policy,
    }
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// Checks: (milliseconds since the previous one, key, cost).
fn schedule() -> impl Strategy<Value = Vec<(u64, u8, u32)>> {
    prop::collection::vec((0u64..2_500, 0u8..4, 1u32..3), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("LIMITER_THOROUGH").is_some() { 2_000 } else { 300 }))]

    #[test]
    fn a_restored_store_decides_as_one_that_kept_running(
        algorithm in algorithm(),
        max in 1u32..6,
        window_s in 1u64..20,
        burst in 1u32..6,
        before in schedule(),
        after in schedule(),
        downtime_ms in prop_oneof![3 => 0u64..30_000, 1 => 30_000u64..40 * 86_400_000],
        same_clock in any::<bool>(),
        windows_off in -3i64..40,
        start_s in 600u64..700,
    ) {
        let policy = policy(algorithm, max, window_s, burst);
        let limit = Limit::new("restart", policy);
        let kept = MemoryStore::new();
        let mut now = start_s * 1_000;
        for &(gap, key, cost) in &before {
            now += gap;
            kept.check_all_at(&[limiter_core::Charge::new(&limit, &[key]).cost(cost)], ms(now));
        }
        let file = Scratch::new();
        kept.save_at(&file.0, ms(now), wall()).unwrap();
        // The new process's clock: the old one, run on through the downtime, or another
        // reading altogether (whole windows away from it, since the counter's windows are
        // aligned to the clock; the other algorithms are also tried off that grid).
        let resumed = now + downtime_ms;
        let new_clock = if same_clock {
            resumed
        } else {
            let off = windows_off * (window_s as i64) * 1_000
                + if algorithm == Algorithm::SlidingWindowCounter { 0 } else { 137 };
            // A clock within 2 s of the old one run on is taken for it (the same boot):
            // the test's other clocks are further off.
            let off = match (off.abs() <= 2_000, algorithm) {
                (false, _) => off,
                (true, Algorithm::SlidingWindowCounter) => 0,
                (true, _) => off + 5_000,
            };
            (resumed as i64 + off).max(0) as u64
        };
        let restored = MemoryStore::new()
            .restore_at(&file.0, ms(new_clock), wall() + ms(downtime_ms))
            .unwrap();
        let (mut old_now, mut new_now) = (resumed, new_clock);
        for &(gap, key, cost) in &after {
            old_now += gap;
            new_now += gap;
            let key = [key];
            let charge = [limiter_core::Charge::new(&limit, &key).cost(cost)];
            let want = kept.check_all_at(&charge, ms(old_now))[0];
            let got = restored.check_all_at(&charge, ms(new_now))[0];
            prop_assert_eq!(
                (got.allowed(), got.remaining(), got.retry_after(), got.reset_after()),
                (want.allowed(), want.remaining(), want.retry_after(), want.reset_after()),
                "{} key {} cost {} at {} (restored clock {})", policy, key[0], cost, old_now, new_now
            );
        }
    }
}

#[test]
fn a_block_of_15_minutes_has_5_left_after_10_minutes_down() {
    for algorithm in Algorithm::ALL {
        let policy = policy(algorithm, 3, 900, 3);
        let limit = Limit::new("login", policy);
        let store = MemoryStore::new();
        let at = ms(7_200_000);
        for _ in 0..3 {
            assert!(store.check_at(&limit, b"203.0.113.7", at).allowed());
        }
        let file = Scratch::new();
        assert_eq!(store.save_at(&file.0, at, wall()).unwrap(), 1);
        // A new machine: its clock reads 5 s, ten minutes later — but for the counter, whose
        // windows are aligned to the clock (a new clock moves them by up to half a window),
        // the clock that kept running.
        let clock = match algorithm {
            Algorithm::SlidingWindowCounter => 7_800_000,
            _ => 5_000,
        };
        let restored = MemoryStore::new()
            .restore_at(&file.0, ms(clock), wall() + ms(600_000))
            .unwrap();
        let refused = restored.check_at(&limit, b"203.0.113.7", ms(clock));
        println!(
            "{algorithm}: after the restart, Retry-After {:?}",
            refused.retry_after()
        );
        // As the store that kept running says ten minutes on; for the log and the fixed
        // window, the 5 minutes left of the block.
        let kept = store.check_at(&limit, b"203.0.113.7", at + ms(600_000));
        assert_eq!(refused.retry_after(), kept.retry_after(), "{algorithm}");
        assert_eq!(refused.allowed(), kept.allowed(), "{algorithm}");
        if matches!(algorithm, Algorithm::SlidingWindow | Algorithm::FixedWindow) {
            assert_eq!(refused.retry_after(), Some(ms(300_000)), "{algorithm}");
        }
        assert!(restored
            .check_at(&limit, b"198.51.100.1", ms(clock))
            .allowed());
    }
}

#[test]
fn a_long_downtime_forgets_what_it_outlived() {
    // Hours past a counter's 2^15 windows of 1 s, and weeks past the 2^31 ms a 32-bit stamp
    // tells apart: the blocks are over, on the clock that ran on and on a new one.
    for algorithm in Algorithm::ALL {
        let policy = policy(algorithm, 2, 1, 2);
        let limit = Limit::new("down", policy);
        for downtime in [ms(10 * 3_600_000), ms(30 * 86_400_000), ms(45 * 86_400_000)] {
            for same_clock in [true, false] {
                let store = MemoryStore::new();
                let at = ms(1_000_000);
                for _ in 0..3 {
                    store.check_at(&limit, b"c", at);
                }
                let file = Scratch::new();
                store.save_at(&file.0, at, wall()).unwrap();
                let now = if same_clock { at + downtime } else { ms(7_000) };
                let restored = MemoryStore::new()
                    .restore_at(&file.0, now, wall() + downtime)
                    .unwrap();
                assert!(restored.is_empty(), "{algorithm} after {downtime:?}");
                assert!(
                    restored.check_at(&limit, b"c", now).allowed(),
                    "{algorithm}"
                );
            }
        }
    }
}

/// FNV-1a, as the file's hash: a crafted file is one whose hash matches.
fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `bytes` with the field at `at` replaced and the hash made to match.
fn crafted(bytes: &[u8], at: usize, field: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at..at + field.len()].copy_from_slice(field);
    let body = out.len() - 8;
    let hash = fnv(&out[..body]);
    out[body..].copy_from_slice(&hash.to_le_bytes());
    out
}

#[test]
fn a_crafted_file_cannot_block_anyone_or_panic() {
    // The header: magic 16, version 4, secret 16, probe 8, clock 8, wall 8, tables 4 (64
    // bytes); a table: id 8, algorithm 1, max 4, window 8, burst 4, delay 8, penalty 32,
    // entries 4 (69); then each entry: fingerprint 8 and its state 8.
    const CLOCK: usize = 52;
    const STATE: usize = 64 + 69 + 8;
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::TokenBucket,
        Algorithm::SlidingWindowCounter,
    ] {
        let limit = Limit::new("crafted", policy(algorithm, 2, 60, 2));
        let store = MemoryStore::new();
        store.check_at(&limit, b"c", ms(1_000_000));
        let file = Scratch::new();
        store.save_at(&file.0, ms(1_000_000), wall()).unwrap();
        let good = std::fs::read(&file.0).unwrap();
        let restore = |bytes: &[u8]| {
            std::fs::write(&file.0, bytes).unwrap();
            MemoryStore::new().restore_at(&file.0, ms(1_000_000), wall())
        };
        assert_eq!(restore(&good).unwrap().len(), 1);
        // States no policy counts: a count far above the maximum, a window or a bucket far
        // in the future, every bit set.
        for state in [
            (1_000_000u64 << 32) | 1_000,
            u64::from(u32::MAX) << 32 | 1,
            u64::MAX,
            (2_000_000_000u64 * 1_000_000) << 1,
        ] {
            let restored = restore(&crafted(&good, STATE, &state.to_le_bytes())).unwrap();
            let decision = restored.check_at(&limit, b"c", ms(1_000_000));
            let wait = decision.retry_after().unwrap_or_default();
            assert!(
                wait <= ms(60_000),
                "{algorithm}, state {state:#x}: refused for {wait:?}"
            );
        }
        // Clock readings at the ends of their range.
        for clock in [u64::MAX, 1 << 63, 0] {
            let result = restore(&crafted(&good, CLOCK, &clock.to_le_bytes()));
            if let Ok(restored) = result {
                let decision = restored.check_at(&limit, b"c", ms(1_000_000));
                assert!(decision.retry_after().unwrap_or_default() <= ms(60_000));
            }
        }
    }
}

#[test]
fn damaged_foreign_old_and_missing_files_are_refused_with_their_reason() {
    let limit = Limit::new("login", policy(Algorithm::SlidingWindow, 2, 60, 1));
    let store = MemoryStore::new();
    store.check_at(&limit, b"a", ms(1_000));
    let file = Scratch::new();
    store.save_at(&file.0, ms(1_000), wall()).unwrap();
    let good = std::fs::read(&file.0).unwrap();
    let restore = |bytes: &[u8]| {
        std::fs::write(&file.0, bytes).unwrap();
        MemoryStore::new().restore_at(&file.0, ms(1_000), wall())
    };
    assert!(restore(&good).is_ok());

    let mut flipped = good.clone();
    flipped[60] ^= 0x10;
    let error = restore(&flipped).unwrap_err();
    assert!(matches!(error, RestoreError::Corrupt(_)), "{error}");
    assert!(error.to_string().contains("damaged"), "{error}");

    let error = restore(&good[..good.len() - 3]).unwrap_err();
    assert!(matches!(error, RestoreError::Corrupt(_)), "{error}");

    let error = restore(b"{\"not\": \"a state file\"}").unwrap_err();
    assert!(matches!(error, RestoreError::NotSaved), "{error}");
    assert!(restore(b"").is_err());

    let mut newer = good.clone();
    newer[16..20].copy_from_slice(&3u32.to_le_bytes());
    let error = restore(&newer).unwrap_err();
    assert!(
        matches!(error, RestoreError::Version { found: 3, reads: 2 }),
        "{error}"
    );
    assert!(error.to_string().contains("format 3"), "{error}");

    std::fs::remove_file(&file.0).unwrap();
    let error = MemoryStore::new()
        .restore_at(&file.0, ms(1_000), wall())
        .unwrap_err();
    assert!(matches!(error, RestoreError::Missing), "{error}");
    // And the fallback: an empty store, never a panic.
    let empty = MemoryStore::new().restore_or_empty_at(&file.0, ms(1_000), wall());
    assert!(empty.is_empty());
    std::fs::write(&file.0, &flipped).unwrap();
    assert!(MemoryStore::new()
        .restore_or_empty_at(&file.0, ms(1_000), wall())
        .is_empty());
}

#[test]
fn a_restore_stays_within_the_stores_bounds() {
    let limit = Limit::new("flood", policy(Algorithm::FixedWindow, 5, 60, 1));
    let store = MemoryStore::new();
    for n in 0..20_000u32 {
        store.check_at(&limit, &n.to_be_bytes(), ms(1_000));
    }
    let file = Scratch::new();
    assert_eq!(store.save_at(&file.0, ms(1_000), wall()).unwrap(), 20_000);
    let small = MemoryStore::with_max_keys(5_000)
        .restore_at(&file.0, ms(1_000), wall())
        .unwrap();
    // The store's own bound: 5,000 keys over 16 shards, 313 each.
    assert!(
        small.len() <= 5_008 && small.len() > 4_000,
        "{}",
        small.len()
    );
    assert!(small.bytes() <= small.max_bytes());
}

/// A million keys written and read back (in a release build; a tenth of them in debug).
/// Printed, not asserted: the machines are shared.
#[test]
fn a_million_keys_are_written_and_read_in_well_under_a_second() {
    let keys: u32 = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    let limit = Limit::new("many", policy(Algorithm::SlidingWindow, 5, 60, 1));
    let store = MemoryStore::new();
    for n in 0..keys {
        store.check_at(&limit, &n.to_be_bytes(), ms(1_000));
    }
    // A million keys fill a default store's shards unevenly: it holds a few less.
    let held = store.len();
    assert!(held > keys as usize * 99 / 100);
    let file = Scratch::new();
    let started = Instant::now();
    assert_eq!(store.save_at(&file.0, ms(1_000), wall()).unwrap(), held);
    let saved = started.elapsed();
    let bytes = std::fs::metadata(&file.0).unwrap().len();
    let started = Instant::now();
    let restored = MemoryStore::new()
        .restore_at(&file.0, ms(2_000), wall() + ms(1_000))
        .unwrap();
    let read = started.elapsed();
    assert_eq!(restored.len(), held);
    println!(
        "{held} keys: saved in {saved:?}, read back in {read:?}, {bytes} bytes ({} per key)",
        bytes / held as u64
    );
}

/// The save file carries the whole policy: a bucket's delay comes back with it, a new
/// client after the restart waits its turn instead of a 429, and a client holding tokens
/// taken ahead keeps owing them.
#[test]
fn a_delay_and_tokens_taken_ahead_survive_a_restart() {
    let smooth = Policy::for_algorithm(Algorithm::TokenBucket, 1, Duration::from_secs(1))
        .unwrap()
        .with_delay(Duration::from_secs(2))
        .unwrap();
    let limit = Limit::new("smooth", smooth);
    // One shard: the new client's state sits beside the restored one.
    let store = MemoryStore::with_max_keys(256);
    let t = ms(10_000);
    assert!(store.check_at(&limit, b"a", t).allowed());
    assert_eq!(store.check_at(&limit, b"a", t).delayed(), Some(ms(1_000)));
    let file = Scratch::new();
    store.save_at(&file.0, t, wall()).unwrap();
    let restored = MemoryStore::with_max_keys(256)
        .restore_at(&file.0, t, wall())
        .unwrap();
    let a = restored.check_at(&limit, b"a", t);
    assert_eq!(
        a.delayed(),
        Some(ms(2_000)),
        "tokens taken ahead kept: {a:?}"
    );
    assert!(restored.check_at(&limit, b"b", t).allowed());
    let b = restored.check_at(&limit, b"b", t);
    assert_eq!(
        b.delayed(),
        Some(ms(1_000)),
        "a new client waits its turn: {b:?}"
    );
}

/// A file of many limits restored into a small store: a table is kept only with a state
/// in it, and the store stays within its bytes.
#[test]
fn a_restore_of_many_limits_stays_within_the_stores_bytes() {
    let store = MemoryStore::new();
    for n in 0..3_000u32 {
        let limit = Limit::new(
            format!("limit-{n}"),
            policy(Algorithm::FixedWindow, 5, 60, 1),
        );
        store.check_at(&limit, &n.to_be_bytes(), ms(1_000));
    }
    let file = Scratch::new();
    store.save_at(&file.0, ms(1_000), wall()).unwrap();
    let small = MemoryStore::with_bounds(1_000_000, 64 << 10)
        .restore_at(&file.0, ms(1_000), wall())
        .unwrap();
    println!(
        "3,000 limits into 64 KiB: {} keys, {} bytes",
        small.len(),
        small.bytes()
    );
    assert!(!small.is_empty());
    assert!(small.bytes() <= small.max_bytes(), "{}", small.bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if std::env::var_os("LIMITER_THOROUGH").is_some() { 3_000 } else { 300 }))]

    /// Any bytes of a file changed (its hash made to match): never a panic, a store within
    /// its bounds, and nobody refused for longer than a month's quota waits.
    #[test]
    fn a_damaged_or_crafted_file_is_refused_or_bounded(
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..12),
    ) {
        let limits = [
            Limit::new("log", policy(Algorithm::SlidingWindow, 2, 60, 1)),
            Limit::new(
                "bucket",
                policy(Algorithm::TokenBucket, 2, 1, 2).with_delay(ms(500)).unwrap()
                    .with_penalty(limiter_core::Penalty::block(Duration::from_secs(900)).unwrap()),
            ),
            Limit::new(
                "blocks",
                policy(Algorithm::FixedWindow, 1, 60, 1)
                    .with_penalty(limiter_core::Penalty::block(Duration::from_secs(900)).unwrap()),
            ),
        ];
        let now = ms(1_000_000);
        let store = MemoryStore::with_bounds(64, 1 << 20);
        for limit in &limits {
            for key in [b"a", b"b"] {
                for _ in 0..3 {
                    store.check_at(limit, key, now);
                }
            }
        }
        let file = Scratch::new();
        store.save_at(&file.0, now, wall()).unwrap();
        let mut bytes = std::fs::read(&file.0).unwrap();
        let body = bytes.len() - 8;
        for (at, byte) in changes {
            bytes[at.index(body)] = byte;
        }
        let hash = fnv(&bytes[..body]);
        bytes[body..].copy_from_slice(&hash.to_le_bytes());
        std::fs::write(&file.0, &bytes).unwrap();
        if let Ok(restored) = MemoryStore::with_bounds(64, 1 << 20).restore_at(&file.0, now, wall()) {
            prop_assert!(restored.bytes() <= restored.max_bytes());
            prop_assert!(restored.len() <= 64 + 8);
            for limit in &limits {
                for key in [b"a", b"b"] {
                    let wait = restored.check_at(limit, key, now).retry_after().unwrap_or_default();
                    prop_assert!(wait <= Duration::from_secs(31 * 86_400), "{wait:?}");
                }
            }
        }
    }
}
