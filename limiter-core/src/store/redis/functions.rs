//! The check as a function library (`FCALL`) where the server takes one, else as a script.
//!
//! Redis runs a script whole on every call: before a check is decided, each of the
//! functions it defines is made anew, and the call's policies parsed from their header.
//! Loaded as a library (Redis 7, Valkey), the same source makes its functions once, when
//! Redis loads it, and keeps the headers it parsed: a one-check call costs Redis about 30%
//! less (81,400 instructions against 120,200 as a script; `benches/script_callgrind.sh`).
//!
//! The store loads the library when it connects (`FUNCTION LOAD REPLACE`; on a cluster,
//! every primary). A server that does not have it (restarted, its functions flushed, a
//! primary that never had it) answers a call "Function not found": the library is loaded
//! again (one load at a time; a call sent before a load ended takes it as its own) and the
//! call sent again; if it still cannot be, the call goes as the script. A server that
//! refuses functions (Redis before 7, an ACL or a plan that forbids `FCALL` or `FUNCTION`)
//! gets the check as a script from then on; one that refuses a call for
//! want of memory, replicas or a good save gets that call as the script (see
//! [`refused_up_front`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use redis::{Arg, Cmd, RedisResult};

use super::scripts::Library;
use super::RedisStore;

/// The check's library, made once per process.
static LIBRARY: LazyLock<Library> = LazyLock::new(Library::check);

impl RedisStore {
    /// The start of a check call: the library's function, or the script where the server
    /// took no library.
    pub(super) fn check_command(&self) -> Cmd {
        if self.inner.functions.load(Ordering::Relaxed) {
            let mut command = redis::cmd("FCALL");
            command.arg(&LIBRARY.function);
            command
        } else {
            let mut command = redis::cmd("EVALSHA");
            command.arg(&self.inner.script.sha);
            command
        }
    }

    /// Runs `command`, a check call of [`check_command`](Self::check_command)'s: where the
    /// server does not have the library, loads it and sends the call again; where it
    /// cannot have it, or refuses the call before running it where it would run a script,
    /// sends the call as the script.
    pub(super) async fn run_check(&self, command: &Cmd) -> RedisResult<Vec<i64>> {
        let connection = &self.inner.connection;
        let script = &self.inner.script;
        if !is_function_call(command) {
            return connection.eval(script, command).await;
        }
        let as_script = || as_script(script, command);
        let sent = Instant::now();
        match connection.query(command).await {
            Err(e) if is_no_function(&e) => {
                if self.load_library(sent).await {
                    match connection.query(command).await {
                        // Loaded, and still not found where the call went (a proxy in front
                        // of several servers): scripts from then on.
                        Err(e) if is_no_function(&e) => {
                            self.inner.functions.store(false, Ordering::Relaxed);
                        }
                        other => return other,
                    }
                }
                connection.eval(script, &as_script()).await
            }
            Err(e) if refuses_functions(&e) => {
                self.inner.functions.store(false, Ordering::Relaxed);
                connection.eval(script, &as_script()).await
            }
            // A flood over its limit is still answered there by the script.
            Err(e) if refused_up_front(&e) => connection.eval(script, &as_script()).await,
            other => other,
        }
    }

    /// Loads the library (on every primary of a cluster) for a call sent at `sent` that
    /// found none: whether it is loaded. A load that ended after the call was sent is
    /// taken as this one's (the calls of a burst, sent before it, find none too). One load
    /// at a time, and none within [`LOAD_AGAIN_AFTER`] of one that failed (a primary down
    /// fails every load): the calls meanwhile go as the script. A server that refuses the
    /// load has check calls go as the script from then on.
    pub(super) async fn load_library(&self, sent: Instant) -> bool {
        let (loaded, failed) = *self.inner.loads.lock();
        if loaded.is_some_and(|at| at >= sent) {
            return true;
        }
        if failed.is_some_and(|at| at.elapsed() < LOAD_AGAIN_AFTER) {
            return false;
        }
        let Some(_loading) = Loading::start(&self.inner.loading) else {
            return false;
        };
        let outcome = self.inner.connection.query::<redis::Value>(&load()).await;
        let mut loads = self.inner.loads.lock();
        match outcome {
            Ok(_) => {
                loads.0 = Some(Instant::now());
                true
            }
            Err(e) => {
                self.load_failed(&e);
                loads.1 = Some(Instant::now());
                false
            }
        }
    }

    /// After the library's load failed with `error`: a server that refuses it (Redis
    /// before 7, an ACL, a server without Lua) has check calls go as the script from then
    /// on. Anything else (a server loading its data, out of memory, a lost connection)
    /// leaves the library to the next load.
    pub(super) fn load_failed(&self, error: &redis::RedisError) {
        let text = error.to_string().to_ascii_lowercase();
        // "engine": a server without Lua names the engine it lacks.
        if super::refused(&text) || text.contains("engine") {
            self.inner.functions.store(false, Ordering::Relaxed);
        }
    }
}

/// A load of the library is not tried again sooner than this after one failed.
const LOAD_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// The one load of the library in progress: ends (the flag cleared) when dropped, also
/// when the call that made it is given up midway.
struct Loading<'a>(&'a AtomicBool);

impl<'a> Loading<'a> {
    fn start(flag: &'a AtomicBool) -> Option<Loading<'a>> {
        // (Made only when taken: a `Loading` dropped clears the flag.)
        (!flag.swap(true, Ordering::AcqRel)).then(|| Loading(flag))
    }
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// `command` (`FCALL function ...`) as the script's call (`EVALSHA sha ...`, the same
/// arguments), which [`Connection::eval`](super::connection::Connection::eval) sends with
/// the source where the server does not know it.
fn as_script(script: &super::scripts::Script, command: &Cmd) -> Cmd {
    super::connection::with_head(command, "EVALSHA", script.sha.as_bytes())
}

/// `FUNCTION LOAD REPLACE` of the check's library.
pub(super) fn load() -> Cmd {
    let mut load = redis::cmd("FUNCTION");
    load.arg("LOAD").arg("REPLACE").arg(&LIBRARY.source);
    load
}

fn is_function_call(command: &Cmd) -> bool {
    matches!(command.args_iter().next(), Some(Arg::Simple(b"FCALL")))
}

/// Whether the server does not have the library's function (Redis and Valkey say it so).
pub(super) fn is_no_function(error: &redis::RedisError) -> bool {
    error
        .to_string()
        .to_ascii_lowercase()
        .contains("function not found")
}

/// Whether the server will not run `FCALL`: a Redis before 7 (an unknown command), or an
/// ACL or a plan that forbids it.
pub(super) fn refuses_functions(error: &redis::RedisError) -> bool {
    let text = error.to_string().to_ascii_lowercase();
    text.contains("fcall") && super::refused(&text)
}

/// Whether a check call answered `error` goes again alone (see `fresh.rs`), where
/// [`RedisStore::run_check`] or the script's source mends it: a server without the
/// script or the library, that refuses the library, or that refused it before it ran
/// (see [`refused_up_front`]).
pub(super) fn mended_alone(error: &redis::RedisError) -> bool {
    super::connection::is_no_script(error)
        || is_no_function(error)
        || refuses_functions(error)
        || refused_up_front(error)
}

/// Whether a server refused a call before running it for want of memory (`maxmemory` with
/// `noeviction`), of replicas (`min-replicas-to-write`) or of a good save (`MISCONF`): what
/// it does to a function that may write, where it runs a script and refuses its first write
/// only — which check.lua catches, answering the call's rejections as decided and its
/// admissions as undecided.
pub(super) fn refused_up_front(error: &redis::RedisError) -> bool {
    matches!(error.code(), Some("OOM" | "NOREPLICAS" | "MISCONF"))
}
