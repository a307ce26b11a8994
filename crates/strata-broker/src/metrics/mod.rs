//! The broker's Prometheus metrics, named as the Strimzi JMX-exporter rules
//! name Kafka's MBeans (`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec`
//! becomes `kafka_server_brokertopicmetrics_bytesin_total`), so Kafka
//! dashboards and alerts work unchanged. docs/metrics.md lists every metric
//! with its MBean.
//!
//! Counters and histograms the request path updates live in [`Metrics`];
//! gauges read from the logs, groups, cleaner and remote tier are computed
//! at scrape time.

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::broker::Broker;

/// What `/metrics` answers with (prometheus-client writes OpenMetrics text,
/// which Prometheus negotiates and parses).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The broker's registry and the metrics the request path updates.
pub(crate) struct Metrics {
    registry: Registry,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        Metrics {
            registry: Registry::default(),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The text exposition of every metric, as `/metrics` serves it.
pub(crate) fn render(broker: &Broker) -> String {
    let mut out = String::new();
    if let Err(e) = encode(&mut out, &broker.metrics.registry) {
        tracing::warn!(error = %e, "encoding the metrics failed");
    }
    out
}
