//! The store's timeout judges Redis, not the host. On a host busier than its cores, the
//! store's thread can go without a CPU for longer than the timeout: its timer then fires
//! late, and Redis's answer may be waiting, unread, in the socket. Neither is Redis being
//! slow, and failing the call would hand a healthy burst to the fault policy (fail open
//! lets it through, fail closed refuses it, the fallback counts it twice over two
//! instances).
//!
//! So a timer that fires is checked before it fails anything: what has arrived is read
//! first, and the time the thread waited for a CPU while the call was out (counted by the
//! kernel, [`cpu_wait`]; a timer that fired late by half the timeout or more, where the
//! kernel does not count) is given back to the call, which is armed again for the rest of
//! its timeout. A call fails once it has had the whole timeout of the thread's running
//! time, or [`MOST_WAITED`] timeouts of wall time whatever the host: a host that keeps the
//! store's thread from running for that long is an outage of its own. On a host that gives
//! the thread its CPU, a stalled Redis still fails a call after one timeout.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::Instant;

use super::cpu_wait;

/// The longest a call waits, in timeouts of wall time, on a host that starves the store's
/// thread.
const MOST_WAITED: u32 = 5;

/// The call took longer than the timeout, by the store's own running time.
#[derive(Debug)]
pub(super) struct Elapsed;

/// `call`'s output, unless it takes longer than `timeout` while the store's thread runs.
pub(super) async fn within<T>(
    timeout: Duration,
    call: impl Future<Output = T>,
) -> Result<T, Elapsed> {
    let mut call = pin!(call);
    let first = Instant::now();
    // The thread's running time the call has had.
    let mut ran = Duration::ZERO;
    loop {
        let armed = Instant::now();
        let reading = cpu_wait::recent();
        let budget = timeout.saturating_sub(ran);
        if let Ok(output) = tokio::time::timeout(budget, call.as_mut()).await {
            return Ok(output);
        }
        // A yield lets the runtime poll its I/O: the connection's task reads a reply that
        // arrived while the thread was not running, and wakes this call.
        for _ in 0..2 {
            tokio::task::yield_now().await;
            if let Poll::Ready(output) =
                std::future::poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await
            {
                return Ok(output);
            }
        }
        let late = armed.elapsed().saturating_sub(budget);
        ran += if late >= timeout / 2 {
            // The thread was not running when its timer was due.
            Duration::ZERO
        } else {
            match reading.and_then(|r| Some((r.at().elapsed(), r.waited_since()?))) {
                // From the reading, a little before this arm: more running time, not less.
                Some((window, waited)) => window.saturating_sub(waited),
                None => armed.elapsed(),
            }
        };
        if ran >= timeout || first.elapsed() >= MOST_WAITED * timeout {
            return Err(Elapsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn a_call_that_never_answers_fails_after_one_timeout_when_the_thread_runs() {
        run(async {
            let started = Instant::now();
            assert!(within(TIMEOUT, std::future::pending::<()>()).await.is_err());
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
            assert_eq!(within(TIMEOUT, answered).await.unwrap().unwrap(), 7);
        });
    }

    #[test]
    fn a_thread_kept_from_running_timeout_after_timeout_fails_the_call_at_last() {
        run(async {
            let started = Instant::now();
            tokio::spawn(async {
                for _ in 0..10 {
                    tokio::time::advance(5 * TIMEOUT).await;
                    tokio::task::yield_now().await;
                }
            });
            assert!(within(TIMEOUT, std::future::pending::<()>()).await.is_err());
            let took = started.elapsed();
            // Given up after MOST_WAITED timeouts, while the thread is still kept from running.
            assert!(
                took >= MOST_WAITED * TIMEOUT && took < 10 * 5 * TIMEOUT,
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
            assert_eq!(within(TIMEOUT, answered).await.unwrap().unwrap(), 7);
            assert_eq!(started.elapsed(), TIMEOUT);
        });
    }
}
