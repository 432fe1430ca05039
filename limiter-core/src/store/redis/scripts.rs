//! The four algorithms as one Lua check: one atomic round trip per request, whatever the
//! number of limits it is checked against, the same rules as [`algorithm`](crate::algorithm),
//! and the same decisions as the in-memory store. Sent as a function library (`FCALL`) or
//! as a script (`EVALSHA`), one source for both (see `functions.rs`).
//!
//! One call decides a batch of checks, in order, each as if sent alone. `KEYS` are the
//! checks' keys, each holding one key's state under one limit. (On a cluster node a call may
//! carry several slots' checks: `KEYS` are then the first slot's, the header ends with the
//! number of names of each slot's checks, 4 bytes each, and the other slots' names are the
//! last arguments; the script reads each slot's keys before it writes anything and answers
//! the error `LIMITER_ELSEWHERE` if the node does not serve one.) `ARGV[1]` is a packed header
//! (big-endian): `min_ttl_ms` (8 bytes), the number of distinct policies (4) and five values
//! for each — `state` (1 byte: 1 sliding window with a long log, 5 with a short one, 2
//! fixed window, 3 counter, 4 bucket; see [`code`]), `window_ms` (8), `max` (4),
//! `interval_ns` (8), `capacity_ns` (8). `ARGV[2]` is the plan, a byte per check: its
//! policy's number (1 to 254) for the usual check (one limit, one unit, the server's clock),
//! followed by 255 and a count n for a run of n + 1 such checks of one key side by side (a
//! fixed window, a log or a calendar quota: its key named once, its answer six numbers —
//! how many it admitted, the first's three, the refusal's remaining and wait), else 0,
//! the check then being the next argument, `now;peek;policy:cost;...`. Few arguments, and
//! no number to parse for the header or a usual check: Redis makes a string of every
//! argument, and a script's `tonumber` costs more than a `GET`. Without a `now` the script reads the Redis server's
//! clock (`TIME`, once per call), so instances with skewed clocks agree. It answers three
//! numbers per key, `allowed, remaining, wait_ns`, with the meaning of
//! [`Store::check_all`](crate::Store) (the request is counted by every limit or by none),
//! then, last, the server's clock reading (ms) the checks without a `now` were decided at
//! (0 if none). With `peek` = 1 or 2 a check counts nothing and answers as if another
//! limit had rejected it (each limit's rejection, or where it stands): for checks whose
//! keys live on several cluster nodes; with 1 a limit that rejects it itself still starts
//! its penalty's block (as that node would alone), with 2 nothing at all changes.
//!
//! A reading earlier than a key's state — the server's clock stepping back, or callers
//! whose clocks differ — is treated as the newest instant the state holds: nothing is
//! dropped or reset by it. Expiry only reclaims memory — every algorithm ignores state that
//! no longer counts — so a caller with a clock of its own (tests moving a manual clock, not
//! in step with Redis's) passes a `min_ttl_ms` that keeps keys alive while it works. Every
//! key written gets an expiry.
//!
//! Lua numbers are doubles: integers are exact below 2⁵³. [`Policy`](crate::Policy) keeps
//! every number these scripts compute below that (the counter's `max × window`, the
//! bucket's capacity in nanoseconds, waits of two windows at most); `idiv` corrects the
//! rounding of a floating division.

use std::sync::LazyLock;

use crate::{Algorithm, Policy};

/// The check as a script (`EVALSHA`): `script_head.lua`, `first_state.lua` (what the check
/// and the refund share), and `check.lua` with the body of its `run` as the script's own
/// (a script that made `run` would pay for its many upvalues on every call).
pub(super) static SCRIPT: LazyLock<String> = LazyLock::new(|| {
    let check = include_str!("check.lua")
        .replacen(RUN_STARTS, "", 1)
        .replacen(RUN_ENDS, "", 1);
    [
        include_str!("script_head.lua"),
        include_str!("first_state.lua"),
        &check,
    ]
    .concat()
});

/// The lines around `run`'s body in check.lua.
const RUN_STARTS: &str = "local function run(KEYS, ARGV)\n";
const RUN_ENDS: &str = "end -- run\n";

/// The check as a function library (`FCALL`, Redis 7 and Valkey): the same source, its
/// functions made once when Redis loads it rather than on every call (about 30% of what a
/// one-check call costs Redis; see `functions.rs`). Named by the SHA-1 of its own source,
/// so that instances of two versions, side by side in a rolling deploy, each call their own.
pub(crate) struct Library {
    /// The library, for `FUNCTION LOAD REPLACE`.
    pub(crate) source: String,
    /// The function a check calls.
    pub(crate) function: String,
}

impl Library {
    /// The check's library.
    pub(crate) fn check() -> Library {
        // Named after its own source (the name in it written as `@ID@` for the hash): a
        // change of the check or of its registration names a new library.
        // A call's keys may be of several slots a cluster node serves (see check.lua), which
        // a function may touch only when it says so; a script may by default.
        let template = format!(
            "#!lua name=limiter_@ID@\nlocal make = nil\n{}{}redis.register_function{{\
             function_name = 'limiter_check_@ID@', callback = run, \
             flags = {{'allow-cross-slot-keys'}}}}\n",
            include_str!("first_state.lua"),
            include_str!("check.lua"),
        );
        let id = &sha1_smol::Sha1::from(&template).digest().to_string()[..16];
        Library {
            source: template.replace("@ID@", id),
            function: format!("limiter_check_{id}"),
        }
    }
}

/// Gives back what a check counted (`count = "failures"`), by its receipt, with the rules of
/// the algorithms' `refund`. `KEYS[i]` as for the check; `ARGV` is `now_ms` (empty for the
/// server's clock) followed by six values per key: `state` ([`code`]), `window_ms, interval_ns, cost,
/// mark_ms, mark_ns` (the mark of the check's receipt, in milliseconds and the nanoseconds
/// beyond them). Only what is still counted of the check's own units comes back.
const REFUND: &str = concat!(include_str!("first_state.lua"), include_str!("refund.lua"));

/// The script: its source and the SHA-1 that `EVALSHA` names it by.
pub(crate) struct Script {
    pub(crate) source: &'static str,
    pub(crate) sha: String,
}

impl Script {
    /// The check, for every algorithm and any number of limits.
    pub(crate) fn check() -> Script {
        Script::of(&SCRIPT)
    }

    /// The refund.
    pub(crate) fn refund() -> Script {
        Script::of(REFUND)
    }

    /// Taking and renewing concurrency slots (see `slots.lua`).
    pub(crate) fn slots() -> Script {
        Script::of(include_str!("slots.lua"))
    }

    fn of(source: &'static str) -> Script {
        Script {
            source,
            sha: sha1_smol::Sha1::from(source).digest().to_string(),
        }
    }
}

/// The longest sliding log kept as a packed string (see `short_log` in check.lua): 4 bytes
/// an instant, but read and rewritten whole. Longer ones are lists (about 10 bytes an
/// instant), whose pushes and trims touch only their ends.
pub(crate) const SHORT_LOG_MOST: u32 = 128;

/// The number the scripts know a policy's state by: its algorithm, for the sliding window
/// whether its log is short (a packed string) or long (a list), and 6 for a calendar quota.
pub(crate) fn code(policy: &Policy) -> u8 {
    if policy.calendar().is_some() {
        return 6;
    }
    match policy.algorithm() {
        Algorithm::SlidingWindow if policy.max().get() <= SHORT_LOG_MOST => 5,
        Algorithm::SlidingWindow => 1,
        Algorithm::FixedWindow => 2,
        Algorithm::SlidingWindowCounter => 3,
        Algorithm::TokenBucket => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script is check.lua with `run`'s body as its own: the two lines around the body
    /// are found once each, and gone from the script.
    #[test]
    fn the_script_is_the_body_of_run() {
        let check = include_str!("check.lua");
        for line in [RUN_STARTS, RUN_ENDS] {
            assert_eq!(check.matches(line).count(), 1, "check.lua: {line:?}");
            assert!(!SCRIPT.contains(line), "the script: {line:?}");
        }
        let library = Library::check();
        assert!(library.source.starts_with("#!lua name=limiter_"));
        assert!(library.source.contains(RUN_STARTS));
        assert!(library.source.contains(&format!("'{}'", library.function)));
    }
}
