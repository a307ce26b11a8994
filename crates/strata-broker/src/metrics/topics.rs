//! `kafka.server:type=BrokerTopicMetrics`: bytes in and out, messages in,
//! total and failed produce and fetch requests, per topic and for all
//! topics (the series without a `topic` label), plus the remote-fetch
//! bytes and errors the fetch path sees per topic.
//!
//! The request path resolves a topic's counters once per partition of a
//! request ([`TopicMetrics::topic`]: a read lock and one hash lookup) and
//! then adds with relaxed atomics.
//!
//! Locking: `topics` is a leaf lock, held only to look up or insert a handle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::family::{Family, Kind, Labels, Value};

/// The counters of one topic (or of all topics).
#[derive(Debug, Default)]
pub(crate) struct TopicCounters {
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub messages_in: AtomicU64,
    pub total_produce: AtomicU64,
    pub failed_produce: AtomicU64,
    pub total_fetch: AtomicU64,
    pub failed_fetch: AtomicU64,
    pub remote_fetch_bytes: AtomicU64,
    pub remote_fetch_errors: AtomicU64,
}

/// (metric name, help, field) of every counter, in output order.
type Field = fn(&TopicCounters) -> &AtomicU64;
const COUNTERS: [(&str, &str, Field); 9] = [
    (
        "kafka_server_brokertopicmetrics_bytesin",
        "Bytes of record batches appended by Produce (Kafka BytesInPerSec).",
        |c| &c.bytes_in,
    ),
    (
        "kafka_server_brokertopicmetrics_bytesout",
        "Bytes of records returned to consumers by Fetch, replication excluded (Kafka BytesOutPerSec).",
        |c| &c.bytes_out,
    ),
    (
        "kafka_server_brokertopicmetrics_messagesin",
        "Records appended by Produce (Kafka MessagesInPerSec).",
        |c| &c.messages_in,
    ),
    (
        "kafka_server_brokertopicmetrics_totalproducerequests",
        "Partition appends attempted by Produce (Kafka TotalProduceRequestsPerSec).",
        |c| &c.total_produce,
    ),
    (
        "kafka_server_brokertopicmetrics_failedproducerequests",
        "Partition appends by Produce that failed (Kafka FailedProduceRequestsPerSec).",
        |c| &c.failed_produce,
    ),
    (
        "kafka_server_brokertopicmetrics_totalfetchrequests",
        "Partition reads by Fetch, consumers and followers (Kafka TotalFetchRequestsPerSec).",
        |c| &c.total_fetch,
    ),
    (
        "kafka_server_brokertopicmetrics_failedfetchrequests",
        "Partition reads by Fetch answered with an error (Kafka FailedFetchRequestsPerSec).",
        |c| &c.failed_fetch,
    ),
    (
        "kafka_server_brokertopicmetrics_remotefetchbytes",
        "Bytes read from the remote tier (Kafka RemoteFetchBytesPerSec, KIP-405).",
        |c| &c.remote_fetch_bytes,
    ),
    (
        "kafka_server_brokertopicmetrics_remotefetcherrors",
        "Remote-tier reads that failed (Kafka RemoteFetchErrorsPerSec, KIP-405).",
        |c| &c.remote_fetch_errors,
    ),
];

impl TopicCounters {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// Every topic's counters and the all-topics sum.
#[derive(Debug, Default)]
pub(crate) struct TopicMetrics {
    all: TopicCounters,
    topics: RwLock<HashMap<String, Arc<TopicCounters>>>,
}

/// What one partition of a Produce request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Appended {
    /// Appended `bytes` of batches holding `records` records.
    Ok {
        bytes: u64,
        records: u64,
    },
    Failed,
}

/// What one partition of a Fetch request returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fetched {
    /// Bytes of records in the answer (local or remote).
    pub bytes: u64,
    /// The answer carried an error code.
    pub failed: bool,
    /// The records came from the remote tier.
    pub remote: bool,
    /// The fetcher is a follower (its bytes are replication, not BytesOut).
    pub follower: bool,
}

impl TopicMetrics {
    /// The counters of `topic`, created on first use.
    pub(crate) fn topic(&self, topic: &str) -> Arc<TopicCounters> {
        if let Some(c) = self
            .topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(topic)
        {
            return c.clone();
        }
        self.topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(topic.to_string())
            .or_default()
            .clone()
    }

    /// Count one partition of a Produce request.
    pub(crate) fn produced(&self, topic: &TopicCounters, outcome: Appended) {
        for c in [topic, &self.all] {
            TopicCounters::add(&c.total_produce, 1);
            match outcome {
                Appended::Ok { bytes, records } => {
                    TopicCounters::add(&c.bytes_in, bytes);
                    TopicCounters::add(&c.messages_in, records);
                }
                Appended::Failed => TopicCounters::add(&c.failed_produce, 1),
            }
        }
    }

    /// Count one partition of a Fetch request.
    pub(crate) fn fetched(&self, topic: &TopicCounters, f: Fetched) {
        for c in [topic, &self.all] {
            TopicCounters::add(&c.total_fetch, 1);
            if f.failed {
                TopicCounters::add(&c.failed_fetch, 1);
            }
            if !f.follower {
                TopicCounters::add(&c.bytes_out, f.bytes);
            }
            if f.remote {
                TopicCounters::add(&c.remote_fetch_bytes, f.bytes);
            }
        }
    }

    /// A read of `topic` from the remote tier failed.
    pub(crate) fn remote_fetch_failed(&self, topic: &str) {
        let t = self.topic(topic);
        for c in [&*t, &self.all] {
            TopicCounters::add(&c.remote_fetch_errors, 1);
        }
    }

    /// Forget topics for which `exists` is false (deleted topics lose
    /// their series, as Kafka removes their MBeans).
    pub(crate) fn retain(&self, exists: impl Fn(&str) -> bool) {
        self.topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, _| exists(name));
    }

    /// One family per counter: the all-topics series, then one per topic.
    pub(crate) fn families(&self) -> Vec<Family> {
        let topics: Vec<(String, Arc<TopicCounters>)> = {
            let map = self.topics.read().unwrap_or_else(|e| e.into_inner());
            let mut v: Vec<_> = map.iter().map(|(k, c)| (k.clone(), c.clone())).collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        COUNTERS
            .iter()
            .map(|(name, help, field)| {
                let mut f = Family::new(name, help, Kind::Counter);
                let load = |c: &TopicCounters| Value::Counter(field(c).load(Ordering::Relaxed));
                f.push(Labels::new(), load(&self.all));
                for (topic, c) in &topics {
                    f.push(vec![("topic", topic.clone())], load(c));
                }
                f
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(f: &[Family], name: &str, topic: Option<&str>) -> Option<Value> {
        let labels: Labels = topic
            .map(|t| ("topic", t.to_string()))
            .into_iter()
            .collect();
        f.iter()
            .find(|f| f.name == name)?
            .samples
            .iter()
            .find(|s| s.labels == labels)
            .map(|s| s.value.clone())
    }

    #[test]
    fn produce_and_fetch_count_per_topic_and_in_the_sum() {
        let m = TopicMetrics::default();
        let a = m.topic("a");
        let b = m.topic("b");
        m.produced(
            &a,
            Appended::Ok {
                bytes: 100,
                records: 3,
            },
        );
        m.produced(
            &b,
            Appended::Ok {
                bytes: 50,
                records: 1,
            },
        );
        m.produced(&b, Appended::Failed);
        let fetch = Fetched {
            bytes: 70,
            failed: false,
            remote: false,
            follower: false,
        };
        m.fetched(&a, fetch);
        m.fetched(
            &a,
            Fetched {
                follower: true,
                ..fetch
            },
        );
        let f = m.families();
        let bytes_in = "kafka_server_brokertopicmetrics_bytesin";
        assert_eq!(value(&f, bytes_in, None), Some(Value::Counter(150)));
        assert_eq!(value(&f, bytes_in, Some("a")), Some(Value::Counter(100)));
        let failed = "kafka_server_brokertopicmetrics_failedproducerequests";
        assert_eq!(value(&f, failed, Some("b")), Some(Value::Counter(1)));
        let out = "kafka_server_brokertopicmetrics_bytesout";
        assert_eq!(
            value(&f, out, Some("a")),
            Some(Value::Counter(70)),
            "follower bytes are not BytesOut"
        );
        let total_fetch = "kafka_server_brokertopicmetrics_totalfetchrequests";
        assert_eq!(value(&f, total_fetch, None), Some(Value::Counter(2)));
    }

    #[test]
    fn the_same_handle_is_returned_and_retain_forgets_deleted_topics() {
        let m = TopicMetrics::default();
        assert!(Arc::ptr_eq(&m.topic("t"), &m.topic("t")));
        m.topic("gone");
        m.retain(|t| t == "t");
        let f = m.families();
        assert!(value(&f, "kafka_server_brokertopicmetrics_bytesin", Some("gone")).is_none());
        assert!(value(&f, "kafka_server_brokertopicmetrics_bytesin", Some("t")).is_some());
    }
}
