//! The check as a function library (`FCALL`) where the server takes one, else as a script.
//!
//! Redis runs a script whole on every call: before a check is decided, each of the
//! functions it defines is made anew, and the call's policies parsed from their header.
//! Loaded as a library (Redis 7, Valkey), the same source makes its functions once, when
//! Redis loads it, and keeps the headers it parsed: a one-check call costs Redis about 30%
//! less (83,000 instructions against 122,000 as a script; `benches/script_callgrind.sh`).
//!
//! The store loads the library when it connects (`FUNCTION LOAD REPLACE`; on a cluster,
//! every primary). A server that does not have it (restarted, its functions flushed, a
//! primary that never had it) answers a call "Function not found": the library is loaded
//! again and the call sent again; if it still cannot be, the call goes as the script. A
//! server that refuses functions (Redis before 7, an ACL or a plan that forbids `FCALL` or
//! `FUNCTION`) gets scripts from then on, as before libraries were used.

use std::sync::atomic::Ordering;
use std::sync::LazyLock;

use redis::{Arg, Cmd, RedisResult};

use super::connection::as_script;
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
    /// cannot have it, sends the call as the script.
    pub(super) async fn run_check(&self, command: &Cmd) -> RedisResult<Vec<i64>> {
        let connection = &self.inner.connection;
        let script = &self.inner.script;
        if !is_function_call(command) {
            return connection.eval(script, command).await;
        }
        match connection.query(command).await {
            Err(e) if is_no_function(&e) => {
                if self.load_library().await {
                    match connection.query(command).await {
                        Err(e) if is_no_function(&e) => {}
                        other => return other,
                    }
                }
                connection.query(&as_script(script, command)).await
            }
            Err(e) if refuses_functions(&e) => {
                self.inner.functions.store(false, Ordering::Relaxed);
                connection.query(&as_script(script, command)).await
            }
            other => other,
        }
    }

    /// Loads the library (on every primary of a cluster): whether it loaded. A server that
    /// answers the load with an error has check calls go as the script from then on; a
    /// connection that failed leaves that to the next call.
    pub(super) async fn load_library(&self) -> bool {
        match self.inner.connection.query::<redis::Value>(&load()).await {
            Ok(_) => true,
            Err(e) => {
                self.load_failed(&e);
                false
            }
        }
    }

    /// After the library's load failed with `error`: a server that answered it (an error
    /// of its own, not a lost connection) has check calls go as the script from then on.
    pub(super) fn load_failed(&self, error: &redis::RedisError) {
        if error.code().is_some() {
            self.inner.functions.store(false, Ordering::Relaxed);
        }
    }
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
    text.contains("fcall")
        && ["unknown command", "noperm", "no permissions"]
            .iter()
            .any(|word| text.contains(word))
}

/// Whether a check call answered `error` goes again alone (see `fresh.rs`), where
/// [`RedisStore::run_check`] or the script's source mends it: a server without the
/// script or the library, or that refuses the library.
pub(super) fn mended_alone(error: &redis::RedisError) -> bool {
    super::connection::is_no_script(error) || is_no_function(error) || refuses_functions(error)
}
