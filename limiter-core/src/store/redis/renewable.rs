//! A connection manager the store replaces where redis's would never connect again.
//!
//! redis's `ConnectionManager` connects again after an I/O error only. One whose attempt to
//! connect failed otherwise keeps that failure for good: every call through it fails at
//! once, until the process restarts, even after the server lets the store in again. That
//! is the case of a login refused (a password changed, a server restarted with another
//! one) or answered with any other error, and of a database the server would not switch
//! to. So a call that meets such a failure has its manager
//! replaced by a new one, which connects on its next use, once, without the retries of the
//! first (a refusal is not a blip, and calls would wait out those retries' backoff only to
//! time out, naming no cause): at most every [`RENEW_EVERY`]. Meanwhile calls get the
//! failure at once, which names the refusal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::RedisError;

/// The least time between two replacements of a manager for a failure it keeps.
const RENEW_EVERY: Duration = Duration::from_millis(250);

/// A connection manager, and the client and configuration to make its replacement with.
pub(super) struct Renewable {
    manager: ArcSwap<ConnectionManager>,
    /// None over a manager made elsewhere (`RedisStore::from_manager`): nothing to make
    /// another with.
    client: Option<(redis::Client, ConnectionManagerConfig)>,
    renewed: parking_lot::Mutex<Option<Instant>>,
    /// A failure the manager keeps came within [`RENEW_EVERY`] of its making: the next
    /// call after that time gets a new one, rather than the failure once more (after the
    /// server let the store in again, a quiet minute later, say).
    due: AtomicBool,
}

impl Renewable {
    /// `manager`, made with `client` and `config` (if known).
    pub(super) fn new(
        manager: ConnectionManager,
        client: Option<(redis::Client, ConnectionManagerConfig)>,
    ) -> Renewable {
        Renewable {
            manager: ArcSwap::from_pointee(manager),
            client,
            renewed: parking_lot::Mutex::new(None),
            due: AtomicBool::new(false),
        }
    }

    /// A manager made with `client` and `config`, which connects on its first use; `None`
    /// where the configuration makes none.
    pub(super) fn lazy(
        client: redis::Client,
        config: ConnectionManagerConfig,
    ) -> Option<Renewable> {
        let manager =
            ConnectionManager::new_lazy_with_config(client.clone(), config.clone()).ok()?;
        Some(Renewable::new(manager, Some((client, config))))
    }

    /// The manager calls go over now: a new one if the last kept a failure and was made
    /// [`RENEW_EVERY`] ago or more.
    pub(super) fn get(&self) -> ConnectionManager {
        if self.due.load(Ordering::Relaxed) && !self.renewed_lately() {
            self.renew_without_retries();
        }
        (**self.manager.load()).clone()
    }

    /// Replaces the manager with a new one, made on its next use. Calls still out on the old
    /// one keep it until they end. Made within the runtime its I/O is to run on.
    pub(super) fn renew(&self) {
        self.renew_with(|config| config);
    }

    fn renew_with(&self, adapt: impl FnOnce(ConnectionManagerConfig) -> ConnectionManagerConfig) {
        let Some((client, config)) = &self.client else {
            return;
        };
        let config = adapt(config.clone());
        if let Ok(manager) = ConnectionManager::new_lazy_with_config(client.clone(), config) {
            self.manager.store(std::sync::Arc::new(manager));
            *self.renewed.lock() = Some(Instant::now());
            self.due.store(false, Ordering::Relaxed);
        }
    }

    fn renew_without_retries(&self) {
        self.renew_with(|config| config.set_number_of_retries(0));
    }

    fn renewed_lately(&self) -> bool {
        self.renewed
            .lock()
            .is_some_and(|at| at.elapsed() < RENEW_EVERY)
    }

    /// After a call over this manager failed with `error`: renews it if the failure is one
    /// the manager keeps for good (see the module's comment), now or, within
    /// [`RENEW_EVERY`] of the last renewal, at the first call after.
    pub(super) fn after_error(&self, error: &RedisError) {
        if !kept_for_good(error) {
            return;
        }
        match self.renewed_lately() {
            true => self.due.store(true, Ordering::Relaxed),
            false => self.renew_without_retries(),
        }
    }
}

/// Whether `error` may be a failure to connect that redis's manager keeps (any but an I/O
/// error): a login refused or answered with an error — `AUTH`'s (which redis reports as
/// `AuthenticationFailed`) or, over RESP3, `HELLO`'s in the server's words (`WRONGPASS`, a
/// full server's `max number of clients`) — or a database not switched to. A command's
/// error of those words only costs a connection made again, at most every
/// [`RENEW_EVERY`].
fn kept_for_good(error: &RedisError) -> bool {
    if error.is_io_error() {
        return false;
    }
    let text = error.to_string();
    error.kind() == redis::ErrorKind::AuthenticationFailed
        || [
            "WRONGPASS",
            "max number of clients",
            "refused to switch database",
            "refused to authenticate",
        ]
        .iter()
        .any(|words| text.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_to_connect_that_are_not_io_are_kept_for_good() {
        let refused = RedisError::from((
            redis::ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        ));
        let no_database = RedisError::from((
            redis::ServerErrorKind::ResponseError.into(),
            "Redis server refused to switch database",
            "ERR DB index is out of range".to_string(),
        ));
        let dropped = RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        let resp3_refused = RedisError::from((
            redis::ServerErrorKind::ResponseError.into(),
            "An error was signalled by the server",
            "WRONGPASS invalid username-password pair or user is disabled.".to_string(),
        ));
        let full = RedisError::from((
            redis::ServerErrorKind::ResponseError.into(),
            "An error was signalled by the server",
            "max number of clients reached".to_string(),
        ));
        let no_script = RedisError::from((
            redis::ServerErrorKind::NoScript.into(),
            "NOSCRIPT",
            "No matching script".to_string(),
        ));
        assert!(kept_for_good(&refused));
        assert!(kept_for_good(&no_database));
        assert!(kept_for_good(&resp3_refused));
        assert!(kept_for_good(&full));
        assert!(!kept_for_good(&dropped));
        assert!(!kept_for_good(&no_script));
    }
}
