//! A second connection to a server, for asking whether it is alive when a call's answer is
//! late (see `deadline.rs`).
//!
//! What it asks is an `EXISTS` of a key in the store's namespace (which need not exist): a
//! command a proxy in front of Redis must forward, where it may answer a `PING` itself, and
//! one an ACL that limits the store to its keys allows. So an answer means a Redis answers.
//!
//! It is connected when the server's connection is made, not by the first late call (whose
//! half a timeout may not cover a connection's handshakes), and used every [`KEEPALIVE`]: a
//! balancer or a NAT that drops idle flows, or a server whose `timeout` closes idle
//! clients, would otherwise leave it dead when a call needs it. A failure to connect that
//! redis's manager would keep for good (a refused login) has it made again
//! (`renewable.rs`): a probe that never answers again leaves every late call failed at once.

use std::sync::Arc;
use std::time::Duration;

use redis::RedisError;

use super::connection::single_config;
use super::renewable::Renewable;

/// How often the probe's connection is used while no call is late.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// One server's probe connection; its upkeep stops when the last copy is dropped.
#[derive(Clone)]
pub(super) struct Probe(Arc<Renewable>);

impl Probe {
    /// A probe connection made with `client`, connected now by a task of the runtime this
    /// is called in, which then keeps it in use. `None` where the client's configuration
    /// makes no connection manager.
    pub(super) fn start(client: redis::Client) -> Option<Probe> {
        let probe = Probe(Arc::new(Renewable::lazy(client, single_config())?));
        let kept = Arc::downgrade(&probe.0);
        tokio::spawn(async move {
            while let Some(renewable) = kept.upgrade() {
                let mut connection = renewable.get();
                // Its answer does not matter but for a failure the manager would keep: a
                // connection that failed is made again by this use or the next.
                let answer = redis::cmd("PING").query_async::<()>(&mut connection).await;
                if let Err(e) = answer {
                    renewable.after_error(&e);
                }
                drop((connection, renewable));
                tokio::time::sleep(KEEPALIVE).await;
            }
        });
        Some(probe)
    }

    /// Whether the server answers an `EXISTS` of a key under `prefix` (any number: alive),
    /// or the error it gave.
    pub(super) async fn answers(&self, prefix: &str) -> Result<(), RedisError> {
        let mut connection = self.0.get();
        let answer = redis::cmd("EXISTS")
            .arg(format!("{prefix}:probe"))
            .query_async::<i64>(&mut connection)
            .await;
        match answer {
            Ok(_) => Ok(()),
            Err(e) => {
                self.0.after_error(&e);
                Err(e)
            }
        }
    }
}
