//! Topic mutations in cluster mode: the request is validated here, written
//! to etcd by compare-and-swap (`cluster::admin`), and answered once this
//! broker has *applied* the result (the controller assigned the new
//! partitions and `partition_sync` created the local logs), so a client
//! that reads Metadata right after sees what it asked for.
//!
//! Replication factor: until replication lands every partition has one
//! replica; a larger factor is refused with a message saying so.

use std::collections::BTreeMap;
use std::time::Duration;

use strata_log::LogConfig;

use crate::api_error::ApiError;
use crate::broker::{effective_config, Broker};
use crate::cluster::{Cluster, ClusterError, Snapshot, TopicRecord, Versioned};
use crate::topics::{self, TopicInfo};

/// How long a request waits for the controller and this broker to act on
/// its change.
const APPLY_TIMEOUT: Duration = Duration::from_secs(15);

/// Compare-and-swap attempts before giving up on a busy topic.
const CAS_ATTEMPTS: usize = 5;

fn to_info(name: &str, r: &TopicRecord) -> TopicInfo {
    TopicInfo {
        name: name.to_string(),
        id: r.id,
        partitions: r.partitions,
        leader_epoch: 0,
        configs: r.configs.clone(),
    }
}

/// The newest snapshot the watch has seen (CAS reads from it, so a retry
/// after a lost race sees the winner's write).
fn latest(cluster: &Cluster) -> std::sync::Arc<Snapshot> {
    cluster.subscribe().borrow().clone()
}

fn check_partition_limit(b: &Broker, s: &Snapshot, more: i32) -> Result<(), ApiError> {
    let existing: i64 = s
        .topics
        .values()
        .map(|t| i64::from(t.value.partitions))
        .sum();
    if more > 0 && existing + i64::from(more) > b.config.max_partitions as i64 {
        return Err(ApiError::InvalidPartitions {
            reason: "the cluster would hold more partitions than strata.max.partitions allows",
        });
    }
    Ok(())
}

/// Wait until the applied snapshot has every partition of `name` (id `id`)
/// assigned.
fn wait_assigned(
    b: &Broker,
    cluster: &Cluster,
    name: &str,
    id: uuid::Uuid,
) -> Result<(), ApiError> {
    let what = format!("the controller to assign the partitions of {name}");
    b.block_on(cluster.wait_applied(&what, APPLY_TIMEOUT, |s| {
        s.fully_assigned(name) && s.topics.get(name).is_some_and(|t| t.value.id == id)
    }))
    .map(drop)
    .map_err(|e| match e {
        ClusterError::Waiting { .. } if cluster.applied().controller.is_none() => {
            ApiError::Cluster(ClusterError::NoController)
        }
        e => ApiError::Cluster(e),
    })
}

/// CreateTopics / auto-creation in cluster mode.
pub(crate) fn create_topic(
    b: &Broker,
    cluster: &Cluster,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<TopicInfo, ApiError> {
    if let Some(reason) = topics::invalid_topic_name_reason(name) {
        return Err(ApiError::InvalidTopic { reason });
    }
    if partitions <= 0 {
        return Err(ApiError::InvalidPartitions {
            reason: "number of partitions must be larger than 0",
        });
    }
    if replication_factor < 1 {
        return Err(ApiError::InvalidReplicationFactor {
            reason: "replication factor must be larger than 0",
        });
    }
    let config =
        LogConfig::with_overrides(&b.log_defaults(), &configs).map_err(ApiError::InvalidConfig)?;
    crate::tiered::validate_topic(b, &config, None)?;
    let s = latest(cluster);
    if s.brokers.len() < replication_factor as usize {
        return Err(ApiError::InvalidReplicationFactorOther {
            reason: format!(
                "Replication factor: {replication_factor} larger than available brokers: {}.",
                s.brokers.len()
            ),
        });
    }
    check_partition_limit(b, &s, partitions)?;
    if s.topics.contains_key(name) {
        return Err(ApiError::TopicAlreadyExists);
    }
    let record = TopicRecord {
        id: topics::new_topic_id(),
        partitions,
        replication_factor,
        configs,
    };
    if validate_only {
        return Ok(to_info(
            name,
            &TopicRecord {
                id: uuid::Uuid::nil(),
                ..record
            },
        ));
    }
    if !b
        .block_on(cluster.create_topic(name, &record))
        .map_err(ApiError::Cluster)?
    {
        // Ours already, if an earlier attempt applied but its answer was
        // lost with an etcd member (the store retried on another).
        let stored = b
            .block_on(cluster.topic_record(name))
            .map_err(ApiError::Cluster)?;
        if stored.is_none_or(|t| t.id != record.id) {
            return Err(ApiError::TopicAlreadyExists);
        }
    }
    tracing::info!(topic = name, partitions, id = %record.id, "created topic in the cluster metadata");
    wait_assigned(b, cluster, name, record.id)?;
    Ok(to_info(name, &record))
}

/// What one compare-and-swap attempt on a topic came to.
enum Attempt<T> {
    /// Answered (written and applied, or refused before writing).
    Done(T),
    /// The topic changed since it was read; read it again.
    Lost,
}

/// Run `attempt` on the newest record of topic `name` (and the snapshot it
/// is in) until it is not [`Attempt::Lost`], at most [`CAS_ATTEMPTS`] times.
fn on_topic<T>(
    cluster: &Cluster,
    name: &str,
    mut attempt: impl FnMut(&Snapshot, &Versioned<TopicRecord>) -> Result<Attempt<T>, ApiError>,
) -> Result<T, ApiError> {
    for _ in 0..CAS_ATTEMPTS {
        let s = latest(cluster);
        let t = s
            .topics
            .get(name)
            .ok_or(ApiError::UnknownTopicOrPartition)?;
        if let Attempt::Done(v) = attempt(&s, t)? {
            return Ok(v);
        }
        wait_newer(cluster, s.revision);
    }
    Err(ApiError::Cluster(ClusterError::Conflict))
}

/// DeleteTopics in cluster mode: the topic, its partition states and a
/// deletion marker go in one transaction; every broker holding one of its
/// partitions deletes it when it applies that (`partition_sync`).
pub(crate) fn delete_topic(
    b: &Broker,
    cluster: &Cluster,
    name: &str,
) -> Result<TopicInfo, ApiError> {
    on_topic(cluster, name, |_, t| {
        let id = t.value.id;
        if !b
            .block_on(cluster.delete_topic(name, t.mod_revision, id))
            .map_err(ApiError::Cluster)?
        {
            return Ok(Attempt::Lost);
        }
        tracing::info!(topic = name, %id, "deleted topic from the cluster metadata");
        let what = format!("the deletion of {name} to apply");
        b.block_on(cluster.wait_applied(&what, APPLY_TIMEOUT, |s| {
            s.topics.get(name).is_none_or(|t| t.value.id != id)
        }))
        .map_err(ApiError::Cluster)?;
        Ok(Attempt::Done(to_info(name, &t.value)))
    })
}

/// CreatePartitions in cluster mode.
pub(crate) fn add_partitions(
    b: &Broker,
    cluster: &Cluster,
    name: &str,
    count: i32,
    validate_only: bool,
) -> Result<TopicInfo, ApiError> {
    on_topic(cluster, name, |s, t| {
        if count <= t.value.partitions {
            return Err(ApiError::InvalidPartitions {
                reason: if count == t.value.partitions {
                    "topic already has the requested number of partitions"
                } else {
                    "topic currently has more partitions than requested"
                },
            });
        }
        check_partition_limit(b, s, count - t.value.partitions)?;
        if validate_only {
            return Ok(Attempt::Done(to_info(name, &t.value)));
        }
        let record = TopicRecord {
            partitions: count,
            ..t.value.clone()
        };
        if !b
            .block_on(cluster.update_topic(name, t.mod_revision, &record))
            .map_err(ApiError::Cluster)?
        {
            return Ok(Attempt::Lost);
        }
        tracing::info!(
            topic = name,
            partitions = count,
            "added partitions in the cluster metadata"
        );
        wait_assigned(b, cluster, name, record.id)?;
        Ok(Attempt::Done(to_info(name, &record)))
    })
}

/// AlterConfigs / IncrementalAlterConfigs of a TOPIC in cluster mode; every
/// broker applies the new overrides to its logs when it sees them.
pub(crate) fn alter_topic_configs(
    b: &Broker,
    cluster: &Cluster,
    name: &str,
    validate_only: bool,
    change: impl Fn(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, ApiError>,
) -> Result<(), ApiError> {
    on_topic(cluster, name, |_, t| {
        let new = change(&t.value.configs)?;
        let defaults = b.log_defaults();
        let new_config =
            LogConfig::with_overrides(&defaults, &new).map_err(ApiError::InvalidConfig)?;
        let info = to_info(name, &t.value);
        crate::tiered::validate_topic(b, &new_config, Some(&effective_config(&defaults, &info)))?;
        if validate_only {
            return Ok(Attempt::Done(()));
        }
        let record = TopicRecord {
            configs: new.clone(),
            ..t.value.clone()
        };
        if !b
            .block_on(cluster.update_topic(name, t.mod_revision, &record))
            .map_err(ApiError::Cluster)?
        {
            return Ok(Attempt::Lost);
        }
        let what = format!("the new configs of {name} to apply");
        b.block_on(cluster.wait_applied(&what, APPLY_TIMEOUT, |s| {
            s.topics.get(name).is_none_or(|t| t.value.configs == new)
        }))
        .map_err(ApiError::Cluster)?;
        tracing::info!(topic = name, configs = ?new, "altered topic configs in the cluster metadata");
        Ok(Attempt::Done(()))
    })
}

/// After a lost compare-and-swap: give the watch a moment to deliver the
/// winner's write before reading again.
fn wait_newer(cluster: &Cluster, revision: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while latest(cluster).revision <= revision && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}
