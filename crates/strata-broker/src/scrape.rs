//! One `/metrics` scrape: every metric family, read from the broker's
//! in-memory state (the request-path instruments in `crate::metrics`, the
//! logs, the cluster view, the cleaner, the remote tier, the group
//! coordinator) and `/proc/self`, encoded as OpenMetrics text.

use std::collections::BTreeMap;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use strata_log::TopicPartition;

use crate::broker::Broker;
use crate::metrics::{
    cleaner, family, fetch_sessions, groups, lag, log, process, remote, replica, Family,
};

/// Every family of one scrape, in output order.
pub(crate) fn families(broker: &Broker) -> Vec<Family> {
    let m = &broker.metrics;
    m.topics.retain(|t| broker.topics.get(t).is_some());
    let logs = broker.logs.all_logs();
    let mut out = m.topics.families();
    out.extend(m.requests.families());
    out.extend(m.network.families());
    let facts: Vec<log::LogFacts> = logs.iter().map(|l| log::LogFacts::of(l)).collect();
    out.extend(log::families(&facts));
    out.extend(replica::families(&replica::counts(
        &partition_facts(broker, &logs),
        active_controller(broker),
    )));
    out.extend(cleaner::families(&broker.logs.cleaner().totals()));
    let sessions = broker.fetch_sessions.lock().stats();
    out.extend(fetch_sessions::families(&sessions));
    if let Some(rlm) = broker.tiered.get() {
        out.extend(remote::families(rlm.metrics(), &copy_lag(rlm, &logs)));
    }
    let offsets: BTreeMap<(String, i32), lag::PartitionOffsets> = logs
        .iter()
        .map(|l| {
            let tp = l.topic_partition();
            let o = lag::PartitionOffsets {
                earliest: l.log_start_offset().0,
                latest: l.high_watermark().0,
            };
            ((tp.topic.clone(), tp.partition), o)
        })
        .collect();
    let lags = lag::lag(&broker.groups.committed_offsets(), &offsets);
    out.extend(lag::families(&lags, &offsets));
    out.extend(groups::families(&broker.groups.group_counts()));
    out.extend(process::families());
    out
}

/// One fact per partition: the cluster's view in cluster mode, the local
/// logs (and partitions refused at start) on a single node.
fn partition_facts(
    broker: &Broker,
    logs: &[std::sync::Arc<strata_log::Log>],
) -> Vec<replica::PartitionFacts> {
    let me = broker.config.node_id;
    let local: BTreeMap<&TopicPartition, &strata_log::Log> = logs
        .iter()
        .map(|l| (l.topic_partition(), l.as_ref()))
        .collect();
    let offline_here = |tp: &TopicPartition| {
        broker.refused.contains_key(tp)
            || local.get(tp).is_some_and(|l| !l.dir_health().is_online())
    };
    let min_isr = |tp: &TopicPartition| local.get(tp).map_or(1, |l| l.config().min_insync_replicas);
    match &broker.cluster {
        Some(cluster) => cluster
            .applied()
            .partitions
            .iter()
            .map(|((topic, partition), v)| {
                let r = &v.value;
                let tp = TopicPartition {
                    topic: topic.clone(),
                    partition: *partition,
                };
                replica::PartitionFacts {
                    hosted: r.replicas.contains(&me),
                    leader_here: r.leader == me,
                    has_leader: r.leader >= 0,
                    replicas: r.replicas.len(),
                    isr: r.isr.len(),
                    min_isr: min_isr(&tp),
                    offline_here: r.replicas.contains(&me) && offline_here(&tp),
                }
            })
            .collect(),
        None => {
            let mut facts: Vec<_> = logs
                .iter()
                .map(|l| {
                    let online = !offline_here(l.topic_partition());
                    replica::PartitionFacts {
                        hosted: true,
                        leader_here: online,
                        has_leader: online,
                        replicas: 1,
                        isr: usize::from(online),
                        min_isr: l.config().min_insync_replicas,
                        offline_here: !online,
                    }
                })
                .collect();
            facts.extend(
                broker
                    .refused
                    .keys()
                    .filter(|tp| !local.contains_key(tp))
                    .map(|_| replica::PartitionFacts {
                        hosted: true,
                        leader_here: false,
                        has_leader: false,
                        replicas: 1,
                        isr: 0,
                        min_isr: 1,
                        offline_here: true,
                    }),
            );
            facts
        }
    }
}

/// A single node is its own controller; in cluster mode the snapshot says.
fn active_controller(broker: &Broker) -> bool {
    match &broker.cluster {
        None => true,
        Some(c) => c
            .applied()
            .controller
            .as_ref()
            .is_some_and(|ctl| ctl.record.id == broker.config.node_id),
    }
}

/// Copy lag per topic over the partitions the remote tier manages.
fn copy_lag(
    rlm: &strata_tiered::RemoteLogManager,
    logs: &[std::sync::Arc<strata_log::Log>],
) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in logs {
        let tp = l.topic_partition();
        if !rlm.is_tiered(tp) {
            continue;
        }
        let segments: Vec<remote::SegmentExtent> = l
            .segments()
            .iter()
            .map(|s| (s.next_offset.0, s.size))
            .collect();
        let bound = l.high_watermark().0.min(l.last_stable_offset().0);
        let highest = rlm.highest_offset_in_remote_storage(tp).map(|o| o.0);
        let (b, s) = remote::copy_lag(&segments, highest, bound);
        let e = out.entry(tp.topic.clone()).or_default();
        e.0 += b;
        e.1 += s;
    }
    out
}

/// The text exposition of every metric, as `/metrics` serves it.
pub(crate) fn render(broker: &Broker) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(family::Families(families(broker))));
    let mut out = String::new();
    if let Err(e) = encode(&mut out, &registry) {
        tracing::warn!(error = %e, "encoding the metrics failed");
    }
    out
}
