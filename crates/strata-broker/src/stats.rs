//! Counters the broker keeps about itself (exposed through
//! [`crate::BrokerHandle::stats`]; tests use them to check that a fetch was
//! served with `sendfile(2)`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters, updated with relaxed atomics.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub sendfile_calls: AtomicU64,
    pub sendfile_bytes: AtomicU64,
    pub connections_accepted: AtomicU64,
    /// Closed by `max.connections.per.ip` right after accept.
    pub connections_rejected: AtomicU64,
    /// Closed for idleness or a frame that did not arrive in time.
    pub connections_expired: AtomicU64,
    pub requests: AtomicU64,
    pub produced_batches_bytes: AtomicU64,
    /// Failed TLS handshakes and SASL authentications.
    pub authentication_failures: AtomicU64,
    /// Successful SASL authentications (and re-authentications).
    pub authentications: AtomicU64,
}

/// A point-in-time copy of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BrokerStats {
    /// Successful `sendfile(2)` calls that moved at least one byte.
    pub sendfile_calls: u64,
    /// Bytes moved by `sendfile(2)`.
    pub sendfile_bytes: u64,
    pub connections_accepted: u64,
    /// Connections refused by `max.connections.per.ip(.overrides)`.
    pub connections_rejected: u64,
    /// Connections closed by `connections.max.idle.ms` or
    /// `strata.request.receive.timeout.ms`.
    pub connections_expired: u64,
    pub requests: u64,
    /// Bytes of record batches appended by Produce.
    pub produced_bytes: u64,
    /// Failed TLS handshakes and SASL authentications.
    pub authentication_failures: u64,
    /// Successful SASL authentications (and re-authentications).
    pub authentications: u64,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> BrokerStats {
        BrokerStats {
            sendfile_calls: self.sendfile_calls.load(Ordering::Relaxed),
            sendfile_bytes: self.sendfile_bytes.load(Ordering::Relaxed),
            connections_accepted: self.connections_accepted.load(Ordering::Relaxed),
            connections_rejected: self.connections_rejected.load(Ordering::Relaxed),
            connections_expired: self.connections_expired.load(Ordering::Relaxed),
            requests: self.requests.load(Ordering::Relaxed),
            produced_bytes: self.produced_batches_bytes.load(Ordering::Relaxed),
            authentication_failures: self.authentication_failures.load(Ordering::Relaxed),
            authentications: self.authentications.load(Ordering::Relaxed),
        }
    }
}
