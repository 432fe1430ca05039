//! Forgetting one client's budget (a support desk unblocking a customer): [`Subject`] names
//! the client as requests are counted, [`Limiter::reset`] forgets its state.

use std::net::IpAddr;

use super::keys::{ip_key_of, ClientKey, Kind};
use crate::{Check, Limiter};

/// A client as a limit counts it, for [`Limiter::reset`]: the same value a key of that kind
/// takes from a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject<'a> {
    /// `key = "ip"`: an address (an IPv6 one stands for its whole prefix, as when counted).
    Address(IpAddr),
    /// `key = "user"`: the id the user resolver returns.
    User(&'a str),
    /// `key = "header:NAME"`: the header's value.
    Header(&'a [u8]),
    /// `key = path::to::fn`: what the function returns.
    Function(&'a str),
    /// A key given to [`check`](crate::check) inside a handler (a username, say).
    Checked(&'a str),
    /// `key = "global"`: the one budget everybody shares.
    Global,
    /// A store key as it is (what [`Store`](crate::Store)s are given): for a budget counted
    /// by the engine directly.
    Key(&'a [u8]),
}

impl From<IpAddr> for Subject<'_> {
    fn from(address: IpAddr) -> Self {
        Subject::Address(address)
    }
}

impl Limiter {
    /// Forgets `subject`'s state under every limit of `scope` (as declared, as overridden,
    /// and under each policy chosen per request): its next request starts afresh. In
    /// memory and in Redis alike; `Err` only when the store fails.
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use limiter::{Limiter, Subject};
    /// let limiter = Limiter::builder().build();
    /// // A support tool unblocks a customer who mistyped their password too often
    /// // (`.await` it in a handler; the in-memory store answers at once).
    /// let address: IpAddr = "203.0.113.7".parse().unwrap();
    /// limiter.reset("login", Subject::Address(address)).now_or_never().unwrap()?;
    /// limiter.reset("login-username", Subject::Checked("ann")).now_or_never().unwrap()?;
    /// # Ok::<(), limiter::StoreError>(())
    /// ```
    pub fn reset<'a>(&'a self, scope: &'a str, subject: Subject<'_>) -> Check<'a, ()> {
        let key = subject.key(self);
        Check::pending(async move { self.engine().reset(scope, key.as_bytes()).await })
    }
}

impl Limiter {
    /// The key a store counts `subject` under, with this limiter's IPv6 grouping: for tools
    /// that look a client up in a store (`RedisStore::status`, feature `redis`).
    ///
    /// ```
    /// use limiter::{Limiter, Subject};
    /// let limiter = Limiter::builder().build();
    /// assert_eq!(limiter.store_key(Subject::User("ann")), b"uann");
    /// ```
    pub fn store_key(&self, subject: Subject<'_>) -> Vec<u8> {
        subject.key(self).as_bytes().to_vec()
    }
}

impl Subject<'_> {
    fn key(self, limiter: &Limiter) -> ClientKey {
        match self {
            Subject::Address(address) => ip_key_of(address, limiter.ipv6_prefix()),
            Subject::User(id) => ClientKey::of(Kind::User, id.as_bytes()),
            Subject::Header(value) => ClientKey::of(Kind::Header, value),
            Subject::Function(value) => ClientKey::of(Kind::Function, value.as_bytes()),
            Subject::Checked(value) => ClientKey::checked(value.as_bytes()),
            Subject::Global => ClientKey::of(Kind::Global, b""),
            Subject::Key(key) => ClientKey::raw(key),
        }
    }
}
