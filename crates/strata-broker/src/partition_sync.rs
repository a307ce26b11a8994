//! Cluster mode: applies each metadata snapshot to this broker, then marks
//! it applied (requests are answered from the applied one only).
//!
//! - The topic store becomes an in-memory mirror of etcd's topics, and the
//!   dynamic broker configs (cluster default and this broker's) take
//!   etcd's levels, pushing new log defaults to every live log.
//! - A partition whose replicas include this broker gets its log (created
//!   with its topic id) and its topic's effective config, and the replica
//!   takes the partition's new state (`replication`: lead, or follow the
//!   leader).
//! - A partition this broker leads in `__consumer_offsets` is loaded into
//!   the group coordinator; one it stops leading is unloaded.
//! - A local partition is deleted only when etcd says so: its topic id has
//!   a deletion marker, or etcd's topic of that name has another id, or
//!   the controller assigned the partition to other brokers. A partition
//!   etcd knows nothing about is kept, with a WARN (Kafka's stray-partition
//!   rule: never delete on a guess).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use strata_log::TopicPartition;
use tokio::sync::watch;

use crate::broker::{effective_config, Broker};
use crate::cluster::{Cluster, Snapshot};
use crate::group::OFFSETS_TOPIC;
use crate::reconcile::read_partition_topic_id;
use crate::topics::TopicInfo;

/// Apply snapshots as the watch delivers them, until shutdown.
pub(crate) async fn run(
    broker: Arc<Broker>,
    cluster: Arc<Cluster>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut rx = cluster.subscribe();
    loop {
        let next = rx.borrow_and_update().clone();
        if let Err(error) = broker.security.apply_cluster(&next.security) {
            tracing::warn!(error = %strata_log::ErrorChain(&error), "ignoring an unreadable security document in etcd");
        }
        if next.revision != cluster.applied().revision {
            let previous = cluster.applied();
            let snapshot = next.clone();
            let led = broker
                .blocking(move |b| apply(b, &previous, &snapshot))
                .await;
            cluster.set_applied(next);
            // Leaderships are read from the applied snapshot: after set_applied.
            broker.blocking(crate::tiered::on_leadership_change).await;
            broker.groups.set_owned_partitions(&broker, led).await;
            let txn_led = transaction_partitions_led(&broker);
            broker.txn.set_owned_partitions(&broker, txn_led).await;
            broker.notify_appended();
        }
        tokio::select! {
            r = rx.changed() => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// The `__transaction_state` partitions this broker leads, with their
/// leader epochs (the transaction coordinator's epochs), per the applied
/// snapshot.
pub(crate) fn transaction_partitions_led(broker: &Broker) -> std::collections::BTreeMap<i32, i32> {
    let Some(cluster) = &broker.cluster else {
        return Default::default();
    };
    let s = cluster.applied();
    let me = broker.config.node_id;
    let count = broker
        .topics
        .get(crate::txn::TXN_TOPIC)
        .map_or(0, |t| t.partitions);
    (0..count)
        .filter_map(|p| {
            let st = s.partition(crate::txn::TXN_TOPIC, p)?;
            (st.value.leader == me).then_some((p, st.value.leader_epoch))
        })
        .collect()
}

/// The topics of `s` as the topic store holds them.
pub(crate) fn topic_infos(s: &Snapshot) -> Vec<TopicInfo> {
    s.topics
        .iter()
        .map(|(name, t)| TopicInfo {
            name: name.clone(),
            id: t.value.id,
            partitions: t.value.partitions,
            leader_epoch: 0,
            configs: t.value.configs.clone(),
        })
        .collect()
}

/// Apply `new` (blocking). Returns the `__consumer_offsets` partitions this
/// broker leads in it.
pub(crate) fn apply(b: &Broker, old: &Snapshot, new: &Snapshot) -> BTreeSet<i32> {
    let me = b.config.node_id;
    b.topics.replace_topics(topic_infos(new));
    let me_name = me.to_string();
    if let Some(defaults) = b
        .dynamic
        .replace_levels(new.broker_configs(""), new.broker_configs(&me_name))
    {
        tracing::info!("dynamic broker configs changed in the cluster; applying");
        b.push_log_defaults(&defaults);
    }
    let defaults = b.log_defaults();
    let mut led_offsets = BTreeSet::new();
    let mut held = HashSet::new();
    for ((topic, p), versioned) in &new.partitions {
        let state = &versioned.value;
        if !state.replicas.contains(&me) {
            continue;
        }
        let Some(info) = b.topics.get(topic).filter(|t| t.id == state.topic_id) else {
            continue;
        };
        let tp = TopicPartition::new(topic.clone(), *p);
        let config = effective_config(&defaults, &info);
        if b.refused.contains_key(&tp) {
            continue;
        }
        let log = match b.logs.get_or_create_log(&tp, config.clone(), Some(info.id)) {
            Ok(log) => log,
            Err(error) => {
                tracing::error!(%tp, error = %strata_log::ErrorChain(&error), "cannot create the log of an assigned partition");
                continue;
            }
        };
        if log.config() != config {
            log.update_config(config);
        }
        if let Some(replicas) = &b.replicas {
            replicas.apply(&tp, &log, state, versioned.mod_revision, new);
        }
        held.insert(tp);
        if state.leader == me && !state.leader_bounced(new) && topic == OFFSETS_TOPIC {
            led_offsets.insert(*p);
        }
    }
    if let Some(replicas) = &b.replicas {
        replicas.retain(&held);
    }
    remove_strays(b, new, old.revision == 0);
    led_offsets
}

/// Delete local partitions etcd confirms are not this broker's (see the
/// module doc); keep, with a WARN, those etcd does not know.
fn remove_strays(b: &Broker, s: &Snapshot, warn_unknown: bool) {
    let me = b.config.node_id;
    for log in b.logs.all_logs() {
        let tp = log.topic_partition().clone();
        let Some(on_disk) = read_partition_topic_id(&log.dir()) else {
            continue;
        };
        let reason = if s.deleted_topics.contains(&on_disk) {
            Some("its topic was deleted")
        } else {
            match s.topics.get(&tp.topic) {
                Some(t) if t.value.id != on_disk => Some("its topic was deleted and created again"),
                Some(t) if tp.partition >= t.value.partitions => None,
                Some(_) => match s.partition(&tp.topic, tp.partition) {
                    Some(st)
                        if st.value.topic_id == on_disk && !st.value.replicas.contains(&me) =>
                    {
                        Some("the controller assigned it to other brokers")
                    }
                    _ => None,
                },
                None => {
                    if warn_unknown {
                        tracing::warn!(%tp, topic_id = %on_disk, "the cluster metadata does not know this partition; keeping it untouched");
                    }
                    None
                }
            }
        };
        if let Some(reason) = reason {
            tracing::warn!(%tp, topic_id = %on_disk, reason, "deleting a stray partition");
            if let Err(error) = b.logs.async_delete(&tp) {
                tracing::error!(%tp, error = %strata_log::ErrorChain(&error), "could not delete a stray partition");
            }
        }
    }
}
