//! Tiered-storage counters with Kafka's `BrokerTopicMetrics` names
//! (reference §9). Kafka exposes them as meters; Strata keeps monotonic
//! counters (rates are the scraper's job) and two gauges.

use std::sync::atomic::{AtomicU64, Ordering};

/// Broker-wide tiered-storage metrics.
#[derive(Debug, Default)]
pub struct TieredMetrics {
    pub remote_copy_bytes: AtomicU64,
    pub remote_copy_requests: AtomicU64,
    pub remote_copy_errors: AtomicU64,
    pub remote_fetch_bytes: AtomicU64,
    pub remote_fetch_requests: AtomicU64,
    pub remote_fetch_errors: AtomicU64,
    pub remote_delete_requests: AtomicU64,
    pub remote_delete_errors: AtomicU64,
    /// Gauge: non-terminal remote segments at the last expiration run.
    pub remote_log_metadata_count: AtomicU64,
    /// Gauge: their bytes.
    pub remote_log_size_bytes: AtomicU64,
}

impl TieredMetrics {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// `(Kafka metric name, value)` for every metric.
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("RemoteCopyBytesPerSec", v(&self.remote_copy_bytes)),
            ("RemoteCopyRequestsPerSec", v(&self.remote_copy_requests)),
            ("RemoteCopyErrorsPerSec", v(&self.remote_copy_errors)),
            ("RemoteFetchBytesPerSec", v(&self.remote_fetch_bytes)),
            ("RemoteFetchRequestsPerSec", v(&self.remote_fetch_requests)),
            ("RemoteFetchErrorsPerSec", v(&self.remote_fetch_errors)),
            (
                "RemoteDeleteRequestsPerSec",
                v(&self.remote_delete_requests),
            ),
            ("RemoteDeleteErrorsPerSec", v(&self.remote_delete_errors)),
            ("RemoteLogMetadataCount", v(&self.remote_log_metadata_count)),
            ("RemoteLogSizeBytes", v(&self.remote_log_size_bytes)),
        ]
    }

    /// Prometheus text lines: `kafka_server_brokertopicmetrics_<name> <value>`.
    pub fn prometheus(&self) -> String {
        let mut out = String::new();
        for (name, value) in self.snapshot() {
            let kind = if name.ends_with("PerSec") {
                "counter"
            } else {
                "gauge"
            };
            out.push_str(&format!(
                "# TYPE kafka_server_brokertopicmetrics_{0} {kind}\nkafka_server_brokertopicmetrics_{0} {value}\n",
                name.to_ascii_lowercase()
            ));
        }
        out
    }
}
