//! Who is being limited right now: per scope, the clients rejected most over the last one to
//! two minutes, in a space-saving summary (Metwally et al.) of a fixed size — so that an
//! operator asking "who?" during an attack gets names, and a flood of distinct clients costs
//! no more memory than one.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use super::fnv::Fnv;
use crate::ClientKey;

/// Counters per summary: any client with more than 1/`SLOTS` of an epoch's rejections is in
/// it, its count over by at most that much.
const SLOTS: usize = 64;
/// How long one summary counts before it becomes the previous one: what is shown covers
/// the last one to two epochs.
const EPOCH: Duration = Duration::from_secs(60);
/// The most scopes tracked per limiter: scopes are declared in code, but a `Limit` made per
/// request for `limiter::check` could name new ones without end.
const MOST_SCOPES: usize = 1_024;
/// How many clients a scope shows.
pub const SHOWN: usize = 10;

/// A client among the most rejected of a scope, as `Limiter::rejected_clients` (in the
/// facade, `limiter`) lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RejectedClient {
    /// The client as the limit keys it: `203.0.113.7`, `2001:db8::/56`, `user:ann`; the
    /// value of a header or a key function is shown as `header:sha1:…` (its digest's first
    /// 8 bytes) unless `LimiterBuilder::trace_keys` is on, since it is
    /// often a secret (an API key).
    pub client: String,
    /// Its rejections over the last one to two minutes: at most this many, and at least
    /// this many less the summary's possible overcount (`rejections - overcount`).
    pub rejections: u64,
    /// By how much `rejections` may be over (a client that took the place of another in the
    /// summary inherits its count as an upper bound); 0 for a client counted from its first
    /// rejection on.
    pub overcount: u64,
}

/// Scope → its summaries. Scopes are the program's own names, not a client's: a hash of a
/// few instructions serves them (SipHash would cost a rejection more than the rest).
type Scopes = HashMap<Box<str>, Arc<Mutex<Recent>>, BuildHasherDefault<Fnv>>;

/// The rejected clients of every scope of one limiter.
#[derive(Default)]
pub struct RejectedClients {
    scopes: ArcSwap<Scopes>,
    adding: Mutex<()>,
}

impl RejectedClients {
    /// Counts one rejection of `key` under `scope` at `now` (the limiter's clock).
    /// A summary is a sample of a flood: a rejection that finds the scope's summary busy
    /// on another worker is not counted, rather than make rejections queue for it.
    pub fn add(&self, scope: &str, key: &ClientKey, now: Duration) {
        if let Some(recent) = self.scopes.load().get(scope) {
            if let Some(mut recent) = recent.try_lock() {
                recent.add(key, now);
            }
            return;
        }
        if let Some(recent) = self.scope(scope) {
            recent.lock().add(key, now);
        }
    }

    /// The summary of a scope seen for the first time; `None` past [`MOST_SCOPES`].
    #[cold]
    fn scope(&self, scope: &str) -> Option<Arc<Mutex<Recent>>> {
        let _adding = self.adding.lock();
        let scopes = self.scopes.load_full();
        if let Some(recent) = scopes.get(scope) {
            return Some(Arc::clone(recent));
        }
        if scopes.len() >= MOST_SCOPES {
            return None;
        }
        let recent = Arc::new(Mutex::new(Recent::default()));
        let mut more = Scopes::clone(&scopes);
        more.insert(scope.into(), Arc::clone(&recent));
        self.scopes.store(Arc::new(more));
        Some(recent)
    }

    /// The [`SHOWN`] most rejected clients of `scope` at `now`, most first, with the keys
    /// shown as `describe` says.
    pub fn top(
        &self,
        scope: &str,
        now: Duration,
        describe: impl Fn(&ClientKey) -> String,
    ) -> Vec<RejectedClient> {
        let Some(recent) = self.scopes.load().get(scope).map(Arc::clone) else {
            return Vec::new();
        };
        let counted = recent.lock().top(now);
        counted
            .into_iter()
            .map(|(key, rejections, overcount)| RejectedClient {
                client: describe(&key),
                rejections,
                overcount,
            })
            .collect()
    }

    /// The scopes with rejections counted, sorted.
    pub fn scopes(&self) -> Vec<String> {
        let mut scopes: Vec<String> = self.scopes.load().keys().map(|s| s.to_string()).collect();
        scopes.sort_unstable();
        scopes
    }
}

/// One scope's summaries: this epoch's and the one before.
#[derive(Default)]
struct Recent {
    epoch: u64,
    current: Summary,
    previous: Summary,
}

impl Recent {
    /// Moves on to the epoch of `now`; `false` when `now` lies in an earlier one (another
    /// worker's later reading came first).
    fn roll(&mut self, now: Duration) -> bool {
        let epoch = now.as_secs() / EPOCH.as_secs();
        if epoch <= self.epoch {
            return epoch == self.epoch;
        }
        self.previous = match epoch - self.epoch {
            1 => std::mem::take(&mut self.current),
            _ => {
                self.current = Summary::default();
                Summary::default()
            }
        };
        self.epoch = epoch;
        true
    }

    fn add(&mut self, key: &ClientKey, now: Duration) {
        match self.roll(now) {
            true => self.current.add(key),
            // A reading of the epoch just ended counts there; an older one is dropped.
            false if now.as_secs() / EPOCH.as_secs() + 1 == self.epoch => self.previous.add(key),
            false => {}
        }
    }

    /// The two epochs' counts summed per client, most first, the first [`SHOWN`].
    fn top(&mut self, now: Duration) -> Vec<(ClientKey, u64, u64)> {
        let _ = self.roll(now);
        let mut merged: Vec<(ClientKey, u64, u64)> = Vec::with_capacity(2 * SLOTS);
        for slot in self.current.slots.iter().chain(&self.previous.slots) {
            match merged
                .iter_mut()
                .find(|(key, _, _)| key.as_bytes() == slot.key.as_bytes())
            {
                Some((_, count, over)) => {
                    *count += slot.count;
                    *over += slot.over;
                }
                None => merged.push((slot.key.clone(), slot.count, slot.over)),
            }
        }
        // A client missing from one summary may have had up to that summary's least count
        // there: bound its overcount honestly.
        let floor = |summary: &Summary| match summary.slots.len() {
            SLOTS => summary.slots.iter().map(|s| s.count).min().unwrap_or(0),
            _ => 0,
        };
        let (floor_current, floor_previous) = (floor(&self.current), floor(&self.previous));
        for (key, count, over) in &mut merged {
            let holds = |summary: &Summary| summary.position(key).is_some();
            if !holds(&self.current) {
                *count += floor_current;
                *over += floor_current;
            }
            if !holds(&self.previous) {
                *count += floor_previous;
                *over += floor_previous;
            }
        }
        // Most rejected first by what is sure (the count less its overcount): under a flood
        // of distinct clients every counter holds about the same upper bound, and only the
        // sure part tells a heavy client from a newcomer that took a light one's place.
        merged.sort_by(|a, b| (b.1 - b.2).cmp(&(a.1 - a.2)).then(b.1.cmp(&a.1)));
        merged.truncate(SHOWN);
        merged
    }
}

/// A space-saving summary: [`SLOTS`] counters; a client not among them takes the place of
/// the least counted, inheriting its count as its overcount.
#[derive(Default)]
struct Summary {
    slots: Vec<Slot>,
}

struct Slot {
    /// A cheap hash of the key, compared before its bytes.
    hash: u64,
    key: ClientKey,
    count: u64,
    over: u64,
}

impl Summary {
    fn position(&self, key: &ClientKey) -> Option<usize> {
        let hash = hash(key.as_bytes());
        self.slots
            .iter()
            .position(|s| s.hash == hash && s.key.as_bytes() == key.as_bytes())
    }

    fn add(&mut self, key: &ClientKey) {
        if let Some(i) = self.position(key) {
            self.slots[i].count += 1;
            return;
        }
        let slot = |count: u64, over: u64| Slot {
            hash: hash(key.as_bytes()),
            key: key.clone(),
            count,
            over,
        };
        if self.slots.len() < SLOTS {
            self.slots.push(slot(1, 0));
            return;
        }
        if let Some(least) = self.slots.iter_mut().min_by_key(|s| s.count) {
            *least = slot(least.count + 1, least.count);
        }
    }
}

/// FNV-1a (see [`Fnv`]): a handful of instructions for a short key. Keys chosen to collide
/// only cost the byte comparison that follows.
fn hash(bytes: &[u8]) -> u64 {
    let mut fnv = Fnv::default();
    fnv.write(bytes);
    fnv.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> ClientKey {
        ClientKey::raw(&n.to_be_bytes())
    }

    fn top_of(clients: &RejectedClients, now: Duration) -> Vec<(String, u64)> {
        clients
            .top("s", now, |k| format!("{:?}", k.as_bytes()))
            .into_iter()
            .map(|c| (c.client, c.rejections))
            .collect()
    }

    #[test]
    fn heavy_clients_among_a_flood_of_light_ones_are_named_in_order() {
        let clients = RejectedClients::default();
        let now = Duration::from_secs(600);
        // Three heavy clients (300, 200, 100 rejections) among 3,000 light ones (one each),
        // interleaved: each heavy one has more than 1/64 of all rejections.
        for round in 0..300u32 {
            for light in 0..10u32 {
                clients.add("s", &key(1_000 + round * 10 + light), now);
            }
            clients.add("s", &key(1), now);
            if round % 3 != 0 {
                clients.add("s", &key(2), now);
            }
            if round % 3 == 0 {
                clients.add("s", &key(3), now);
            }
        }
        let top = clients.top("s", now, |k| format!("{:?}", k.as_bytes()));
        let named: Vec<&str> = top.iter().take(3).map(|c| c.client.as_str()).collect();
        assert_eq!(named, ["[0, 0, 0, 1]", "[0, 0, 0, 2]", "[0, 0, 0, 3]"]);
        for (client, truly) in top.iter().zip([300, 200, 100]) {
            assert!(client.rejections >= truly, "{client:?}");
            assert!(client.rejections - client.overcount <= truly, "{client:?}");
        }
    }

    #[test]
    fn what_is_shown_covers_the_last_one_to_two_minutes() {
        let clients = RejectedClients::default();
        let start = Duration::from_secs(600);
        clients.add("s", &key(1), start);
        clients.add("s", &key(1), start);
        clients.add("s", &key(2), start + EPOCH);
        assert_eq!(
            top_of(&clients, start + EPOCH),
            [
                ("[0, 0, 0, 1]".to_string(), 2),
                ("[0, 0, 0, 2]".to_string(), 1)
            ]
        );
        assert_eq!(
            top_of(&clients, start + 2 * EPOCH),
            [("[0, 0, 0, 2]".to_string(), 1)]
        );
        assert!(top_of(&clients, start + 5 * EPOCH).is_empty());
    }

    #[test]
    fn a_late_reading_never_erases_the_summary() {
        // Worker B's reading of the new minute takes the lock before worker A's of the old.
        let clients = RejectedClients::default();
        let minute = Duration::from_secs(600);
        for _ in 0..5 {
            clients.add("s", &key(1), minute - Duration::from_millis(1));
        }
        clients.add("s", &key(2), minute);
        clients.add("s", &key(1), minute - Duration::from_millis(1));
        clients.add("s", &key(3), minute - EPOCH - Duration::from_millis(1));
        assert_eq!(
            top_of(&clients, minute),
            [
                ("[0, 0, 0, 1]".to_string(), 6),
                ("[0, 0, 0, 2]".to_string(), 1)
            ]
        );
    }

    #[test]
    fn scopes_are_bounded() {
        let clients = RejectedClients::default();
        for n in 0..MOST_SCOPES + 10 {
            clients.add(&format!("scope-{n}"), &key(1), Duration::ZERO);
        }
        assert_eq!(clients.scopes().len(), MOST_SCOPES);
    }
}
