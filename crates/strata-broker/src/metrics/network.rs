//! `kafka.server:type=socket-server-metrics,listener=<name>`: open
//! connections and connections created and closed, per listener.
//!
//! A connection holds an [`OpenConnection`] for its life; dropping it
//! counts the close, so every way out of the connection task is counted.
//!
//! `NetworkProcessorAvgIdlePercent` is not exported: connections run as
//! tokio tasks on a shared runtime, there is no network-processor thread
//! whose idle time could be measured honestly.
//!
//! Locking: `listeners` is a leaf lock, taken once per connection.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::family::{Family, Kind, Value};

#[derive(Debug, Default)]
struct ListenerCounters {
    open: AtomicI64,
    created: AtomicU64,
    closed: AtomicU64,
}

/// Connection counters per listener name.
#[derive(Debug, Default)]
pub(crate) struct NetworkMetrics {
    listeners: Mutex<BTreeMap<String, Arc<ListenerCounters>>>,
}

/// One open connection; dropping it counts the close.
#[derive(Debug)]
pub(crate) struct OpenConnection(Arc<ListenerCounters>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
        self.0.closed.fetch_add(1, Ordering::Relaxed);
    }
}

impl NetworkMetrics {
    /// A connection on `listener` was accepted.
    pub(crate) fn opened(&self, listener: &str) -> OpenConnection {
        let c = self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(listener.to_string())
            .or_default()
            .clone();
        c.open.fetch_add(1, Ordering::Relaxed);
        c.created.fetch_add(1, Ordering::Relaxed);
        OpenConnection(c)
    }

    pub(crate) fn families(&self) -> Vec<Family> {
        let mut count = Family::new(
            "kafka_server_socket_server_metrics_connection_count",
            "Open connections (Kafka socket-server-metrics connection-count).",
            Kind::Gauge,
        );
        let mut created = Family::new(
            "kafka_server_socket_server_metrics_connection_creation",
            "Connections accepted (Kafka socket-server-metrics connection-creation-total).",
            Kind::Counter,
        );
        let mut closed = Family::new(
            "kafka_server_socket_server_metrics_connection_close",
            "Connections closed (Kafka socket-server-metrics connection-close-total).",
            Kind::Counter,
        );
        let listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        for (name, c) in listeners.iter() {
            let l = || vec![("listener", name.clone())];
            count.push(l(), Value::Int(c.open.load(Ordering::Relaxed)));
            created.push(l(), Value::Counter(c.created.load(Ordering::Relaxed)));
            closed.push(l(), Value::Counter(c.closed.load(Ordering::Relaxed)));
        }
        vec![count, created, closed]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_connection_counts_its_close() {
        let m = NetworkMetrics::default();
        let a = m.opened("PLAINTEXT");
        let b = m.opened("PLAINTEXT");
        drop(a);
        let f = m.families();
        assert_eq!(f[0].samples[0].value, Value::Int(1));
        assert_eq!(f[1].samples[0].value, Value::Counter(2));
        assert_eq!(f[2].samples[0].value, Value::Counter(1));
        drop(b);
        assert_eq!(m.families()[0].samples[0].value, Value::Int(0));
    }
}
