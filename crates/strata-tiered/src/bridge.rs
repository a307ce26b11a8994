//! The one bridge between the synchronous storage engine and the async
//! object store (docs/architecture.md decision 6): a small dedicated tokio
//! runtime; synchronous callers hand it a future and wait on a channel.
//!
//! Waiting on a channel instead of `Runtime::block_on` means a caller may
//! be any thread — a task pool, a reader thread, even a broker thread that
//! happens to be inside another runtime — without tokio's nested-runtime
//! panic. No lock is held across the wait.

use std::future::Future;
use std::sync::mpsc;

use crate::error::RemoteStorageError;

/// Owns the runtime that drives every object-store request.
#[derive(Debug)]
pub struct Bridge {
    /// `Some` until drop.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Bridge {
    /// A runtime with `threads` workers named `strata-tiered-io`.
    pub fn new(threads: usize) -> std::io::Result<Bridge> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("strata-tiered-io")
            .enable_all()
            .build()?;
        Ok(Bridge {
            runtime: Some(runtime),
        })
    }

    /// Run `fut` on the runtime and wait for its output.
    ///
    /// # Errors
    /// [`RemoteStorageError::Shutdown`] when the runtime stopped before the
    /// future finished.
    pub fn run<F, T>(&self, fut: F) -> Result<T, RemoteStorageError>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let runtime = self.runtime.as_ref().ok_or(RemoteStorageError::Shutdown)?;
        runtime.spawn(async move {
            // The receiver only goes away if the caller died; nothing to do then.
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| RemoteStorageError::Shutdown)
    }
}

impl Drop for Bridge {
    /// The last owner may be dropped on an async thread (broker shutdown),
    /// where a blocking runtime shutdown would panic: stop in the background.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
