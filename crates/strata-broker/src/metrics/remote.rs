//! KIP-405 remote-storage metrics (`kafka.server:type=BrokerTopicMetrics`):
//! the broker-wide copy, delete and fetch-request counters the remote tier
//! keeps ([`strata_tiered::TieredMetrics`]), and `RemoteCopyLagBytes` /
//! `RemoteCopyLagSegments` per topic, computed from the local segments
//! and the highest offset in remote storage ([`copy_lag`]).
//!
//! `RemoteFetchBytesPerSec` and `RemoteFetchErrorsPerSec` are counted per
//! topic on the fetch path (`topics`).

use std::collections::BTreeMap;

use strata_tiered::TieredMetrics;

use super::family::{Family, Kind, Labels, Value};

/// One local segment: (next offset, bytes). The last is the active one.
pub(crate) type SegmentExtent = (i64, u64);

/// Bytes and segments waiting to be copied: closed segments wholly below
/// `copy_bound` (Kafka copies up to the last stable offset and high
/// watermark) with offsets above `highest_remote`.
pub(crate) fn copy_lag(
    segments: &[SegmentExtent],
    highest_remote: Option<i64>,
    copy_bound: i64,
) -> (u64, u64) {
    let copied_through = highest_remote.unwrap_or(-1);
    let closed = &segments[..segments.len().saturating_sub(1)];
    closed
        .iter()
        .filter(|(next, _)| *next <= copy_bound && next - 1 > copied_through)
        .fold((0, 0), |(b, n), (_, size)| (b + size, n + 1))
}

/// The broker-wide counters and the per-topic copy lag (`lag`: topic →
/// (bytes, segments)).
pub(crate) fn families(m: &TieredMetrics, lag: &BTreeMap<String, (u64, u64)>) -> Vec<Family> {
    let mut out = Vec::new();
    for (kafka_name, value) in m.snapshot() {
        // RemoteFetchBytes/Errors come per topic from the fetch path.
        let (name, help, kind, value) = match kafka_name {
            "RemoteCopyBytesPerSec" => (
                "kafka_server_brokertopicmetrics_remotecopybytes",
                "Bytes copied to the remote tier (Kafka RemoteCopyBytesPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteCopyRequestsPerSec" => (
                "kafka_server_brokertopicmetrics_remotecopyrequests",
                "Segment copies to the remote tier (Kafka RemoteCopyRequestsPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteCopyErrorsPerSec" => (
                "kafka_server_brokertopicmetrics_remotecopyerrors",
                "Segment copies that failed (Kafka RemoteCopyErrorsPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteFetchRequestsPerSec" => (
                "kafka_server_brokertopicmetrics_remotefetchrequests",
                "Reads from the remote tier (Kafka RemoteFetchRequestsPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteDeleteRequestsPerSec" => (
                "kafka_server_brokertopicmetrics_remotedeleterequests",
                "Remote segment deletions (Kafka RemoteDeleteRequestsPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteDeleteErrorsPerSec" => (
                "kafka_server_brokertopicmetrics_remotedeleteerrors",
                "Remote segment deletions that failed (Kafka RemoteDeleteErrorsPerSec).",
                Kind::Counter,
                Value::Counter(value),
            ),
            "RemoteLogMetadataCount" => (
                "kafka_server_brokertopicmetrics_remotelogmetadatacount",
                "Remote segments not yet deleted (Kafka RemoteLogMetadataCount).",
                Kind::Gauge,
                Value::Int(i64::try_from(value).unwrap_or(i64::MAX)),
            ),
            "RemoteLogSizeBytes" => (
                "kafka_server_brokertopicmetrics_remotelogsizebytes",
                "Bytes of those remote segments (Kafka RemoteLogSizeBytes).",
                Kind::Gauge,
                Value::Int(i64::try_from(value).unwrap_or(i64::MAX)),
            ),
            _ => continue,
        };
        let mut f = Family::new(name, help, kind);
        f.push(Labels::new(), value);
        out.push(f);
    }
    let mut bytes = Family::new(
        "kafka_server_brokertopicmetrics_remotecopylagbytes",
        "Bytes of closed local segments not yet copied to the remote tier (Kafka RemoteCopyLagBytes).",
        Kind::Gauge,
    );
    let mut segments = Family::new(
        "kafka_server_brokertopicmetrics_remotecopylagsegments",
        "Closed local segments not yet copied to the remote tier (Kafka RemoteCopyLagSegments).",
        Kind::Gauge,
    );
    let (all_b, all_s) = lag
        .values()
        .fold((0u64, 0u64), |(b, s), (lb, ls)| (b + lb, s + ls));
    let int = |v: u64| Value::Int(i64::try_from(v).unwrap_or(i64::MAX));
    bytes.push(Labels::new(), int(all_b));
    segments.push(Labels::new(), int(all_s));
    for (topic, (b, s)) in lag {
        bytes.push(vec![("topic", topic.clone())], int(*b));
        segments.push(vec![("topic", topic.clone())], int(*s));
    }
    out.push(bytes);
    out.push(segments);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_lag_counts_closed_uncopied_segments_below_the_bound() {
        // Segments ending at offsets 99, 199, 299 and the active one.
        let segs = [(100, 10), (200, 20), (300, 30), (350, 5)];
        assert_eq!(copy_lag(&segs, None, 350), (60, 3));
        assert_eq!(copy_lag(&segs, Some(99), 350), (50, 2));
        assert_eq!(copy_lag(&segs, Some(299), 350), (0, 0));
        // The third segment holds offsets the high watermark has not passed.
        assert_eq!(copy_lag(&segs, Some(99), 250), (20, 1));
        assert_eq!(copy_lag(&[], None, 0), (0, 0));
    }
}
