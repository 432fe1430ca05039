//! Forgetting one client's budget (a support desk unblocking a customer): [`Subject`] names
//! the client as requests are counted, `Limiter::reset` (in the facade, `limiter`) forgets
//! its state.

use std::net::IpAddr;

use crate::{ip_key_of, ClientKey, Kind};

/// A client as a limit counts it, for `Limiter::reset` (in the facade, `limiter`): the same
/// value a key of that kind takes from a request.
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
    /// A key given to `limiter::check` inside a handler (a username, say).
    Checked(&'a str),
    /// `key = "global"`: the one budget everybody shares.
    Global,
    /// A store key as it is (what `limiter_core::Store`s are given): for a budget counted
    /// by the engine directly.
    Key(&'a [u8]),
}

impl From<IpAddr> for Subject<'_> {
    fn from(address: IpAddr) -> Self {
        Subject::Address(address)
    }
}

impl Subject<'_> {
    /// The key a store counts this client under, an IPv6 address grouped by its
    /// `ipv6_prefix` bits.
    #[doc(hidden)]
    pub fn key(self, ipv6_prefix: u8) -> ClientKey {
        match self {
            Subject::Address(address) => ip_key_of(address, ipv6_prefix),
            Subject::User(id) => ClientKey::of(Kind::User, id.as_bytes()),
            Subject::Header(value) => ClientKey::of(Kind::Header, value),
            Subject::Function(value) => ClientKey::of(Kind::Function, value.as_bytes()),
            Subject::Checked(value) => ClientKey::checked(value.as_bytes()),
            Subject::Global => ClientKey::of(Kind::Global, b""),
            Subject::Key(key) => ClientKey::raw(key),
        }
    }
}
