//! A `redis-server` (or `valkey-server`, see [`server_binary`]) of the tests' own, on a free
//! loopback port, that they can stop, pause and restart. Never the machine's standard Redis.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server the tests start: `redis-server`, or the one `LIMITER_REDIS_SERVER` names
/// (`.ci/run` runs the Redis tests again with `valkey-server`).
pub(crate) fn server_binary() -> String {
    std::env::var("LIMITER_REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

pub(crate) struct RedisServer {
    child: Option<Child>,
    port: u16,
    /// Options beyond the defaults (a cluster node's).
    options: Vec<String>,
}

impl RedisServer {
    /// A server on a free port; a port taken between choosing and binding it is given up
    /// for another.
    pub(crate) fn start() -> RedisServer {
        let mut failures = Vec::new();
        for _ in 0..5 {
            match RedisServer::try_start_on(free_port(), Vec::new()) {
                Ok(server) => return server,
                Err(why) => failures.push(why),
            }
        }
        panic!("{} did not start five times: {failures:?}", server_binary());
    }

    /// A server on `port` with more `options`.
    pub(crate) fn start_on(port: u16, options: Vec<String>) -> RedisServer {
        RedisServer::try_start_on(port, options).unwrap_or_else(|why| panic!("{why}"))
    }

    /// A server on `port` with more `options`, or why it did not start (the port was
    /// taken, the server exited, or it did not answer within 10 s).
    pub(crate) fn try_start_on(port: u16, options: Vec<String>) -> Result<RedisServer, String> {
        let mut server = RedisServer {
            child: None,
            port,
            options,
        };
        server.spawn()?;
        Ok(server)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    fn spawn(&mut self) -> Result<(), String> {
        let binary = server_binary();
        let mut child = Command::new(&binary)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(&self.options)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{binary} must be installed for the redis tests (apt-get install -y redis-server; .ci/install-valkey for valkey-server): {e}")
            });
        let pid = child.id().to_string();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return Err(format!("{binary} on port {} exited: {status}", self.port));
            }
            // The server that answers must be ours, not one that had the port first.
            if let Some(redis::Value::BulkString(info)) = self.try_command(&["INFO", "server"]) {
                let ours = String::from_utf8_lossy(&info)
                    .lines()
                    .any(|line| line.trim() == format!("process_id:{pid}"));
                if ours {
                    self.child = Some(child);
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{binary} on port {} did not answer in 10 s",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id, for reading its CPU time.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (its data goes with it).
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port.
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.spawn().unwrap_or_else(|why| panic!("{why}"));
    }

    /// SIGSTOP: the server holds its connections but answers nothing.
    pub(crate) fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT.
    pub(crate) fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    #[allow(unsafe_code)]
    fn signal(&self, signal: libc::c_int) {
        let pid = self.child.as_ref().expect("running").id() as libc::pid_t;
        // SAFETY: kill(2) with a pid we spawned and still own; no memory is involved.
        unsafe {
            libc::kill(pid, signal);
        }
    }

    /// Raises the server's priority (nice −10, when the tests may; else nothing changes).
    /// Tests that load their own host load the limiter's: in production Redis has a host of
    /// its own, and a Redis starved of CPU by the test is not the healthy Redis they mean.
    #[allow(unsafe_code)]
    pub(crate) fn prioritize(&self) {
        let pid = self.child.as_ref().expect("running").id();
        // SAFETY: setpriority(2) on a process we spawned and own; no memory is involved.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, pid, -10);
        }
    }

    /// Keeps the server on one CPU (benchmarks keep it off the measured server's).
    #[allow(unsafe_code)]
    pub(crate) fn pin_to_cpu(&self, cpu: usize) {
        let pid = self.child.as_ref().expect("running").id() as libc::pid_t;
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read and write it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    /// Runs a command on a connection of its own, with a short timeout.
    pub(crate) fn command(&self, args: &[&str]) -> redis::Value {
        self.try_command(args).expect("redis answered")
    }

    pub(crate) fn try_command(&self, args: &[&str]) -> Option<redis::Value> {
        let client = redis::Client::open(self.url()).ok()?;
        let mut connection = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        connection
            .set_read_timeout(Some(Duration::from_secs(2)))
            .ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut connection).ok()
    }

    /// The keys holding clients' states (their names carry a hash tag; the registry of
    /// limits, the overrides and the resets counter do not), if Redis answers.
    pub(crate) fn try_state_keys(&self) -> Option<i64> {
        match self.try_command(&["EVAL", "return #redis.call('KEYS', '*{*')", "0"])? {
            redis::Value::Int(n) => Some(n),
            _ => None,
        }
    }

    /// [`try_state_keys`](Self::try_state_keys), which must answer.
    pub(crate) fn state_keys(&self) -> i64 {
        self.try_state_keys().expect("redis answered")
    }

    pub(crate) fn integer(&self, args: &[&str]) -> i64 {
        match self.command(args) {
            redis::Value::Int(n) => n,
            other => panic!("expected an integer from {args:?}, got {other:?}"),
        }
    }

    /// Microseconds of Redis CPU per call of `command` since the last `CONFIG RESETSTAT`.
    pub(crate) fn usec_per_call(&self, command: &str) -> f64 {
        let info = self.text(&["INFO", "commandstats"]);
        cmdstat(&info, command, "usec_per_call").map_or(0.0, |usec| usec.parse().unwrap())
    }

    /// Microseconds Redis spent in the calls clients sent since the last `CONFIG RESETSTAT`:
    /// scripts and transactions (`FCALL`, `EVALSHA`, `EVAL`, `MULTI`, `EXEC`), whose time includes
    /// the commands run inside them — which `INFO commandstats` counts again under their own
    /// names, so those are left out — and `SET`, which the Redis store sends on its own for
    /// a new client's first check (the few a script runs are counted twice: a script's
    /// `SET` is of a client that came back).
    pub(crate) fn usec_of_calls(&self) -> u64 {
        let info = self.text(&["INFO", "commandstats"]);
        ["fcall", "evalsha", "eval", "multi", "exec", "set"]
            .iter()
            .filter_map(|command| cmdstat(&info, command, "usec"))
            .map(|usec| usec.parse::<u64>().unwrap())
            .sum()
    }

    /// Bytes Redis holds (`used_memory`).
    pub(crate) fn used_memory(&self) -> u64 {
        let info = self.text(&["INFO", "memory"]);
        info.lines()
            .find_map(|line| line.strip_prefix("used_memory:"))
            .map_or(0, |bytes| bytes.trim().parse().unwrap())
    }

    /// The reads of its connections Redis processed (`total_reads_processed`): the round
    /// trips it answered, and a read for each connection that closed.
    pub(crate) fn reads_processed(&self) -> u64 {
        let info = self.text(&["INFO", "stats"]);
        info.lines()
            .find_map(|line| line.strip_prefix("total_reads_processed:"))
            .map_or(0, |n| n.trim().parse().unwrap())
    }

    /// Every command called since the last `CONFIG RESETSTAT`: its name, calls and µs, from
    /// `INFO commandstats`.
    pub(crate) fn command_mix(&self) -> Vec<(String, u64, u64)> {
        let info = self.text(&["INFO", "commandstats"]);
        info.lines()
            .filter_map(|line| line.strip_prefix("cmdstat_"))
            .filter_map(|line| {
                let (name, fields) = line.split_once(':')?;
                let field = |wanted: &str| {
                    fields.split(',').find_map(|f| {
                        f.strip_prefix(wanted)?
                            .strip_prefix('=')?
                            .parse::<u64>()
                            .ok()
                    })
                };
                Some((name.to_string(), field("calls")?, field("usec")?))
            })
            .collect()
    }

    /// Calls of `command` since the last `CONFIG RESETSTAT`, from `INFO commandstats`.
    pub(crate) fn calls(&self, command: &str) -> u64 {
        let info = self.text(&["INFO", "commandstats"]);
        cmdstat(&info, command, "calls").map_or(0, |calls| calls.parse().unwrap())
    }

    /// Calls of the check, as the library's function or as the script, since the last
    /// `CONFIG RESETSTAT`.
    pub(crate) fn check_calls(&self) -> u64 {
        self.calls("fcall") + self.calls("evalsha") + self.calls("eval")
    }

    /// Calls of `command` Redis refused (an ACL, a wrong argument) since the last reset.
    pub(crate) fn rejected(&self, command: &str) -> u64 {
        let info = self.text(&["INFO", "commandstats"]);
        cmdstat(&info, command, "rejected_calls").map_or(0, |calls| calls.parse().unwrap())
    }
}

/// A port that is free now, with its cluster bus port (+10,000) free too. Both lie below
/// Linux's ephemeral range (32,768 and up), so no outgoing connection of a busy test takes
/// one between choosing and binding it; a clash with another test's choice is possible,
/// and the callers start again on a new port.
pub(crate) fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = DRAWN.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        // A cheap mix of time, process and draw: different tests, processes and tries
        // land on different ports.
        let mixed = (nanos ^ (u64::from(std::process::id()) << 20) ^ (n << 40))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let port = 10_000 + ((mixed >> 33) % 12_000) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok()
            && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
        {
            return port;
        }
    }
}

/// One field of `command`'s line in `INFO commandstats`
/// (`cmdstat_get:calls=2,usec=15,usec_per_call=7.50,...`), if it was called.
fn cmdstat<'a>(info: &'a str, command: &str, field: &str) -> Option<&'a str> {
    let prefix = format!("cmdstat_{command}:");
    let fields = info.lines().find_map(|line| line.strip_prefix(&prefix))?;
    fields.split(',').find_map(|f| {
        f.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix('='))
    })
}

impl RedisServer {
    /// What the server says it is, from `INFO server`: `valkey 8.0.1`, `redis 7.0.15`.
    pub(crate) fn version(&self) -> String {
        let info = self.text(&["INFO", "server"]);
        let field = |name: &str| {
            info.lines()
                .find_map(|line| line.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        match field("valkey_version:") {
            Some(version) => format!("valkey {version}"),
            None => format!("redis {}", field("redis_version:").unwrap_or_default()),
        }
    }

    /// A command's reply as text (`INFO`, `CLUSTER INFO`).
    pub(crate) fn text(&self, args: &[&str]) -> String {
        self.try_text(args).expect("redis answered with text")
    }

    /// The same, or nothing if the server does not answer (or not with text).
    pub(crate) fn try_text(&self, args: &[&str]) -> Option<String> {
        match self.try_command(args)? {
            redis::Value::BulkString(bytes) => String::from_utf8(bytes).ok(),
            redis::Value::VerbatimString { text, .. } => Some(text),
            redis::Value::SimpleString(text) => Some(text),
            _ => None,
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.resume();
        }
        self.stop();
    }
}
