//! One script call: a batch of checks as `FCALL` (or `EVALSHA`) arguments (each policy listed once, one
//! short argument per check), and the reply split back into each check's answer.

use std::fmt::Write as _;

use redis::RedisError;

use super::batch::{CheckArgs, Peek};
use super::{failure, RedisStore};
use crate::StoreError;

impl RedisStore {
    /// One script call deciding `checks` in order; each one's answer (three numbers per
    /// limit, then the clock reading).
    ///
    /// On a cluster node the checks may be of several hash slots, each slot's side by side:
    /// the first slot's names are the call's `KEYS` (which route it, and which a node takes
    /// of one slot only), the others' come last (see check.lua).
    pub(super) async fn call(&self, checks: &[&CheckArgs]) -> Result<Vec<Vec<i64>>, CallError> {
        let command = self.script_call(checks);
        let sent = std::time::Instant::now();
        match self.run_check(&command).await {
            Ok(reply) => self.answers(checks, reply, sent),
            Err(e) => {
                // Perhaps another server next: no reading of this one's clock is trusted.
                self.inner.server_clock.forget();
                Err(CallError::Redis(e))
            }
        }
    }

    /// The `FCALL` (or `EVALSHA`) deciding `checks` (see [`call`](Self::call)).
    pub(super) fn script_call(&self, checks: &[&CheckArgs]) -> redis::Cmd {
        let plan = Plan::of(checks);
        // The number of names of each slot's entries.
        let mut groups: Vec<(u16, u32)> = Vec::new();
        for entry in &plan.entries {
            let check = checks[entry.first];
            let names = u32::try_from(check.names.len()).unwrap_or(u32::MAX);
            match groups.last_mut() {
                Some((slot, count)) if *slot == check.slot => *count += names,
                _ => groups.push((check.slot, names)),
            }
        }
        let declared = groups.first().map_or(0, |&(_, count)| count as usize);
        let mut command = self.check_command();
        command.arg(declared);
        // A run's key is named once.
        let mut names = plan
            .entries
            .iter()
            .flat_map(|entry| &checks[entry.first].names);
        for name in names.by_ref().take(declared) {
            command.arg(name);
        }
        let min_ttl = self.min_ttl();
        // The header, packed big-endian: `min_ttl` (8 bytes), the number of policies (4),
        // and each policy — state (1), window_ms (8), max (4), interval_ns (8), capacity_ns
        // (8), then its penalty: block_ms (8), after (1), within_ms (8), escalated block_ms
        // (8), its calendar: period (1), offset (2), and its delay in ns (8). A script's
        // `tonumber` costs more than a `GET`: no number is parsed per call.
        let policies = &plan.policies;
        let mut header = Vec::with_capacity(12 + 65 * policies.len());
        header.extend_from_slice(&min_ttl.to_be_bytes());
        let count = u32::try_from(policies.len()).unwrap_or(u32::MAX);
        header.extend_from_slice(&count.to_be_bytes());
        for policy in policies {
            // The state code (below 8) and `max` (a u32) as the header holds them.
            header.push(u8::try_from(policy[0]).unwrap_or(u8::MAX));
            header.extend_from_slice(&policy[1].to_be_bytes());
            header.extend_from_slice(&u32::try_from(policy[2]).unwrap_or(u32::MAX).to_be_bytes());
            header.extend_from_slice(&policy[3].to_be_bytes());
            header.extend_from_slice(&policy[4].to_be_bytes());
            header.extend_from_slice(&policy[5].to_be_bytes());
            // At most 16 strikes (`Penalty::MAX_STRIKES`).
            header.push(u8::try_from(policy[6]).unwrap_or(u8::MAX));
            header.extend_from_slice(&policy[7].to_be_bytes());
            header.extend_from_slice(&policy[8].to_be_bytes());
            // The period (below 4) and the offset + 840 (at most 1,680).
            header.push(u8::try_from(policy[9]).unwrap_or(u8::MAX));
            header.extend_from_slice(&u16::try_from(policy[10]).unwrap_or(u16::MAX).to_be_bytes());
            header.extend_from_slice(&policy[11].to_be_bytes());
        }
        if groups.len() > 1 {
            for (_, count) in &groups {
                header.extend_from_slice(&count.to_be_bytes());
            }
        }
        command.arg(header);
        // The plan: a byte per entry, its policy's number for the usual check (one limit
        // without a penalty, one unit, the server's clock), and for a run of them 255 and
        // its length less one; else 0 and the check in full in an argument of its own. One
        // argument for most of a batch: Redis makes a string of every argument.
        let mut bytes = Vec::with_capacity(plan.entries.len());
        let mut given = Vec::new();
        for entry in &plan.entries {
            if let Some(byte) = entry.usual {
                bytes.push(byte);
                if entry.len > 1 {
                    bytes.push(RUN);
                    bytes.push(u8::try_from(entry.len - 1).unwrap_or(u8::MAX));
                }
                continue;
            }
            let check = checks[entry.first];
            bytes.push(0);
            let mut arg = String::with_capacity(32);
            if let Some(now) = check.now {
                let _ = write!(arg, "{now}");
            }
            let peek = match check.peek {
                Peek::No => 0,
                Peek::Read => 1,
                Peek::Status => 2,
            };
            let _ = write!(arg, ";{peek}");
            for (number, limit) in plan.numbers(checks, entry.first).iter().zip(&check.limits) {
                let _ = write!(arg, ";{number}:{}", limit[COST]);
            }
            given.push(arg);
        }
        command.arg(bytes);
        for arg in given {
            command.arg(arg);
        }
        for name in names {
            command.arg(name);
        }
        command
    }

    /// Each check's answer in the script's `reply` to a call of `checks` sent at `sent`.
    pub(super) fn answers(
        &self,
        checks: &[&CheckArgs],
        reply: Vec<i64>,
        sent: std::time::Instant,
    ) -> Result<Vec<Vec<i64>>, CallError> {
        let plan = Plan::of(checks);
        let expected: usize = plan
            .entries
            .iter()
            .map(|entry| match entry.len {
                1 => 3 * checks[entry.first].limits.len(),
                _ => RUN_ANSWER,
            })
            .sum();
        if reply.len() != expected + 1 {
            return Err(CallError::Reply(StoreError::msg(format!(
                "the rate limit script answered {} numbers for {} checks",
                reply.len(),
                checks.len()
            ))));
        }
        let (answers, server_clock) = reply.split_at(expected);
        self.inner.server_clock.note(server_clock[0], sent);
        let mut rest = answers;
        let mut out = Vec::with_capacity(checks.len());
        for entry in &plan.entries {
            let check = checks[entry.first];
            // Each answer ends with the reading it was decided at.
            let clock = check.now.map_or(server_clock[0], |now| {
                i64::try_from(now).unwrap_or(i64::MAX)
            });
            if entry.len == 1 {
                let (answer, after) = rest.split_at(3 * check.limits.len());
                rest = after;
                let mut answer = answer.to_vec();
                answer.push(clock);
                out.push(answer);
                continue;
            }
            // A run: how many it admitted, the first's answer, then the refusal's remaining
            // and wait (see check.lua): the i-th admitted has i units fewer left.
            let (run, after) = rest.split_at(RUN_ANSWER);
            rest = after;
            let admitted = usize::try_from(run[0]).unwrap_or(0);
            for i in 0..entry.len {
                out.push(match i < admitted {
                    true => vec![run[1], run[2] - i as i64, run[3], clock],
                    false => vec![0, run[4], run[5], clock],
                });
            }
        }
        Ok(out)
    }

    /// How long every key written must live at least (ms): with the caller's clock, a
    /// minute of Redis's own time (see [`CALLER_CLOCK_MIN_TTL_MS`]).
    pub(super) fn min_ttl(&self) -> u64 {
        if self.inner.caller_clock {
            CALLER_CLOCK_MIN_TTL_MS
        } else {
            0
        }
    }
}

/// Where a check's limit numbers (see [`CheckArgs`]) hold the cost: before it, the policy.
const COST: usize = 12;

/// The plan byte that makes the usual check before it a run (followed by its length less
/// one); the usual checks' policies are numbered below it.
const RUN: u8 = 255;
/// The numbers a run is answered with.
const RUN_ANSWER: usize = 6;

/// A call's checks as the script reads them: each distinct policy numbered once, and the
/// checks as entries, where a busy client's usual checks of one key side by side are one.
struct Plan<'a> {
    policies: Vec<&'a [u64]>,
    /// Every check's limits' policy numbers (from 1), one check's after another's.
    numbered: Vec<usize>,
    /// Where each check's are in `numbered`.
    starts: Vec<usize>,
    entries: Vec<Entry>,
}

/// One check, or a run of usual checks of one key.
struct Entry {
    /// The index of its (first) check.
    first: usize,
    /// How many checks it stands for.
    len: usize,
    /// Its policy's number, when it is the usual check.
    usual: Option<u8>,
}

impl<'a> Plan<'a> {
    fn of(checks: &[&'a CheckArgs]) -> Plan<'a> {
        let mut policies: Vec<&[u64]> = Vec::new();
        let mut numbered = Vec::with_capacity(checks.len());
        let mut starts = Vec::with_capacity(checks.len());
        let mut entries: Vec<Entry> = Vec::with_capacity(checks.len());
        for (at, check) in checks.iter().enumerate() {
            let start = numbered.len();
            starts.push(start);
            for limit in &check.limits {
                let policy = &limit[..COST];
                numbered.push(match policies.iter().position(|p| *p == policy) {
                    Some(at) => at + 1,
                    None => {
                        policies.push(policy);
                        policies.len()
                    }
                });
            }
            let usual = usual(check, &numbered[start..]);
            if let (Some(byte), Some(last)) = (usual, entries.last_mut()) {
                if last.usual == Some(byte)
                    && last.len < usize::from(u8::MAX) + 1
                    && checks[last.first].names == check.names
                    && runs(check)
                {
                    last.len += 1;
                    continue;
                }
            }
            entries.push(Entry {
                first: at,
                len: 1,
                usual,
            });
        }
        Plan {
            policies,
            numbered,
            starts,
            entries,
        }
    }

    /// The policy numbers of check `at`'s limits.
    fn numbers(&self, checks: &[&CheckArgs], at: usize) -> &[usize] {
        let start = self.starts[at];
        &self.numbered[start..start + checks[at].limits.len()]
    }
}

/// The policy number of the usual check — one limit without a penalty, one unit, the
/// server's clock, counting — which the plan names in one byte.
fn usual(check: &CheckArgs, numbers: &[usize]) -> Option<u8> {
    match (numbers, &check.limits[..], check.now, check.peek) {
        ([number], [limit], None, Peek::No) if limit[COST] == 1 && limit[5] == 0 => {
            u8::try_from(*number).ok().filter(|n| (1..RUN).contains(n))
        }
        _ => None,
    }
}

/// Whether a usual check's algorithm leaves exactly one unit fewer with each check admitted
/// at one reading, and waits as long: a fixed window, a sliding log (either form) or a
/// calendar quota (scripts.rs's codes 2, 1 and 5, 6). Those checks of one key side by side
/// are answered as a run.
fn runs(check: &CheckArgs) -> bool {
    matches!(check.limits[0][0], 1 | 2 | 5 | 6)
}

/// With the caller's clock, keys live at least this long in Redis's own time (a minute): the
/// caller's time need not run at Redis's pace, and expiry must not cut a window short.
const CALLER_CLOCK_MIN_TTL_MS: u64 = 60_000;

/// Why a script call failed: Redis (or the connection to it), or a reply that makes no
/// sense.
pub(super) enum CallError {
    Redis(RedisError),
    Reply(StoreError),
}

impl CallError {
    /// Whether the call may succeed if sent again at once: its connection dropped under it
    /// (or was refused, while it reconnects). Not a timeout: the call may be running in
    /// Redis still. A connection that drops after Redis ran the call, before its reply, has
    /// its checks counted twice — erring on the side of the limit.
    pub(super) fn is_transient(&self) -> bool {
        matches!(self, CallError::Redis(e) if (e.is_connection_dropped() || e.is_connection_refusal()) && !e.is_timeout())
    }

    /// Whether Redis refused the call at once, as a server up and answering does: out of
    /// memory (`OOM`), short of replicas (`NOREPLICAS`), a script of someone else's running
    /// (`BUSY`), a failed save refusing writes (`MISCONF`). The checks behind it go on their
    /// own. Not errors the client makes itself (a connection that failed to log in repeats
    /// its error), nor ones a cluster client retries with a backoff (`LOADING`, `TRYAGAIN`,
    /// `CLUSTERDOWN`): those may be a stall.
    pub(super) fn was_answered(&self) -> bool {
        matches!(self, CallError::Redis(e)
            if super::functions::refused_up_front(e)
                || matches!(e.code(), Some("BUSY" | "MISCONF")))
    }

    /// The failure a check gets, marked a refusal where Redis [answered](Self::was_answered).
    pub(super) fn into_store_error(self) -> StoreError {
        let refusal = self.was_answered();
        let error = match self {
            CallError::Redis(e) => failure("Redis check failed", e),
            CallError::Reply(e) => e,
        };
        match refusal {
            true => error.of_refusal(),
            false => error,
        }
    }
}
