//! A restart is not an amnesty: the store's states written to a file at shutdown and read
//! back at start, with the downtime counted as time gone by.
//!
//! The file, little-endian: a 16-byte magic, the format's version (`u32`), the
//! fingerprints' secret (2 × `u64`), a probe fingerprint (`u64`: the fingerprint of a fixed
//! key, which a build hashing otherwise would not reproduce), the clock reading and the wall
//! time (ms since the UNIX epoch) it was saved at (2 × `u64`), the number of tables (`u32`);
//! per table its limit's id (`u64`), its whole policy (algorithm `u8`, max `u32`, window in
//! ms `u64`, burst `u32`, 0 for none; then its delay in ms and its penalty as block,
//! strikes, their window and the escalated block, in ms: 5 × `u64`, 0s for none) and its
//! entries (`u32`), each a fingerprint (`u64`) and
//! the state: 64 bits, or for a sliding log its length (`u16`) and stamps (`u32` each);
//! last, an FNV-1a hash (`u64`) of everything before it.

use std::fmt;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::save_format::{calendar_code, code_of, fnv, put, wall_ms, Reader};
use super::table::{Moved, SavedState};
use super::{millis, MemoryStore};
use crate::penalty::Block;
use crate::{Algorithm, Clock};

/// The longest a restored block lasts from its save: 31 days, a month quota's longest wait
/// (the longest a penalty's block is stretched to), so a crafted file blocks nobody for good.
const MOST_BLOCK_MS: u64 = 31 * 86_400_000;

const MAGIC: &[u8; 16] = b"limiter:memory\0\0";
/// The format this build writes and reads.
const VERSION: u32 = 2;
/// The first format, whose policies have no delay and no penalty: still read.
pub(super) const FIRST_VERSION: u32 = 1;
/// The key whose fingerprint the file carries, to tell a build that hashes otherwise.
const PROBE: &[u8] = b"limiter: the probe of a saved memory store";
/// A clock that moved within this much of the wall time across the downtime kept running
/// (the same boot): its readings are the truth, and states keep their instants exactly.
const SAME_CLOCK_MS: i128 = 2_000;
/// Two clocks further apart than this (4,000 years) are a file's damage, not a restart.
const MOST_APART_MS: i128 = 1 << 47;

/// Why a saved store could not be read back. The store then starts empty: no state is
/// better than a wrong one (a client refused for another's requests).
#[derive(Debug)]
#[non_exhaustive]
pub enum RestoreError {
    /// There is no file (a first start).
    Missing,
    /// The file could not be read.
    Io(io::Error),
    /// The file is not a saved memory store.
    NotSaved,
    /// The file was written in another format version.
    Version {
        /// The file's version.
        found: u32,
        /// The version this build reads.
        reads: u32,
    },
    /// The file is damaged: its hash or its structure does not hold.
    Corrupt(&'static str),
    /// The file was written by a build that fingerprints keys otherwise (another Rust
    /// release may change the hash std provides).
    OtherBuild,
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestoreError::Missing => f.write_str("no saved store (a first start)"),
            RestoreError::Io(error) => write!(f, "the saved store could not be read: {error}"),
            RestoreError::NotSaved => f.write_str("the file is not a saved limiter memory store"),
            RestoreError::Version { found, reads } => write!(
                f,
                "the saved store is of format {found}, this build reads format {reads}"
            ),
            RestoreError::Corrupt(why) => write!(f, "the saved store is damaged ({why})"),
            RestoreError::OtherBuild => f.write_str(
                "the saved store was written by a build that fingerprints keys otherwise \
                 (another Rust release)",
            ),
        }
    }
}

impl std::error::Error for RestoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RestoreError::Io(error) => Some(error),
            _ => None,
        }
    }
}

impl MemoryStore {
    /// Writes what the store holds to `path` (through a new temporary file beside it, synced
    /// and renamed over it: a crash or a power cut mid-write leaves the previous file), for
    /// [`restore`](Self::restore) at the next start. Call it once the server has stopped
    /// (`HttpServer::run().await` returns after a graceful stop). Returns how many keys it
    /// wrote. The file holds the fingerprints' secret: it is made readable by its owner only
    /// (mode 0600); keep it where only the service reads it.
    ///
    /// `save` and `restore` read the [`SystemClock`](crate::SystemClock), the limiter's
    /// default: a store counted on another clock is saved and restored with that clock's
    /// readings, by [`save_at`](Self::save_at) and [`restore_at`](Self::restore_at).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use limiter::{Limit, MemoryStore, Policy};
    ///
    /// let path = std::env::temp_dir().join(format!("limiter-doc-{}.state", std::process::id()));
    /// let login = Limit::new("login", Policy::new(1, Duration::from_secs(900))?);
    /// let (now, wall) = (Duration::from_secs(3_600), SystemTime::now());
    /// let store = MemoryStore::new();
    /// assert!(store.check_at(&login, b"203.0.113.7", now).allowed());
    /// assert_eq!(store.save_at(&path, now, wall)?, 1);
    ///
    /// // Ten minutes later, a new process whose clock reads 5 s: 5 minutes of the block left.
    /// let later = wall + Duration::from_secs(600);
    /// let store = MemoryStore::new().restore_at(&path, Duration::from_secs(5), later)?;
    /// let refused = store.check_at(&login, b"203.0.113.7", Duration::from_secs(5));
    /// assert_eq!(refused.retry_after(), Some(Duration::from_secs(300)));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> io::Result<usize> {
        self.save_at(path, crate::SystemClock.now(), SystemTime::now())
    }

    /// [`save`](Self::save) for a store read with another clock: `now` is its reading, `wall`
    /// the time of day at that reading.
    pub fn save_at(
        &self,
        path: impl AsRef<Path>,
        now: Duration,
        wall: SystemTime,
    ) -> io::Result<usize> {
        let path = path.as_ref();
        // What no longer counts goes first: a table left idle for weeks holds stamps that
        // would read as recent once their 32 bits wrapped.
        self.sweep(now);
        let mut out = Vec::with_capacity(1 << 16);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put(&mut out, self.inner.secret.0);
        put(&mut out, self.inner.secret.1);
        put(&mut out, self.fingerprint(PROBE));
        put(&mut out, millis(now));
        put(&mut out, wall_ms(wall));
        let tables_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        let (mut tables, mut keys) = (0u32, 0usize);
        for shard in self.inner.shards.iter() {
            let shard = shard.0.lock();
            for table in shard.tables() {
                let policy = table.policy();
                put(&mut out, table.limit_id());
                out.push(code_of(policy.algorithm()));
                out.extend_from_slice(&policy.max().get().to_le_bytes());
                put(&mut out, policy.window_ms());
                let burst = match (policy.algorithm(), policy.calendar()) {
                    (_, Some(calendar)) => calendar_code(&calendar),
                    (Algorithm::TokenBucket, None) => policy.burst().get(),
                    _ => 0,
                };
                out.extend_from_slice(&burst.to_le_bytes());
                put(&mut out, policy.delay().map_or(0, millis));
                for number in policy.penalty().map_or([0; 4], |p| p.to_numbers()) {
                    put(&mut out, number);
                }
                let entries_at = out.len();
                out.extend_from_slice(&0u32.to_le_bytes());
                let mut entries = 0u32;
                table.each_saved(|fp, state| {
                    put(&mut out, fp);
                    match state {
                        SavedState::Raw(raw) => put(&mut out, raw),
                        SavedState::Log(stamps) => {
                            // A log holds at most N ≤ 65,535 instants.
                            out.extend_from_slice(&(stamps.len() as u16).to_le_bytes());
                            for stamp in stamps {
                                out.extend_from_slice(&stamp.to_le_bytes());
                            }
                        }
                    }
                    entries += 1;
                });
                out[entries_at..entries_at + 4].copy_from_slice(&entries.to_le_bytes());
                keys += entries as usize;
                tables += 1;
            }
        }
        out[tables_at..tables_at + 4].copy_from_slice(&tables.to_le_bytes());
        // Then the penalty records, so that a restart lifts no block: a section a file of
        // a build without penalties does not have (it is read as none).
        let blocks_at = out.len();
        out.extend_from_slice(&0u32.to_le_bytes());
        let mut blocks = 0u32;
        for shard in self.inner.shards.iter() {
            shard.0.lock().each_block(|(limit_id, fp), block| {
                put(&mut out, limit_id);
                put(&mut out, fp);
                let (until, expires, strikes) = block.parts();
                put(&mut out, until);
                put(&mut out, expires);
                // At most 16 (`Penalty::MAX_STRIKES`).
                out.push(strikes.len() as u8);
                for &strike in strikes {
                    put(&mut out, strike);
                }
                blocks += 1;
            });
        }
        out[blocks_at..blocks_at + 4].copy_from_slice(&blocks.to_le_bytes());
        let hash = fnv(&out);
        put(&mut out, hash);
        write_privately(path, &out)?;
        Ok(keys)
    }

    /// A store with this one's bounds holding what [`save`](Self::save) wrote to `path` that
    /// still counts, the time since the save counted as gone by: a client blocked for 15
    /// minutes by a store saved 10 minutes ago has 5 left. States that no longer fit the
    /// bounds are left out. `Err` says why nothing was read (then use this store, empty):
    /// a missing, damaged or foreign file, or one of another format version.
    pub fn restore(&self, path: impl AsRef<Path>) -> Result<MemoryStore, RestoreError> {
        self.restore_at(path, crate::SystemClock.now(), SystemTime::now())
    }

    /// [`restore`](Self::restore) for a store read with another clock: `now` is its reading,
    /// `wall` the time of day at that reading.
    pub fn restore_at(
        &self,
        path: impl AsRef<Path>,
        now: Duration,
        wall: SystemTime,
    ) -> Result<MemoryStore, RestoreError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(RestoreError::Missing)
            }
            Err(error) => return Err(RestoreError::Io(error)),
        };
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(RestoreError::NotSaved);
        }
        let mut file = Reader {
            bytes: &bytes,
            at: MAGIC.len(),
        };
        let version = file.u32()?;
        if !(FIRST_VERSION..=VERSION).contains(&version) {
            return Err(RestoreError::Version {
                found: version,
                reads: VERSION,
            });
        }
        let (body, hash) = bytes.split_at(bytes.len() - 8);
        if hash != fnv(body).to_le_bytes() {
            return Err(RestoreError::Corrupt(
                "its hash does not match its contents",
            ));
        }
        let secret = (file.u64()?, file.u64()?);
        let store = MemoryStore::with_secret(self.inner.max_keys, self.inner.max_bytes, secret);
        if file.u64()? != store.fingerprint(PROBE) {
            return Err(RestoreError::OtherBuild);
        }
        let (saved_ms, saved_wall) = (file.u64()?, file.u64()?);
        let now_ms = millis(now);
        let downtime = wall_ms(wall).saturating_sub(saved_wall);
        // In 128 bits: a crafted file's readings cannot overflow it.
        let mut by = i128::from(now_ms) - i128::from(saved_ms) - i128::from(downtime);
        if by.abs() <= SAME_CLOCK_MS {
            by = 0;
        }
        if by.abs() > MOST_APART_MS {
            return Err(RestoreError::Corrupt("its clock reading is implausible"));
        }
        let moved = Moved {
            saved_ms,
            // On the clock the states were counted on: the downtime, or (on the clock that
            // ran on) the time since the save.
            elapsed_ms: (i128::from(now_ms) - by - i128::from(saved_ms)).clamp(0, MOST_APART_MS)
                as u64,
            by_ms: by as i64,
            now_ms,
        };
        let mut stamps = Vec::new();
        for _ in 0..file.u32()? {
            let limit_id = file.u64()?;
            let policy = file.policy(version)?;
            for _ in 0..file.u32()? {
                let fp = file.u64()?;
                let state = match policy.algorithm() {
                    Algorithm::SlidingWindow => {
                        let len = file.u16()?;
                        stamps.clear();
                        for _ in 0..len {
                            stamps.push(file.u32()?);
                        }
                        SavedState::Log(&stamps)
                    }
                    _ => SavedState::Raw(file.u64()?),
                };
                let shard = &store.inner.shards[store.shard_of(fp)].0;
                let bounds = store.inner.bounds;
                shard
                    .lock()
                    .restore((limit_id, policy), fp, state, moved, bounds);
            }
        }
        if file.at != body.len() {
            for _ in 0..file.u32()? {
                let (limit_id, fp) = (file.u64()?, file.u64()?);
                let (until, expires) = (file.u64()?, file.u64()?);
                let [count] = file.take::<1>()?;
                let mut strikes = Vec::with_capacity(usize::from(count).min(16));
                for _ in 0..count {
                    strikes.push(file.u64()?);
                }
                if count > 16 || expires <= saved_ms.saturating_add(moved.elapsed_ms) {
                    continue;
                }
                // No restored block lasts longer than a month's quota waits from now (a
                // crafted end, or a crafted reading of the save's clock, is held to it), and
                // no strike is later than the save.
                let shift = |at: u64| at.saturating_add_signed(moved.by_ms);
                let latest = now_ms.saturating_add(MOST_BLOCK_MS);
                let until = shift(until).min(latest);
                let expires = shift(expires).min(latest).max(until);
                let strikes = strikes.into_iter().filter(|&s| s <= saved_ms).map(shift);
                let block = Block::from_parts(until, expires, strikes.collect());
                let shard = &store.inner.shards[store.shard_of(fp)].0;
                shard
                    .lock()
                    .restore_block((limit_id, fp), block, store.inner.bounds);
            }
        }
        if file.at != body.len() {
            return Err(RestoreError::Corrupt("it holds more than its tables"));
        }
        Ok(store)
    }

    /// [`restore`](Self::restore), or this store (empty) when there is nothing to read: the
    /// outcome is an `info` event (a missing file: a first start) or a `warn` event naming
    /// why the file was not read.
    pub fn restore_or_empty(self, path: impl AsRef<Path>) -> MemoryStore {
        self.restore_or_empty_at(path, crate::SystemClock.now(), SystemTime::now())
    }

    /// [`restore_or_empty`](Self::restore_or_empty) for a store read with another clock.
    pub fn restore_or_empty_at(
        self,
        path: impl AsRef<Path>,
        now: Duration,
        wall: SystemTime,
    ) -> MemoryStore {
        let path = path.as_ref();
        match self.restore_at(path, now, wall) {
            Ok(store) => {
                tracing::info!(
                    path = %path.display(),
                    keys = store.len(),
                    "rate limit: the memory store's saved states were restored"
                );
                store
            }
            Err(RestoreError::Missing) => {
                tracing::info!(
                    path = %path.display(),
                    "rate limit: no saved memory store; it starts empty"
                );
                self
            }
            Err(error) => {
                tracing::warn!(
                    path = %path.display(),
                    "rate limit: {error}; the memory store starts empty"
                );
                self
            }
        }
    }
}

/// Writes `bytes` to `path` through a new temporary file beside it, readable by its owner
/// only (it holds the fingerprints' secret) and on disk before it is renamed over `path`:
/// a crash or a power cut leaves the previous file. A file already at the temporary name
/// (a crash's leftover, a planted link) is removed, never followed.
fn write_privately(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = std::path::PathBuf::from(temporary);
    match std::fs::remove_file(&temporary) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    // The rename itself on disk.
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
