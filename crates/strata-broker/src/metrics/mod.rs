//! The broker's Prometheus metrics, named as the Strimzi JMX-exporter rules
//! name Kafka's MBeans (`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec`
//! becomes `kafka_server_brokertopicmetrics_bytesin_total`), so Kafka
//! dashboards and alerts work unchanged. docs/metrics.md lists every metric
//! with its MBean.
//!
//! # Layout
//! - `family`: a metric family of one scrape and the collector writing it.
//! - `requests`: RequestMetrics (requests, errors, TotalTimeMs), updated on
//!   the request path through arrays indexed by API key.
//! - `topics`: BrokerTopicMetrics per topic, through cached handles.
//! - `network`: socket-server-metrics per listener.
//! - `log`, `replica`, `cleaner`, `remote`, `lag`, `process`,
//!   `fetch_sessions`: gauges computed at scrape time from the logs, the
//!   cluster view, the cleaner, the remote tier, the group coordinator,
//!   `/proc/self` and the fetch session cache.
//!
//! The broker holds [`Metrics`]; what one scrape reads from the broker is
//! `crate::scrape` (above the broker, so the broker does not depend on it).
//! A scrape reads in-memory state only (and `/proc`): each source's lock is
//! taken briefly to copy what the gauges show, never two at once.

pub(crate) mod cleaner;
pub(crate) mod family;
pub(crate) mod fetch_sessions;
pub(crate) mod groups;
pub(crate) mod lag;
pub(crate) mod log;
pub(crate) mod network;
pub(crate) mod process;
pub(crate) mod remote;
pub(crate) mod replica;
pub(crate) mod requests;
pub(crate) mod topics;

pub(crate) use family::Family;
pub(crate) use topics::{Appended, Fetched};

/// What `/metrics` answers with (prometheus-client writes OpenMetrics text,
/// which Prometheus negotiates and parses).
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics the request path updates.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// `kafka.network:type=RequestMetrics`.
    pub requests: requests::RequestMetrics,
    /// `kafka.server:type=BrokerTopicMetrics`.
    pub topics: topics::TopicMetrics,
    /// `kafka.server:type=socket-server-metrics`.
    pub network: network::NetworkMetrics,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        Metrics {
            requests: requests::RequestMetrics::new(),
            topics: topics::TopicMetrics::default(),
            network: network::NetworkMetrics::default(),
        }
    }
}
