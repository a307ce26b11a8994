//! ElectLeaders and partition reassignment as a broker answers them
//! (`replication.md` §6.6, §8.1). In cluster mode any broker decides with
//! `cluster::leadership`'s pure rules on the newest snapshot, writes the
//! new partition state as a compare-and-swap on the partition key, and
//! answers once its *applied* snapshot shows the change (as
//! `cluster_admin` does for topics). The controller's `next_state` keeps a
//! live leader that is in the ISR, so an election written here stays.
//!
//! In single-node mode every partition has one replica, this broker: an
//! election is never needed and the only valid assignment is `[node.id]`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::cluster::{
    self, Cluster, ClusterError, ElectionRefused, ElectionType, PartitionRecord,
    ReassignmentRefused, Snapshot,
};
use crate::cluster_admin::{latest, wait_newer, CAS_ATTEMPTS};

/// Per topic, per partition: the outcome.
pub(crate) type Results = BTreeMap<String, Vec<(i32, Result<(), ApiError>)>>;

/// AlterPartitionReassignments' partitions: per topic, per partition a
/// target (`None`: cancel).
pub(crate) type ReassignRequests = Vec<(String, Vec<(i32, Option<Vec<i32>>)>)>;

/// Per topic, the partitions being reassigned with their state.
pub(crate) type Ongoing = BTreeMap<String, Vec<(i32, PartitionRecord)>>;

/// ElectLeaders. `partitions` `None`: every partition, and those that need
/// no election are left out of the answer.
pub(crate) fn elect_leaders(
    b: &Broker,
    kind: ElectionType,
    partitions: Option<Vec<(String, Vec<i32>)>>,
    timeout: Duration,
) -> Results {
    let all = partitions.is_none();
    let Some(cluster) = &b.cluster else {
        let mut out = Results::new();
        for (topic, ps) in partitions.unwrap_or_default() {
            let known = b.topics.get(&topic).map_or(0, |t| t.partitions);
            let results = out.entry(topic).or_default();
            for p in ps {
                results.push((p, Err(single_node_election(p, known))));
            }
        }
        return out;
    };
    let wanted = partitions.unwrap_or_else(|| {
        let s = latest(cluster);
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (topic, p) in s.partitions.keys() {
            by_topic.entry(topic.clone()).or_default().push(*p);
        }
        by_topic.into_iter().collect()
    });
    let mut out = Results::new();
    // (topic, partition, leader epoch written) to wait for.
    let mut written = Vec::new();
    for (topic, ps) in wanted {
        for p in ps {
            match write_election(b, cluster, &topic, p, kind) {
                Err(ApiError::Election(ElectionRefused::NotNeeded)) if all => continue,
                Ok(epoch) => {
                    written.push((topic.clone(), p, epoch));
                    out.entry(topic.clone()).or_default().push((p, Ok(())));
                }
                Err(e) => out.entry(topic.clone()).or_default().push((p, Err(e))),
            }
        }
    }
    if written.is_empty() {
        return out;
    }
    let shows = |s: &Snapshot, (topic, p, epoch): &(String, i32, i32)| {
        s.partition(topic, *p)
            .is_none_or(|st| st.value.leader_epoch >= *epoch)
    };
    let applied = b
        .block_on(cluster.wait_applied("the elected leaders", timeout, |s| {
            written.iter().all(|w| shows(s, w))
        }))
        .unwrap_or_else(|_| cluster.applied());
    for w in &written {
        if !shows(&applied, w) {
            let (topic, p, _) = w;
            if let Some(slot) = out
                .get_mut(topic)
                .and_then(|rs| rs.iter_mut().find(|(q, _)| q == p))
            {
                slot.1 = Err(ApiError::Cluster(ClusterError::Waiting {
                    what: format!("the election of {topic}-{p} to apply"),
                    after: timeout,
                }));
            }
        }
    }
    out
}

fn single_node_election(p: i32, known_partitions: i32) -> ApiError {
    if (0..known_partitions).contains(&p) {
        ApiError::Election(ElectionRefused::NotNeeded)
    } else {
        ApiError::UnknownTopicOrPartition
    }
}

/// Elect on one partition by compare-and-swap; returns the leader epoch
/// written.
fn write_election(
    b: &Broker,
    cluster: &Cluster,
    topic: &str,
    p: i32,
    kind: ElectionType,
) -> Result<i32, ApiError> {
    on_partition(b, cluster, topic, p, |s, current| {
        cluster::elect(s, current, kind).map_err(ApiError::Election)
    })
    .map(|r| r.map_or(-1, |(r, _)| r.leader_epoch))
}

/// Run `change` on the newest state of `topic`-`p` and write its result by
/// compare-and-swap, retrying a lost race. Returns what was written and at
/// which revision; `Ok(None)`: nothing to write.
fn on_partition(
    b: &Broker,
    cluster: &Cluster,
    topic: &str,
    p: i32,
    change: impl Fn(&Snapshot, &PartitionRecord) -> Result<PartitionRecord, ApiError>,
) -> Result<Option<(PartitionRecord, i64)>, ApiError> {
    for _ in 0..CAS_ATTEMPTS {
        let s = latest(cluster);
        let st = s
            .partition(topic, p)
            .filter(|st| {
                s.topics
                    .get(topic)
                    .is_some_and(|t| t.value.id == st.value.topic_id)
            })
            .ok_or(ApiError::UnknownTopicOrPartition)?;
        let record = change(&s, &st.value)?;
        if record == st.value {
            return Ok(None);
        }
        let done = b
            .block_on(cluster.alter_partition(topic, p, st.mod_revision, &record, &[]))
            .map_err(ApiError::Cluster)?;
        if let Some(revision) = done {
            tracing::info!(topic, partition = p, leader = record.leader, leader_epoch = record.leader_epoch, replicas = ?record.replicas, adding = ?record.adding_replicas, removing = ?record.removing_replicas, "changed a partition's state on request");
            return Ok(Some((record, revision)));
        }
        wait_newer(cluster, s.revision);
    }
    Err(ApiError::Cluster(ClusterError::Conflict))
}

/// AlterPartitionReassignments: per partition a target (`Some`) or a
/// cancellation (`None`). Answers once the change is applied here; the
/// move itself completes later (the controller, once the new replicas are
/// in the ISR).
pub(crate) fn alter_reassignments(
    b: &Broker,
    requests: ReassignRequests,
    timeout: Duration,
) -> Results {
    let mut out = Results::new();
    let mut newest = 0;
    for (topic, ps) in requests {
        for (p, target) in ps {
            let r = match &b.cluster {
                None => single_node_reassignment(b, &topic, p, target.as_deref()),
                Some(cluster) => on_partition(b, cluster, &topic, p, |s, current| {
                    match &target {
                        Some(t) => cluster::start_reassignment(s, current, t),
                        None => cluster::cancel_reassignment(
                            s,
                            current,
                            cluster.unclean_election_allowed(s, &topic),
                        ),
                    }
                    .map_err(ApiError::Reassignment)
                })
                .map(|written| {
                    if let Some((_, revision)) = written {
                        newest = newest.max(revision);
                    }
                }),
            };
            out.entry(topic.clone()).or_default().push((p, r));
        }
    }
    if let (Some(cluster), true) = (&b.cluster, newest > 0) {
        // Best effort: the change is in etcd; this only makes a List right
        // after see it.
        let _ =
            b.block_on(cluster.wait_applied("the reassignment", timeout, |s| s.revision >= newest));
    }
    out
}

fn single_node_reassignment(
    b: &Broker,
    topic: &str,
    p: i32,
    target: Option<&[i32]>,
) -> Result<(), ApiError> {
    let known = b.topics.get(topic).map_or(0, |t| t.partitions);
    if !(0..known).contains(&p) {
        return Err(ApiError::UnknownTopicOrPartition);
    }
    let refused = match target {
        None => ReassignmentRefused::NotInProgress,
        Some([]) => ReassignmentRefused::Empty,
        Some([only]) if *only == b.config.node_id => return Ok(()),
        Some(t) => match t.iter().find(|r| **r != b.config.node_id) {
            Some(other) => ReassignmentRefused::UnknownBroker(*other),
            None => ReassignmentRefused::Duplicate(b.config.node_id),
        },
    };
    Err(ApiError::Reassignment(refused))
}

/// ListPartitionReassignments: the partitions being reassigned, of the
/// given topics and partitions (`None`: all). Unknown ones are left out.
pub(crate) fn list_reassignments(b: &Broker, wanted: Option<Vec<(String, Vec<i32>)>>) -> Ongoing {
    let mut out = Ongoing::new();
    let Some(cluster) = &b.cluster else {
        return out;
    };
    let s = cluster.applied();
    let pick = |topic: &str, p: i32| {
        wanted
            .as_ref()
            .is_none_or(|w| w.iter().any(|(t, ps)| t == topic && ps.contains(&p)))
    };
    for ((topic, p), st) in &s.partitions {
        if cluster::is_reassigning(&st.value) && pick(topic, *p) {
            out.entry(topic.clone())
                .or_default()
                .push((*p, st.value.clone()));
        }
    }
    out
}
