//! How long the store's thread has waited for a CPU: Linux counts, per thread, the time it
//! was ready to run and not running (`/proc/thread-self/schedstat`, its second field). What
//! a call's timeout must not count is exactly that time.
//!
//! A reading is a read of a small file (about a microsecond), so a call takes the last one
//! if it is recent rather than one of its own: at most one a millisecond on a busy store,
//! and the call's window starts at most that much early (counting more time as running,
//! which errs towards failing a stalled Redis, never towards holding a request longer).

#[cfg(target_os = "linux")]
pub(super) use linux::total;

/// Elsewhere the kernel's count is not read: late timers tell a starved thread instead.
#[cfg(not(target_os = "linux"))]
pub(super) fn total(_fresh: bool) -> Option<(tokio::time::Instant, std::time::Duration)> {
    None
}

#[cfg(target_os = "linux")]
mod linux {
    use std::cell::RefCell;
    use std::fs::File;
    use std::os::unix::fs::FileExt;
    use std::time::Duration;

    use tokio::time::Instant;

    /// When a reading was taken, and the total wait it read.
    type Reading = (Instant, Duration);

    /// How old a reading a call may start from.
    const FRESH: Duration = Duration::from_millis(1);

    thread_local! {
        /// This thread's schedstat file (opened once: `thread-self` names the opening thread)
        /// and its last reading; `None` where the kernel has no such file.
        static SCHEDSTAT: RefCell<Option<(File, Option<Reading>)>> =
            RefCell::new(File::open("/proc/thread-self/schedstat").ok().map(|f| (f, None)));
    }

    /// When it was read, and the thread's total wait for a CPU until then: read now if
    /// `fresh`, else the last reading if it is less than [`FRESH`] old. `None` where the kernel
    /// does not count (no file, or accounting off).
    pub(crate) fn total(fresh: bool) -> Option<(Instant, Duration)> {
        SCHEDSTAT.with_borrow_mut(|stat| {
            let (file, last) = stat.as_mut()?;
            let now = Instant::now();
            if let Some(reading) = last.filter(|(at, _)| !fresh && now.duration_since(*at) < FRESH)
            {
                return Some(reading);
            }
            *last = read(file).map(|waited| (now, waited));
            *last
        })
    }

    fn read(file: &File) -> Option<Duration> {
        // "<ns running> <ns waiting for a CPU> <timeslices>\n"
        let mut text = [0u8; 96];
        let n = file.read_at(&mut text, 0).ok()?;
        let text = std::str::from_utf8(&text[..n]).ok()?;
        let mut fields = text.split_ascii_whitespace();
        let running: u64 = fields.next()?.parse().ok()?;
        let waited: u64 = fields.next()?.parse().ok()?;
        // A thread that is running now has run: zero means the kernel keeps no account.
        (running > 0).then_some(Duration::from_nanos(waited))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_thread_kept_from_its_cpu_reads_its_wait() {
        let Some((_, start)) = total(true) else {
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
                    let deadline = std::time::Instant::now() + Duration::from_secs(3);
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
        while waited < Duration::from_millis(5) && began.elapsed() < Duration::from_secs(2) {
            std::hint::spin_loop();
            waited = total(true).unwrap().1 - start;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for spinner in spinners {
            spinner.join().unwrap();
        }
        assert!(waited >= Duration::from_millis(5), "waited {waited:?}");
    }
}
