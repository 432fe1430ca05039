//! The mistakes made with a [`Limiter`] itself, reported once each as a `warn` event (as
//! the forwarding ones, in `crate::mistakes`): a limiter built and handed to no `App`, and
//! limiters built on each worker of the framework, each with a store of its own.

use std::cell::Cell;

use parking_lot::Mutex;

use super::Limiter;
use crate::mistakes::Once;
use crate::Front;

static NOT_IN_APP_DATA: Once = Once::new();

/// A request found no `Limiter` in its app data and is counted by the global one. That is
/// the design for a program that never builds one; for one that did, it is a forgotten
/// `.app_data(limiter.clone())`, and every setting of that limiter is silently ignored.
#[inline]
pub(crate) fn counted_by_the_global_limiter<F: Front>() {
    if NOT_IN_APP_DATA.reported() || !Limiter::<F>::any_built() {
        return;
    }
    if NOT_IN_APP_DATA.first() {
        tracing::warn!(
            "rate limit: a `Limiter` was built, but a request found none in its app's data and \
             was counted by the process-global limiter instead (its own store, no trusted \
             proxies, no user resolver): {}",
            F::HAND_IT_OVER
        );
    }
}

/// The process-global limiter is one the service built and installed
/// ([`Limiter::install_in`]): a request counted by it is counted as the service meant.
pub(crate) fn global_installed() {
    NOT_IN_APP_DATA.first();
}

static PER_WORKER: Once = Once::new();
/// The in-memory stores of limiters built on the framework's worker threads, by identity.
static WORKER_STORES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

thread_local! {
    /// The last limiter this thread saw serve a request: most threads only ever see one.
    static LAST_SERVING: Cell<usize> = const { Cell::new(0) };
}

/// A limiter serves a request. Two limiters built on the framework's worker threads, each with an
/// in-memory store of its own, are limiters made inside `HttpServer::new`'s closure: each
/// worker counts alone, and the limit is multiplied by the number of workers.
#[inline]
pub(crate) fn serving<F: Front>(limiter: &Limiter<F>) {
    if PER_WORKER.reported() {
        return;
    }
    let id = limiter.identity();
    if LAST_SERVING.with(|last| last.replace(id)) != id {
        serving_anew(limiter);
    }
}

#[cold]
fn serving_anew<F: Front>(limiter: &Limiter<F>) {
    let on_worker = limiter.built_on().is_some_and(F::is_worker_thread);
    let Some(store) = limiter.memory_store().filter(|_| on_worker) else {
        return;
    };
    let mut stores = WORKER_STORES.lock();
    if !stores.contains(&store.identity()) {
        stores.push(store.identity());
    }
    if stores.len() > 1 && PER_WORKER.first() {
        tracing::warn!("rate limit: {}", F::BUILT_PER_WORKER);
    }
}
