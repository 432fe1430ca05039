//! Concurrency limits: at most `N` requests of one client in flight at once
//! (`#[concurrency_limit(4, key = "user")]`). A request takes a slot when it is admitted and
//! gives it back when its response is sent — on every path: a [`SlotGuard`] gives it back
//! when dropped, whatever drops it (a panic's unwinding, a client that went away, a
//! streaming body dropped half way).
//!
//! In memory a slot is a count under the key's shard lock. On Redis it is a lease: a member
//! of a sorted set scored by its expiry, renewed while the request runs, so that an
//! instance that dies without giving its slots back leaks none for longer than a lease.

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::sync::OnceLock;

/// A cap on requests in flight: at most `max` of one key at once, under a scope.
///
/// Its [`id`](Concurrency::id) is the first 8 bytes (big-endian) of the SHA-1 of
/// `SCOPE \n concurrency \n MAX`, stable across processes (Redis key names carry it).
///
/// ```
/// use limiter::Concurrency;
/// let uploads = Concurrency::new("uploads", 4).unwrap();
/// assert_eq!(uploads.max().get(), 4);
/// assert_eq!(uploads.to_string(), "4 in flight");
/// ```
#[derive(Debug)]
pub struct Concurrency {
    scope: Cow<'static, str>,
    max: NonZeroU32,
    id: OnceLock<u64>,
}

impl Concurrency {
    /// At most `max` (at least 1) requests of one key in flight under `scope`.
    pub fn new(scope: impl Into<Cow<'static, str>>, max: u32) -> Option<Concurrency> {
        Some(Concurrency {
            scope: scope.into(),
            max: NonZeroU32::new(max)?,
            id: OnceLock::new(),
        })
    }

    /// At most `max` requests of one key in flight under `scope`.
    pub fn of(scope: impl Into<Cow<'static, str>>, max: NonZeroU32) -> Concurrency {
        Concurrency {
            scope: scope.into(),
            max,
            id: OnceLock::new(),
        }
    }

    /// The scope's name.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Requests of one key in flight at most.
    pub fn max(&self) -> NonZeroU32 {
        self.max
    }

    /// A 64-bit identity of (scope, max), the same in every process.
    pub fn id(&self) -> u64 {
        *self.id.get_or_init(|| {
            let text = format!("{}\nconcurrency\n{}", self.scope, self.max);
            let digest = sha1_smol::Sha1::from(text.as_bytes()).digest().bytes();
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(first)
        })
    }
}

impl Clone for Concurrency {
    fn clone(&self) -> Concurrency {
        Concurrency {
            scope: self.scope.clone(),
            max: self.max,
            id: self.id.clone(),
        }
    }
}

/// `4 in flight`: the route table's words.
impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in flight", self.max)
    }
}

/// A slot a store gave: whose it is, and the lease that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    limit: u64,
    key: Box<[u8]>,
    lease: u64,
    left: u32,
}

impl Slot {
    /// The slot of `key` under the concurrency limit `limit` (its id), named `lease`, with
    /// `left` slots of the key still free once it was taken.
    pub fn new(limit: u64, key: &[u8], lease: u64, left: u32) -> Slot {
        Slot {
            limit,
            key: key.into(),
            lease,
            left,
        }
    }

    /// The key's slots still free when it was taken.
    pub fn left(&self) -> u32 {
        self.left
    }

    /// The id of the concurrency limit it belongs to.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The key it was taken for.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The lease's name: unique among the key's slots.
    pub fn lease(&self) -> u64 {
        self.lease
    }
}

/// What asking for a slot came to.
#[derive(Debug)]
pub enum Acquired {
    /// A slot, to give back with [`Store::release`](crate::Store::release).
    Slot(Slot),
    /// None free: `max` requests of the key are in flight.
    Full,
}

/// Why a request got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSlot {
    /// `max` requests of its key are in flight.
    Full,
    /// The store could not be asked, and the fault policy refuses.
    Unavailable,
}
