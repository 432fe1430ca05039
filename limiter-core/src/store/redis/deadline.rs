//! The store's timeout judges Redis, not the host. On a host busier than its cores, the
//! store's thread can go without a CPU for longer than the timeout: its timer then fires
//! late, and Redis's answer may be waiting, unread, in the socket. Neither is Redis being
//! slow, and failing the call would hand a healthy burst to the fault policy (fail open
//! lets it through, fail closed refuses it, the fallback counts it twice over two
//! instances).
//!
//! So a timer that fires is checked before it fails anything: what has arrived is read
//! first, and the time the thread waited for a CPU while the call was out (counted by the
//! kernel, [`cpu_wait`], when it is a tenth of the timeout or more; where the kernel does
//! not count, a timer that fired late by half the timeout or more) is given back to the
//! call, which is armed again for the rest of its timeout.
//!
//! A call that has had its whole timeout of the thread's running time is still no proof
//! that Redis is down: a whole machine paused (a virtual CPU the hypervisor lent elsewhere,
//! which no count in the guest shows), a segment of the call lost and sent again. So Redis
//! is asked, on a connection of its own, whether it is alive (a probe: see
//! `probe.rs`), and given half a timeout to say so; the call's own answer is taken if
//! it comes meanwhile. Alive, the call gets another timeout; no answer, or an error, fails
//! it. A stalled Redis fails a call after one and a half timeouts (one, where there is no
//! connection to probe with). Whatever the host and however Redis answers probes, a call
//! fails once it has had [`MOST_WAITED`] timeouts of wall time: a host that keeps the
//! store's thread from running that long, a connection that never answers while another
//! does, is an outage of its own.
//!
//! The count is the store thread's own: a store over a connection made elsewhere
//! (`from_manager`, `from_cluster`) has its I/O on the maker's runtime, whose starvation
//! this does not see.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::cpu_wait;
use super::probe::Probe;

/// The longest a call waits, in timeouts of wall time, on a host that starves the store's
/// thread or for a Redis that answers probes but not the call.
const MOST_WAITED: u32 = 5;

/// The call took longer than the timeout, by the store's own running time, and Redis did
/// not show it was alive: after `waited` of wall time. Or it did (`alive`: a probe was
/// answered) and the call still had no answer after [`MOST_WAITED`] timeouts.
/// A probe that the server refused (`refusal`: its login, say) names why instead.
#[derive(Debug)]
pub(super) struct Elapsed {
    pub(super) waited: Duration,
    pub(super) alive: bool,
    refusal: Option<crate::StoreError>,
}

impl From<Elapsed> for crate::StoreError {
    fn from(elapsed: Elapsed) -> crate::StoreError {
        elapsed.refusal.unwrap_or_else(|| {
            crate::StoreError::msg(format!(
                "Redis did not answer within the store's timeout (gave up after {:?})",
                elapsed.waited
            ))
        })
    }
}

/// `call`'s output, unless it takes longer than `timeout` while the store's thread runs and
/// Redis, asked with `probe` about a key under `prefix` (see `probe.rs`), does not say
/// within half a timeout more that it is alive. Without a probe, the timeout alone.
pub(super) async fn within<T>(
    timeout: Duration,
    call: impl Future<Output = T>,
    probe: Option<Probe>,
    prefix: &str,
) -> Result<T, Elapsed> {
    let probe = probe.as_ref();
    // The last probe's error, if any: a refusal (of the store's login) is the reason the
    // call had no answer, where the call's own connection is still trying to log in.
    let refused = parking_lot::Mutex::new(None);
    let alive = || async {
        let Some(probe) = probe else {
            return false;
        };
        let answer = probe.answers(prefix).await;
        let alive = answer.is_ok();
        *refused.lock() = answer.err();
        alive
    };
    let result = within_counting(timeout, call, alive, cpu_wait::total).await;
    result.map_err(|elapsed| Elapsed {
        refusal: refused.lock().as_ref().and_then(super::refusal),
        ..elapsed
    })
}

/// What came first once a call had its timeout: its answer, or the probe's.
enum Raced<T> {
    Answered(T),
    Alive,
    Down,
}

/// [`within`], the thread's waits for a CPU read from `waited` (as [`cpu_wait::total`]).
async fn within_counting<T, P: Future<Output = bool>>(
    timeout: Duration,
    call: impl Future<Output = T>,
    mut probe: impl FnMut() -> P,
    waited: impl Fn(bool) -> Option<(Instant, Duration)>,
) -> Result<T, Elapsed> {
    let mut call = pin!(call);
    let started = Instant::now();
    let until = started + MOST_WAITED * timeout;
    let mut alive = false;
    let elapsed = |alive| Elapsed {
        waited: started.elapsed(),
        alive,
        refusal: None,
    };
    loop {
        if let Some(output) = running(timeout, call.as_mut(), &waited, until).await {
            return Ok(output);
        }
        if Instant::now() >= until {
            return Err(elapsed(alive));
        }
        // Boxed: few calls are late, and inline the probe (its connection made, its
        // login, its command) would enlarge every call's future, which every batch moves.
        let mut probe = Box::pin(probe());
        let raced = std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = call.as_mut().poll(cx) {
                return Poll::Ready(Raced::Answered(output));
            }
            probe.as_mut().poll(cx).map(|alive| match alive {
                true => Raced::Alive,
                false => Raced::Down,
            })
        });
        match running(timeout / 2, raced, &waited, until).await {
            Some(Raced::Answered(output)) => return Ok(output),
            Some(Raced::Alive) => alive = true,
            Some(Raced::Down) | None => return Err(elapsed(alive)),
        }
    }
}

/// `future`'s output, unless it has not come once it has had `timeout` of the thread's
/// running time, or at `until`.
async fn running<T>(
    timeout: Duration,
    future: impl Future<Output = T>,
    waited: &impl Fn(bool) -> Option<(Instant, Duration)>,
    until: Instant,
) -> Option<T> {
    let mut future = pin!(future);
    // The thread's running time the future has had.
    let mut ran = Duration::ZERO;
    loop {
        let armed = Instant::now();
        let before = waited(false);
        let budget = timeout
            .saturating_sub(ran)
            .min(until.saturating_duration_since(armed));
        if let Ok(output) = tokio::time::timeout(budget, future.as_mut()).await {
            return Some(output);
        }
        // A yield lets the runtime poll its I/O: the connection's task reads a reply that
        // arrived while the thread was not running, and wakes this call.
        for _ in 0..2 {
            tokio::task::yield_now().await;
            if let Poll::Ready(output) =
                std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
            {
                return Some(output);
            }
        }
        ran += match before.zip(waited(true)) {
            // The kernel's count, from a reading a little before this arm (more running
            // time, not less). A wait under a tenth of the timeout is a healthy host's
            // scheduling, not worth arming again for.
            Some(((since, before), (_, after))) => {
                let window = since.elapsed();
                let waited = after.saturating_sub(before);
                if waited * 10 < timeout {
                    window
                } else {
                    window.saturating_sub(waited)
                }
            }
            // No count: a timer late by half the timeout says the thread was not running.
            None if armed.elapsed().saturating_sub(budget) >= timeout / 2 => Duration::ZERO,
            None => armed.elapsed(),
        };
        if ran >= timeout || Instant::now() >= until {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use tokio::sync::oneshot;

    /// The clock stands still but for what a test moves, and jumps to the next timer when
    /// every task waits: a thread kept from running is a clock moved under a waiting task.
    fn run<T>(test: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
            .block_on(test)
    }

    const TIMEOUT: Duration = Duration::from_millis(20);

    /// A kernel that keeps no count (the real one's would mix real waits into the paused
    /// clock's time).
    fn uncounted(_: bool) -> Option<(Instant, Duration)> {
        None
    }

    /// A kernel whose count (in ns) is what the test puts in `waits`.
    fn counted(waits: &Arc<AtomicU64>) -> impl Fn(bool) -> Option<(Instant, Duration)> {
        let waits = Arc::clone(waits);
        move |_| {
            let waited = Duration::from_nanos(waits.load(Ordering::SeqCst));
            Some((Instant::now(), waited))
        }
    }

    fn ns(duration: Duration) -> u64 {
        duration.as_nanos() as u64
    }

    /// A probe that Redis refuses at once (or no connection to probe with).
    fn down() -> std::future::Ready<bool> {
        std::future::ready(false)
    }

    /// A probe that a stalled Redis never answers.
    fn stalled() -> std::future::Pending<bool> {
        std::future::pending()
    }

    /// A probe that a living Redis answers after a millisecond.
    async fn alive() -> bool {
        tokio::time::sleep(Duration::from_millis(1)).await;
        true
    }

    #[test]
    fn a_stalled_redis_fails_a_call_after_one_and_a_half_timeouts() {
        run(async {
            let started = Instant::now();
            let call = std::future::pending::<()>();
            let elapsed = within_counting(TIMEOUT, call, stalled, uncounted).await;
            assert!(elapsed.is_err_and(|e| !e.alive));
            assert_eq!(started.elapsed(), TIMEOUT + TIMEOUT / 2);
        });
    }

    #[test]
    fn a_call_held_up_while_redis_answers_its_probes_is_given_more_time() {
        run(async {
            let (answer, answered) = oneshot::channel();
            tokio::spawn(async move {
                // One call's answer held up for three timeouts (a segment sent again, a
                // paused host), Redis alive meanwhile.
                tokio::time::sleep(3 * TIMEOUT).await;
                let _ = answer.send(7);
            });
            let started = Instant::now();
            let answer = within_counting(TIMEOUT, answered, alive, uncounted).await;
            assert_eq!(answer.unwrap().unwrap(), 7);
            assert_eq!(started.elapsed(), 3 * TIMEOUT);
        });
    }

    #[test]
    fn an_answer_that_comes_while_the_probe_is_out_is_taken() {
        run(async {
            let (answer, answered) = oneshot::channel();
            tokio::spawn(async move {
                tokio::time::sleep(TIMEOUT + TIMEOUT / 4).await;
                let _ = answer.send(7);
            });
            let started = Instant::now();
            let answer = within_counting(TIMEOUT, answered, stalled, uncounted).await;
            assert_eq!(answer.unwrap().unwrap(), 7);
            assert_eq!(started.elapsed(), TIMEOUT + TIMEOUT / 4);
        });
    }

    #[test]
    fn a_call_never_answered_while_redis_answers_probes_fails_at_the_most_wall_time() {
        run(async {
            let started = Instant::now();
            let call = std::future::pending::<()>();
            let elapsed = within_counting(TIMEOUT, call, alive, uncounted).await;
            assert!(elapsed.is_err_and(|e| e.alive));
            assert_eq!(started.elapsed(), MOST_WAITED * TIMEOUT);
        });
    }

    #[test]
    fn a_call_that_never_answers_fails_after_one_timeout_when_the_thread_runs() {
        run(async {
            let started = Instant::now();
            let call = std::future::pending::<()>();
            assert!(within_counting(TIMEOUT, call, down, uncounted)
                .await
                .is_err());
            assert_eq!(started.elapsed(), TIMEOUT);
        });
    }

    #[test]
    fn a_timer_that_fires_late_is_armed_again() {
        run(async {
            let (answer, answered) = oneshot::channel();
            tokio::spawn(async move {
                // The thread is kept from running for three timeouts; the answer comes
                // 5 ms after it runs again.
                tokio::time::advance(3 * TIMEOUT).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = answer.send(7);
            });
            let answer = within_counting(TIMEOUT, answered, down, uncounted).await;
            assert_eq!(answer.unwrap().unwrap(), 7);
        });
    }

    #[test]
    fn the_kernels_count_of_a_wait_for_a_cpu_is_given_back() {
        run(async {
            let waits = Arc::new(AtomicU64::new(0));
            let (answer, answered) = oneshot::channel();
            let kernel = Arc::clone(&waits);
            tokio::spawn(async move {
                // 30 ms pass, 25 of them waiting for a CPU: 5 ms of running time; the
                // answer comes 5 ms after that, within the timeout's running time.
                kernel.store(ns(Duration::from_millis(25)), Ordering::SeqCst);
                tokio::time::advance(Duration::from_millis(30)).await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = answer.send(7);
            });
            let started = Instant::now();
            let answer = within_counting(TIMEOUT, answered, down, counted(&waits)).await;
            assert_eq!(answer.unwrap().unwrap(), 7);
            assert_eq!(started.elapsed(), Duration::from_millis(35));
        });
    }

    #[test]
    fn a_healthy_hosts_small_waits_are_not_given_back() {
        run(async {
            // Just under a tenth of the timeout, seen between the arm and its timer: the
            // call fails after one timeout.
            let waits = Arc::new(AtomicU64::new(0));
            let source = counted(&waits);
            let kernel = move |fresh: bool| {
                if fresh {
                    let waited = TIMEOUT / 10 - Duration::from_micros(1);
                    waits.store(ns(waited), Ordering::SeqCst);
                }
                source(fresh)
            };
            let started = Instant::now();
            let call = std::future::pending::<()>();
            assert!(within_counting(TIMEOUT, call, down, kernel).await.is_err());
            assert_eq!(started.elapsed(), TIMEOUT);
        });
    }

    #[test]
    fn a_thread_that_never_gets_a_cpu_fails_its_call_after_the_most_wall_time() {
        run(async {
            // Every moment of the call spent waiting for a CPU, as the kernel counts it.
            let started = Instant::now();
            let kernel = move |_: bool| Some((Instant::now(), started.elapsed()));
            let call = std::future::pending::<()>();
            assert!(within_counting(TIMEOUT, call, down, kernel).await.is_err());
            assert_eq!(started.elapsed(), MOST_WAITED * TIMEOUT);
        });
    }

    #[test]
    fn a_thread_kept_from_running_timeout_after_timeout_fails_the_call_at_last() {
        run(async {
            let started = Instant::now();
            tokio::spawn(async {
                for _ in 0..10 {
                    tokio::time::advance(3 * TIMEOUT / 2).await;
                    tokio::task::yield_now().await;
                }
            });
            let call = std::future::pending::<()>();
            assert!(within_counting(TIMEOUT, call, down, uncounted)
                .await
                .is_err());
            let took = started.elapsed();
            // Given up at MOST_WAITED timeouts (the last arm cut to what is left of them),
            // however late its timers.
            assert!(
                took >= MOST_WAITED * TIMEOUT && took <= MOST_WAITED * TIMEOUT + 3 * TIMEOUT / 2,
                "{took:?}"
            );
        });
    }

    #[test]
    fn an_answer_sent_as_the_timer_fires_is_taken() {
        run(async {
            let (answer, answered) = oneshot::channel();
            // Woken by the same clock reading as the call's timer, and run after it: the
            // answer exists only once the timer has fired.
            tokio::spawn(async move {
                tokio::time::sleep(TIMEOUT).await;
                tokio::task::yield_now().await;
                let _ = answer.send(7);
            });
            let started = Instant::now();
            let answer = within_counting(TIMEOUT, answered, down, uncounted).await;
            assert_eq!(answer.unwrap().unwrap(), 7);
            assert_eq!(started.elapsed(), TIMEOUT);
        });
    }
}
