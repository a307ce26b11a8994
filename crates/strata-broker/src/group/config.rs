//! Group coordinator settings, read from the broker's properties with
//! Kafka's names and defaults, validated in one pass.

use std::collections::BTreeMap;
use std::str::FromStr;

use thiserror::Error;

/// A group coordinator property with a value Kafka would reject.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GroupConfigError {
    #[error("invalid value {value:?} for {name}: {reason}")]
    Invalid {
        name: &'static str,
        value: String,
        reason: &'static str,
    },
}

/// Typed coordinator configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupConfig {
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size` (Integer.MAX_VALUE).
    pub max_size: usize,
    /// `offsets.retention.minutes` (10080) in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms` (600000).
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.topic.num.partitions` (50).
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.segment.bytes` (104857600).
    pub offsets_topic_segment_bytes: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: i32::MAX as usize,
            offsets_retention_ms: 10_080 * 60_000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            offsets_topic_num_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
        }
    }
}

impl GroupConfig {
    /// Whether the coordinator reads property `name` (the broker warns
    /// about names nobody reads).
    pub(crate) fn is_known(name: &str) -> bool {
        const NAMES: &[&str] = &[
            "group.min.session.timeout.ms",
            "group.max.session.timeout.ms",
            "group.initial.rebalance.delay.ms",
            "group.max.size",
            "offsets.retention.minutes",
            "offsets.retention.check.interval.ms",
            "offset.metadata.max.bytes",
            "offsets.topic.num.partitions",
            "offsets.topic.segment.bytes",
        ];
        NAMES.contains(&name)
    }

    /// Build from broker properties; absent names take Kafka's defaults.
    ///
    /// # Errors
    /// [`GroupConfigError::Invalid`] naming the first bad property.
    pub(crate) fn from_properties(
        props: &BTreeMap<String, String>,
    ) -> Result<GroupConfig, GroupConfigError> {
        let d = GroupConfig::default();
        let min_session = get(
            props,
            "group.min.session.timeout.ms",
            d.min_session_timeout_ms,
        )?;
        let max_session = get(
            props,
            "group.max.session.timeout.ms",
            d.max_session_timeout_ms,
        )?;
        let delay = get(
            props,
            "group.initial.rebalance.delay.ms",
            d.initial_rebalance_delay_ms,
        )?;
        let max_size = get(props, "group.max.size", i32::MAX)?;
        let retention_min = get(props, "offsets.retention.minutes", 10_080i32)?;
        let check = get(
            props,
            "offsets.retention.check.interval.ms",
            d.offsets_retention_check_interval_ms,
        )?;
        let meta = get(props, "offset.metadata.max.bytes", 4096i32)?;
        let partitions = get(props, "offsets.topic.num.partitions", 50i32)?;
        let segment = get(
            props,
            "offsets.topic.segment.bytes",
            d.offsets_topic_segment_bytes,
        )?;
        let checks: [(&'static str, i64, bool, &'static str); 7] = [
            (
                "group.initial.rebalance.delay.ms",
                delay.into(),
                delay >= 0,
                "must be >= 0",
            ),
            (
                "group.max.size",
                max_size.into(),
                max_size >= 1,
                "must be >= 1",
            ),
            (
                "offsets.retention.minutes",
                retention_min.into(),
                retention_min >= 1,
                "must be >= 1",
            ),
            (
                "offsets.retention.check.interval.ms",
                check,
                check >= 1,
                "must be >= 1",
            ),
            (
                "offset.metadata.max.bytes",
                meta.into(),
                meta >= 0,
                "must be >= 0",
            ),
            (
                "offsets.topic.num.partitions",
                partitions.into(),
                partitions >= 1,
                "must be >= 1",
            ),
            (
                "offsets.topic.segment.bytes",
                segment.into(),
                segment >= 1,
                "must be >= 1",
            ),
        ];
        for (name, value, ok, reason) in checks {
            if !ok {
                return Err(GroupConfigError::Invalid {
                    name,
                    value: value.to_string(),
                    reason,
                });
            }
        }
        if min_session > max_session {
            return Err(GroupConfigError::Invalid {
                name: "group.min.session.timeout.ms",
                value: min_session.to_string(),
                reason: "must not exceed group.max.session.timeout.ms",
            });
        }
        Ok(GroupConfig {
            min_session_timeout_ms: min_session,
            max_session_timeout_ms: max_session,
            initial_rebalance_delay_ms: delay,
            max_size: max_size as usize,
            offsets_retention_ms: i64::from(retention_min) * 60_000,
            offsets_retention_check_interval_ms: check,
            offset_metadata_max_bytes: meta as usize,
            offsets_topic_num_partitions: partitions,
            offsets_topic_segment_bytes: segment,
        })
    }
}

fn get<T: FromStr>(
    props: &BTreeMap<String, String>,
    name: &'static str,
    default: T,
) -> Result<T, GroupConfigError> {
    match props.get(name) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|_| GroupConfigError::Invalid {
            name,
            value: v.clone(),
            reason: "not a number of the expected type",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let c = GroupConfig::from_properties(&BTreeMap::new()).unwrap();
        assert_eq!(c, GroupConfig::default());
        assert_eq!(c.offsets_retention_ms, 604_800_000);
        assert_eq!(c.initial_rebalance_delay_ms, 3000);
    }

    #[test]
    fn overrides_and_errors() {
        let mut p = BTreeMap::new();
        p.insert(
            "group.initial.rebalance.delay.ms".to_string(),
            "0".to_string(),
        );
        p.insert("offsets.retention.minutes".to_string(), "1".to_string());
        let c = GroupConfig::from_properties(&p).unwrap();
        assert_eq!(
            (c.initial_rebalance_delay_ms, c.offsets_retention_ms),
            (0, 60_000)
        );
        p.insert("offsets.topic.num.partitions".to_string(), "0".to_string());
        assert!(matches!(
            GroupConfig::from_properties(&p),
            Err(GroupConfigError::Invalid {
                name: "offsets.topic.num.partitions",
                ..
            })
        ));
        p.insert("offsets.topic.num.partitions".to_string(), "x".to_string());
        assert!(GroupConfig::from_properties(&p).is_err());
    }
}
