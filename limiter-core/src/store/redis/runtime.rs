//! The Redis store's own thread: its connection's I/O and its batches run there, on a
//! runtime of their own, so that no request handler — a blocking one, a busy worker — can
//! hold up every worker's checks, and a check works from any thread, in a runtime or not.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::StoreError;

/// A single-threaded Tokio runtime on a thread of its own, which stops when the last store
/// sharing it is gone.
pub(super) struct Runtime {
    handle: tokio::runtime::Handle,
    /// Dropped with the runtime's last owner: the thread then ends.
    _stop: oneshot::Sender<()>,
}

impl Runtime {
    pub(super) fn start() -> Result<Arc<Runtime>, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::new("cannot start the Redis store's runtime", e))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("limiter-redis".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| StoreError::new("cannot start the Redis store's thread", e))?;
        Ok(Arc::new(Runtime {
            handle,
            _stop: stop,
        }))
    }

    /// [`start`](Self::start), for constructors that cannot fail otherwise.
    pub(super) fn start_or_panic() -> Arc<Runtime> {
        match Runtime::start() {
            Ok(runtime) => runtime,
            Err(error) => panic!("{error}"),
        }
    }

    /// Runs `task` there.
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        drop(self.handle.spawn(task));
    }

    /// Runs `task` there and returns its result, from any thread or runtime.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        task: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.spawn(async move {
            let _ = answer.send(task.await);
        });
        answered
            .await
            .map_err(|_| StoreError::msg("the Redis store's runtime stopped"))
    }

    /// Calls `make` inside the runtime, for what must be made within one (a lazy
    /// connection spawns its task where it is made).
    pub(super) fn enter<T>(&self, make: impl FnOnce() -> T) -> T {
        let _inside = self.handle.enter();
        make()
    }
}
