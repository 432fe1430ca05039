//! How long the store's thread has waited for a CPU: Linux counts, per thread, the time it
//! was ready to run and not running (`/proc/thread-self/schedstat`, its second field). What
//! a call's timeout must not count is exactly that time.
//!
//! A reading is a read of a small file (about a microsecond), so a call takes the last one
//! if it is recent rather than one of its own: at most one a millisecond on a busy store,
//! and the call's window starts at most that much early (counting more time as running,
//! which errs towards failing a stalled Redis, never towards holding a request longer).

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use tokio::time::Instant;

/// How old a reading a call may start from.
const FRESH: Duration = Duration::from_millis(1);

/// The thread's total wait for a CPU, at an instant.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reading {
    at: Instant,
    waited_ns: u64,
}

impl Reading {
    /// The time since `self` the thread spent ready and not running, up to now.
    pub(super) fn waited_since(self) -> Option<Duration> {
        let now = read_now()?;
        Some(Duration::from_nanos(
            now.waited_ns.saturating_sub(self.waited_ns),
        ))
    }

    /// When this reading was taken.
    pub(super) fn at(self) -> Instant {
        self.at
    }
}

thread_local! {
    /// This thread's schedstat file (opened once: `thread-self` names the opening thread)
    /// and its last reading; `None` where the kernel has no such file.
    static SCHEDSTAT: RefCell<Option<(File, Option<Reading>)>> =
        RefCell::new(File::open("/proc/thread-self/schedstat").ok().map(|f| (f, None)));
}

/// A reading of at most [`FRESH`] ago, taken now if the last one is older.
pub(super) fn recent() -> Option<Reading> {
    SCHEDSTAT.with_borrow_mut(|stat| {
        let (file, last) = stat.as_mut()?;
        let now = Instant::now();
        if let Some(reading) = last.filter(|r| now.duration_since(r.at) < FRESH) {
            return Some(reading);
        }
        *last = read(file, now);
        *last
    })
}

/// A reading now.
fn read_now() -> Option<Reading> {
    SCHEDSTAT.with_borrow_mut(|stat| {
        let (file, last) = stat.as_mut()?;
        *last = read(file, Instant::now());
        *last
    })
}

fn read(file: &mut File, at: Instant) -> Option<Reading> {
    // "<ns running> <ns waiting for a CPU> <timeslices>\n"
    let mut text = [0u8; 96];
    let n = file.read_at(&mut text, 0).ok()?;
    let text = std::str::from_utf8(&text[..n]).ok()?;
    let waited_ns = text.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(Reading { at, waited_ns })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_kept_from_its_cpu_reads_its_wait() {
        let Some(start) = recent() else {
            // No schedstat here (not Linux, or a kernel without it): nothing to measure.
            return;
        };
        // More runnable threads than cores: this one waits for a CPU while they spin.
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners: Vec<_> = (0..2 * cores)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let deadline = std::time::Instant::now() + Duration::from_secs(5);
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && std::time::Instant::now() < deadline
                    {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let mut waited = Duration::ZERO;
        let began = std::time::Instant::now();
        while waited < Duration::from_millis(5) && began.elapsed() < Duration::from_secs(4) {
            std::hint::spin_loop();
            waited = start.waited_since().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for spinner in spinners {
            spinner.join().unwrap();
        }
        assert!(waited >= Duration::from_millis(5), "waited {waited:?}");
    }
}
