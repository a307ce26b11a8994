//! Consumer-group lag as kafka-lag-exporter names it:
//! `kafka_consumergroup_group_offset` / `_group_lag` per group and
//! partition, `_group_max_lag` / `_group_sum_lag` per group, and the
//! partitions' `kafka_partition_latest_offset` (high watermark) and
//! `kafka_partition_earliest_offset` (log start).
//!
//! [`lag`] is the pure part: committed offsets and partition offsets in,
//! lag rows out.

use std::collections::BTreeMap;

use super::family::{Family, Kind, Value};

/// A committed offset: (group, topic, partition, offset).
pub(crate) type Committed = (String, String, i32, i64);

/// A partition's earliest and latest offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartitionOffsets {
    pub earliest: i64,
    /// The high watermark: what a read-uncommitted consumer can reach.
    pub latest: i64,
}

/// One group's position on one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lag {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// `latest - offset`, never negative (a commit can be ahead of the
    /// high watermark a moment, or after a truncation).
    pub lag: i64,
}

/// The lag of every committed offset on a partition this broker hosts
/// (commits on partitions without a local log are left out: their high
/// watermark is not known here).
pub(crate) fn lag(
    committed: &[Committed],
    partitions: &BTreeMap<(String, i32), PartitionOffsets>,
) -> Vec<Lag> {
    committed
        .iter()
        .filter_map(|(group, topic, partition, offset)| {
            let p = partitions.get(&(topic.clone(), *partition))?;
            Some(Lag {
                group: group.clone(),
                topic: topic.clone(),
                partition: *partition,
                offset: *offset,
                lag: (p.latest - offset).max(0),
            })
        })
        .collect()
}

pub(crate) fn families(
    lags: &[Lag],
    partitions: &BTreeMap<(String, i32), PartitionOffsets>,
) -> Vec<Family> {
    let tp = |t: &str, p: i32| vec![("topic", t.to_string()), ("partition", p.to_string())];
    let mut offset = Family::new(
        "kafka_consumergroup_group_offset",
        "The group's committed offset on the partition.",
        Kind::Gauge,
    );
    let mut lag = Family::new(
        "kafka_consumergroup_group_lag",
        "High watermark minus the group's committed offset.",
        Kind::Gauge,
    );
    let mut max = Family::new(
        "kafka_consumergroup_group_max_lag",
        "The group's largest lag over its partitions.",
        Kind::Gauge,
    );
    let mut sum = Family::new(
        "kafka_consumergroup_group_sum_lag",
        "The group's lag summed over its partitions.",
        Kind::Gauge,
    );
    let mut per_group: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for l in lags {
        let mut labels = vec![("group", l.group.clone())];
        labels.extend(tp(&l.topic, l.partition));
        offset.push(labels.clone(), Value::Int(l.offset));
        lag.push(labels, Value::Int(l.lag));
        let g = per_group.entry(&l.group).or_default();
        g.0 = g.0.max(l.lag);
        g.1 = g.1.saturating_add(l.lag);
    }
    for (group, (m, s)) in per_group {
        max.push(vec![("group", group.to_string())], Value::Int(m));
        sum.push(vec![("group", group.to_string())], Value::Int(s));
    }
    let mut latest = Family::new(
        "kafka_partition_latest_offset",
        "The partition's high watermark.",
        Kind::Gauge,
    );
    let mut earliest = Family::new(
        "kafka_partition_earliest_offset",
        "The partition's log start offset.",
        Kind::Gauge,
    );
    for ((t, p), o) in partitions {
        latest.push(tp(t, *p), Value::Int(o.latest));
        earliest.push(tp(t, *p), Value::Int(o.earliest));
    }
    vec![offset, lag, max, sum, latest, earliest]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_is_the_high_watermark_minus_the_commit_never_negative() {
        let parts: BTreeMap<_, _> = [
            (
                ("t".to_string(), 0),
                PartitionOffsets {
                    earliest: 0,
                    latest: 110,
                },
            ),
            (
                ("t".to_string(), 1),
                PartitionOffsets {
                    earliest: 5,
                    latest: 7,
                },
            ),
        ]
        .into();
        let committed = vec![
            ("g".to_string(), "t".to_string(), 0, 100),
            ("g".to_string(), "t".to_string(), 1, 9),
            ("g".to_string(), "elsewhere".to_string(), 0, 1),
        ];
        let l = lag(&committed, &parts);
        assert_eq!(
            l.len(),
            2,
            "a partition without a local log has no lag here"
        );
        assert_eq!(l[0].lag, 10);
        assert_eq!(l[1].lag, 0);
        let f = families(&l, &parts);
        let max = &f[2].samples[0];
        assert_eq!(max.value, Value::Int(10));
        assert_eq!(f[3].samples[0].value, Value::Int(10));
        assert_eq!(f[4].samples.len(), 2);
    }
}
