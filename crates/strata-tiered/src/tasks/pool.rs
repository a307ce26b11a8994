//! A bounded pool of named threads (Kafka's `RemoteStorageThreadPool` and
//! the RLM task pools): fixed size, bounded queue, a full queue is an error
//! the caller answers (never an unbounded backlog). A panicking job is
//! contained: it is logged and the worker keeps going.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queue is full (Kafka `RejectedExecutionException`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("pool {name} queue full ({capacity} pending)")]
pub struct PoolFull {
    pub name: &'static str,
    pub capacity: usize,
}

/// A fixed pool of `threads` workers over a queue of `capacity` jobs.
#[derive(Debug)]
pub struct BoundedPool {
    name: &'static str,
    capacity: usize,
    tx: Mutex<Option<SyncSender<Job>>>,
    pending: Arc<AtomicUsize>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl BoundedPool {
    /// Start `threads` workers named `<name>-N`.
    ///
    /// # Panics
    /// If the OS refuses to start a thread.
    pub fn new(name: &'static str, threads: usize, capacity: usize) -> BoundedPool {
        let (tx, rx) = mpsc::sync_channel::<Job>(capacity.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let pending = Arc::new(AtomicUsize::new(0));
        let workers = (0..threads.max(1))
            .map(|i| {
                let rx = Arc::clone(&rx);
                let pending = Arc::clone(&pending);
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || loop {
                        let job = {
                            let guard = rx.lock().unwrap_or_else(|p| p.into_inner());
                            guard.recv()
                        };
                        let Ok(job) = job else { return };
                        pending.fetch_sub(1, Ordering::AcqRel);
                        if catch_unwind(AssertUnwindSafe(job)).is_err() {
                            tracing::error!(
                                pool = name,
                                "a tiered-storage job panicked; worker continues"
                            );
                        }
                    })
                    .expect("spawn tiered-storage worker")
            })
            .collect();
        BoundedPool {
            name,
            capacity: capacity.max(1),
            tx: Mutex::new(Some(tx)),
            pending,
            workers: Mutex::new(workers),
        }
    }

    /// Queue a job.
    ///
    /// # Errors
    /// [`PoolFull`] when `capacity` jobs are already waiting (or the pool
    /// is shut down).
    pub fn try_submit(&self, job: impl FnOnce() + Send + 'static) -> Result<(), PoolFull> {
        let full = PoolFull {
            name: self.name,
            capacity: self.capacity,
        };
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        let tx = guard.as_ref().ok_or(full)?;
        self.pending.fetch_add(1, Ordering::AcqRel);
        match tx.try_send(Box::new(job)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.pending.fetch_sub(1, Ordering::AcqRel);
                Err(full)
            }
        }
    }

    /// Jobs waiting for a worker (Kafka `RemoteLogReaderTaskQueueSize`).
    pub fn queue_size(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Stop accepting jobs, let queued ones finish, join the workers.
    pub fn shutdown(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(|p| p.into_inner()));
        for w in workers {
            let _ = w.join();
        }
    }
}

impl Drop for BoundedPool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn full_queue_is_rejected_and_panics_are_contained() {
        let pool = BoundedPool::new("test-pool", 1, 1);
        let (gate_tx, gate_rx) = channel::<()>();
        let (started_tx, started_rx) = channel::<()>();
        pool.try_submit(move || {
            started_tx.send(()).unwrap();
            gate_rx.recv().unwrap();
        })
        .unwrap();
        started_rx.recv().unwrap(); // the worker is busy
        pool.try_submit(|| panic!("contained")).unwrap(); // fills the queue
        assert_eq!(
            pool.try_submit(|| {}),
            Err(PoolFull {
                name: "test-pool",
                capacity: 1
            })
        );
        assert_eq!(pool.queue_size(), 1);
        gate_tx.send(()).unwrap();
        let (done_tx, done_rx) = channel();
        // Once the panicking job ran, the same worker still takes jobs.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let tx = done_tx.clone();
            if pool.try_submit(move || tx.send(()).unwrap()).is_ok() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "queue never drained");
            std::thread::yield_now();
        }
        done_rx.recv().unwrap();
        pool.shutdown();
    }
}
