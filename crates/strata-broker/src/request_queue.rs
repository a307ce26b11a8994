//! The broker-wide bound on requests in hand: Kafka's `queued.max.requests`
//! and `queued.max.request.bytes`.
//!
//! Kafka's network threads put decoded requests on one request queue of
//! `queued.max.requests` entries for the handler threads and stop reading
//! their sockets while it is full; its memory pool (`queued.max.request.bytes`)
//! mutes a connection until the bytes of its next request can be allocated.
//! Strata has no handler threads: a request runs in its connection's task
//! and its storage work crosses into the blocking pool
//! (`Broker::blocking`). The same bounds hold here as two semaphores:
//!
//! - **bytes**: a connection takes a frame's size from the byte budget once
//!   the size prefix is in, before it reads (and buffers) the frame's body;
//!   a frame larger than the whole budget takes all of it (it waits for an
//!   empty queue instead of forever).
//! - **slots**: a whole frame takes one of `queued.max.requests` slots before
//!   it is dispatched.
//!
//! A connection waiting for either reads nothing more, so the client's
//! bytes back up into TCP. Both are held while the request is runnable or in
//! the storage pool, and given back when it is answered **or parks** — waits
//! in a purgatory (a long-poll Fetch, JoinGroup, acks=all) hold neither, as a
//! Kafka delayed operation is no longer in the request queue. Without that,
//! a few hundred idle consumers long-polling would hold every slot and
//! stall producers for `fetch.max.wait.ms`.
//!
//! "Parked" is read from the request's own task: [`Admitted`] polls the
//! request and, when it returns `Pending` while no storage call of the
//! request is outstanding ([`storage_call`], entered by `Broker::blocking`),
//! releases the admission. The request then continues without one.
//!
//! # Locks
//! None: two `tokio::sync::Semaphore`s and a task-local counter.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

tokio::task_local! {
    /// Storage calls outstanding in the current request's task.
    static STORAGE_CALLS: Cell<u32>;
}

/// The two broker-wide budgets every connection draws from.
#[derive(Debug)]
pub(crate) struct RequestQueue {
    slots: Arc<Semaphore>,
    /// `queued.max.request.bytes` (at most `u32::MAX`, the semaphore's
    /// largest single acquisition) and its semaphore; `None`: unbounded.
    bytes: Option<(u32, Arc<Semaphore>)>,
}

/// What one request holds while it is queued or handled (given back on drop).
#[derive(Debug, Default)]
pub(crate) struct Admission {
    _bytes: Option<OwnedSemaphorePermit>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl RequestQueue {
    /// `max_requests` slots (`queued.max.requests`, at least 1) and
    /// `max_bytes` (`queued.max.request.bytes`; `None` unbounded).
    pub(crate) fn new(max_requests: usize, max_bytes: Option<u64>) -> RequestQueue {
        let bytes = max_bytes.map(|b| {
            let b = u32::try_from(b).unwrap_or(u32::MAX).max(1);
            (b, Arc::new(Semaphore::new(b as usize)))
        });
        RequestQueue {
            slots: Arc::new(Semaphore::new(max_requests.max(1))),
            bytes,
        }
    }

    /// Take `frame_size` bytes of the byte budget (all of it when the frame
    /// is larger), waiting until they are free. Cancel safe.
    pub(crate) async fn reserve_bytes(&self, frame_size: usize) -> Option<OwnedSemaphorePermit> {
        let (max, bytes) = self.bytes.as_ref()?;
        let n = u32::try_from(frame_size).unwrap_or(u32::MAX).clamp(1, *max);
        // The semaphore is never closed.
        bytes.clone().acquire_many_owned(n).await.ok()
    }

    /// Take a request slot for a whole frame, waiting until one is free.
    /// Cancel safe.
    pub(crate) async fn admit(&self, bytes: Option<OwnedSemaphorePermit>) -> Admission {
        let slot = self.slots.clone().acquire_owned().await.ok();
        Admission {
            _bytes: bytes,
            _slot: slot,
        }
    }

    /// Slots free now.
    #[cfg(test)]
    pub(crate) fn free_slots(&self) -> usize {
        self.slots.available_permits()
    }
}

/// Run `request` holding `admission` until it completes or parks (see the
/// module docs).
pub(crate) async fn handle<F: Future>(admission: Admission, request: F) -> F::Output {
    STORAGE_CALLS
        .scope(
            Cell::new(0),
            Admitted {
                request: Box::pin(request),
                admission: Some(admission),
            },
        )
        .await
}

/// A request and the admission it holds until it first waits on anything
/// but the storage pool.
struct Admitted<F: Future> {
    request: Pin<Box<F>>,
    admission: Option<Admission>,
}

impl<F: Future> Future for Admitted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Both fields are Unpin (the request is boxed).
        let this = self.get_mut();
        let polled = this.request.as_mut().poll(cx);
        if polled.is_ready() {
            this.admission = None;
        } else if this.admission.is_some() {
            let in_storage = STORAGE_CALLS.try_with(|c| c.get() > 0).unwrap_or(false);
            if !in_storage {
                this.admission = None; // parked: a purgatory wait
            }
        }
        polled
    }
}

/// A storage call of the current request (held across `spawn_blocking`):
/// while one is outstanding, a `Pending` request is being handled, not
/// parked.
#[must_use]
pub(crate) struct StorageCall(());

/// Mark the start of a storage call; it ends when the guard drops. Outside
/// a request (background tasks) this counts nothing.
pub(crate) fn storage_call() -> StorageCall {
    let _ = STORAGE_CALLS.try_with(|c| c.set(c.get() + 1));
    StorageCall(())
}

impl Drop for StorageCall {
    fn drop(&mut self) {
        let _ = STORAGE_CALLS.try_with(|c| c.set(c.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_request_in_storage_keeps_its_slot_and_a_parked_one_gives_it_back() {
        let queue = Arc::new(RequestQueue::new(1, None));
        let admission = queue.admit(None).await;
        assert_eq!(queue.free_slots(), 0);
        let (park_tx, park_rx) = tokio::sync::oneshot::channel::<()>();
        let (stored_tx, stored_rx) = tokio::sync::oneshot::channel::<()>();
        let q = queue.clone();
        let task = tokio::spawn(handle(admission, async move {
            {
                let _call = storage_call();
                let held =
                    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)));
                stored_tx.send(()).unwrap();
                held.await.unwrap();
                // Still in storage when the blocking work ends: the slot was held.
                assert_eq!(q.free_slots(), 0);
            }
            park_rx.await.unwrap(); // a purgatory wait
            7
        }));
        stored_rx.await.unwrap();
        assert_eq!(queue.free_slots(), 0, "held while the storage call runs");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while queue.free_slots() == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "parked request kept its slot"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        park_tx.send(()).unwrap();
        assert_eq!(task.await.unwrap(), 7);
        assert_eq!(queue.free_slots(), 1);
    }

    #[tokio::test]
    async fn the_byte_budget_admits_a_frame_larger_than_itself_alone() {
        let queue = RequestQueue::new(10, Some(100));
        let first = queue.reserve_bytes(60).await;
        assert!(first.is_some());
        let waiting =
            tokio::time::timeout(Duration::from_millis(50), queue.reserve_bytes(1_000)).await;
        assert!(waiting.is_err(), "a frame larger than what is left waits");
        drop(first);
        let whole = tokio::time::timeout(Duration::from_secs(10), queue.reserve_bytes(1_000))
            .await
            .expect("admitted once the budget is free");
        assert!(whole.is_some());
        assert!(RequestQueue::new(1, None)
            .reserve_bytes(1 << 30)
            .await
            .is_none());
    }
}
