//! `kafka.server:type=ReplicaManager` (`PartitionCount`, `LeaderCount`,
//! `UnderReplicatedPartitions`, `UnderMinIsrPartitionCount`,
//! `OfflineReplicaCount`) and `kafka.controller:type=KafkaController`
//! (`ActiveControllerCount`, `OfflinePartitionsCount`), computed by
//! [`counts`] from one fact per partition.
//!
//! `IsrShrinksPerSec` / `IsrExpandsPerSec` are not exported: the
//! replication module does not surface ISR changes as events yet.

use super::family::{Family, Kind, Labels, Value};

/// One partition as this broker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PartitionFacts {
    /// This broker holds a replica.
    pub hosted: bool,
    /// This broker leads it.
    pub leader_here: bool,
    /// Some broker leads it.
    pub has_leader: bool,
    pub replicas: usize,
    pub isr: usize,
    /// `min.insync.replicas` as configured (capped to the replicas here).
    pub min_isr: i32,
    /// This broker's replica is offline (refused at start, or its log dir failed).
    pub offline_here: bool,
}

/// The gauges' values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReplicaCounts {
    pub partitions: i64,
    pub leaders: i64,
    pub under_replicated: i64,
    pub under_min_isr: i64,
    pub offline_replicas: i64,
    pub active_controller: i64,
    pub offline_partitions: i64,
}

/// Kafka's definitions: under-replicated and under-min-ISR are counted by
/// the leader; offline partitions (no leader) only by the active
/// controller, so a cluster-wide `sum` counts each once.
pub(crate) fn counts(parts: &[PartitionFacts], active_controller: bool) -> ReplicaCounts {
    let mut c = ReplicaCounts {
        active_controller: i64::from(active_controller),
        ..ReplicaCounts::default()
    };
    for p in parts {
        if p.hosted {
            c.partitions += 1;
            if p.offline_here {
                c.offline_replicas += 1;
            }
        }
        if p.leader_here {
            c.leaders += 1;
            if p.isr < p.replicas {
                c.under_replicated += 1;
            }
            let min = usize::try_from(p.min_isr.max(1))
                .unwrap_or(1)
                .min(p.replicas.max(1));
            if p.isr < min {
                c.under_min_isr += 1;
            }
        }
        if active_controller && !p.has_leader {
            c.offline_partitions += 1;
        }
    }
    c
}

pub(crate) fn families(c: &ReplicaCounts) -> Vec<Family> {
    let rows: [(&'static str, &'static str, i64); 7] = [
        (
            "kafka_server_replicamanager_partitioncount",
            "Partitions with a replica on this broker (Kafka ReplicaManager PartitionCount).",
            c.partitions,
        ),
        (
            "kafka_server_replicamanager_leadercount",
            "Partitions this broker leads (Kafka ReplicaManager LeaderCount).",
            c.leaders,
        ),
        (
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Led partitions whose ISR is smaller than their replicas (Kafka ReplicaManager UnderReplicatedPartitions).",
            c.under_replicated,
        ),
        (
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Led partitions whose ISR is below min.insync.replicas (Kafka ReplicaManager UnderMinIsrPartitionCount).",
            c.under_min_isr,
        ),
        (
            "kafka_server_replicamanager_offlinereplicacount",
            "Replicas on this broker that are offline (Kafka ReplicaManager OfflineReplicaCount).",
            c.offline_replicas,
        ),
        (
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, else 0 (Kafka KafkaController ActiveControllerCount).",
            c.active_controller,
        ),
        (
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a leader, reported by the active controller (Kafka KafkaController OfflinePartitionsCount).",
            c.offline_partitions,
        ),
    ];
    rows.iter()
        .map(|(name, help, v)| {
            let mut f = Family::new(name, help, Kind::Gauge);
            f.push(Labels::new(), Value::Int(*v));
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LED: PartitionFacts = PartitionFacts {
        hosted: true,
        leader_here: true,
        has_leader: true,
        replicas: 3,
        isr: 3,
        min_isr: 2,
        offline_here: false,
    };

    #[test]
    fn under_replicated_and_under_min_isr_are_counted_by_the_leader() {
        let parts = [
            LED,
            PartitionFacts { isr: 2, ..LED },
            PartitionFacts { isr: 1, ..LED },
            // A follower's view of an under-replicated partition.
            PartitionFacts {
                leader_here: false,
                isr: 1,
                ..LED
            },
        ];
        let c = counts(&parts, false);
        assert_eq!(c.partitions, 4);
        assert_eq!(c.leaders, 3);
        assert_eq!(c.under_replicated, 2);
        assert_eq!(c.under_min_isr, 1);
        assert_eq!(c.active_controller, 0);
    }

    #[test]
    fn offline_partitions_are_the_controllers_to_report() {
        let parts = [
            PartitionFacts {
                hosted: true,
                leader_here: false,
                has_leader: false,
                offline_here: true,
                ..LED
            },
            PartitionFacts {
                hosted: false,
                leader_here: false,
                has_leader: false,
                ..LED
            },
        ];
        assert_eq!(counts(&parts, false).offline_partitions, 0);
        let c = counts(&parts, true);
        assert_eq!(c.offline_partitions, 2);
        assert_eq!(c.offline_replicas, 1);
        assert_eq!(c.active_controller, 1);
    }

    #[test]
    fn min_isr_above_the_replicas_is_capped() {
        let single = PartitionFacts {
            replicas: 1,
            isr: 1,
            min_isr: 2,
            ..LED
        };
        assert_eq!(counts(&[single], true).under_min_isr, 0);
    }
}
