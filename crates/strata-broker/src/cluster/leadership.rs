//! Leadership and replica-set changes an operator asks for, as pure
//! functions of a [`Snapshot`] (`replication.md` §6.6, §8.1, §8.3):
//!
//! - [`elect`]: ElectLeaders' preferred and unclean elections (Kafka's
//!   `PartitionLeaderElectionAlgorithms`);
//! - [`rebalance`]: preferred-leader balancing, the ZooKeeper controller's
//!   `checkAndTriggerAutoLeaderRebalance` rule;
//! - [`start_reassignment`], [`cancel_reassignment`],
//!   [`complete_reassignment`]: partition reassignment (KIP-455).
//!
//! The writes are elsewhere: any broker writes an election or a
//! reassignment as a compare-and-swap on the partition key
//! (`cluster_admin`); the controller writes balancing elections and
//! completions (`controller`, `policy::plan`).

use std::collections::BTreeMap;

use super::layout::{PartitionRecord, Snapshot, Versioned};
use super::policy::Decision;

/// ElectLeaders' `ElectionType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ElectionType {
    /// 0: the first replica, if it is live and in the ISR.
    Preferred,
    /// 1: only for a partition without a live leader; may pick a replica
    /// outside the ISR.
    Unclean,
}

impl ElectionType {
    /// The wire value; `None` for one Kafka does not define.
    pub(crate) fn from_wire(value: i8) -> Option<ElectionType> {
        match value {
            0 => Some(ElectionType::Preferred),
            1 => Some(ElectionType::Unclean),
            _ => None,
        }
    }
}

/// Why an election changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ElectionRefused {
    #[error("Leader election not needed for topic partition.")]
    NotNeeded,
    #[error("The preferred leader is not live or not in the ISR.")]
    PreferredNotAvailable,
    #[error("No replica of the partition is live.")]
    EligibleNotAvailable,
}

/// The state after an election of `kind` on `p`: a new leader with the
/// leader and partition epochs bumped. An unclean election that finds a
/// live ISR member elects it cleanly; otherwise the first live replica
/// leads with an ISR of itself.
///
/// # Errors
/// [`ElectionRefused`]: nothing to change, or nobody eligible.
pub(crate) fn elect(
    s: &Snapshot,
    p: &PartitionRecord,
    kind: ElectionType,
) -> Result<PartitionRecord, ElectionRefused> {
    let (leader, isr) = match kind {
        ElectionType::Preferred => {
            let preferred = *p
                .replicas
                .first()
                .ok_or(ElectionRefused::PreferredNotAvailable)?;
            if p.leader == preferred {
                return Err(ElectionRefused::NotNeeded);
            }
            if !s.is_eligible(preferred) || !p.isr.contains(&preferred) {
                return Err(ElectionRefused::PreferredNotAvailable);
            }
            (preferred, p.isr.clone())
        }
        ElectionType::Unclean => {
            if p.leader >= 0 && s.is_live(p.leader) {
                return Err(ElectionRefused::NotNeeded);
            }
            let live_isr: Vec<i32> = p
                .isr
                .iter()
                .copied()
                .filter(|r| s.is_eligible(*r))
                .collect();
            if let Some(r) = p.replicas.iter().copied().find(|r| live_isr.contains(r)) {
                (r, live_isr)
            } else if let Some(r) = p.replicas.iter().copied().find(|r| s.is_eligible(*r)) {
                (r, vec![r])
            } else {
                return Err(ElectionRefused::EligibleNotAvailable);
            }
        }
    };
    Ok(PartitionRecord {
        leader,
        isr,
        leader_epoch: p.leader_epoch + 1,
        partition_epoch: p.partition_epoch + 1,
        ..p.clone()
    }
    .stamped(s))
}

/// Preferred-leader balancing (`leader.imbalance.per.broker.percentage`):
/// for each broker B, the partitions whose first replica is B but whose
/// leader is not; when they are more than `percentage`% of B's preferred
/// partitions, a preferred election of each whose B is live and in the
/// ISR. Partitions being reassigned are left alone, as Kafka's controller
/// does.
pub(crate) fn rebalance(s: &Snapshot, percentage: u32) -> Vec<Decision> {
    type Candidates<'a> = (
        u64,
        Vec<(&'a (String, i32), &'a Versioned<PartitionRecord>)>,
    );
    let mut per_broker: BTreeMap<i32, Candidates<'_>> = BTreeMap::new();
    for (key, st) in &s.partitions {
        let p = &st.value;
        if is_reassigning(p) || !s.topics.contains_key(&key.0) {
            continue;
        }
        let Some(&preferred) = p.replicas.first() else {
            continue;
        };
        let entry = per_broker.entry(preferred).or_default();
        entry.0 += 1;
        if p.leader != preferred {
            entry.1.push((key, st));
        }
    }
    let mut out = Vec::new();
    for (total, imbalanced) in per_broker.into_values() {
        // ratio > percentage / 100, in integers.
        if imbalanced.len() as u64 * 100 <= u64::from(percentage) * total {
            continue;
        }
        for ((topic, partition), st) in imbalanced {
            if let Ok(record) = elect(s, &st.value, ElectionType::Preferred) {
                out.push(Decision::Update {
                    topic: topic.clone(),
                    partition: *partition,
                    expected: st.mod_revision,
                    record,
                });
            }
        }
    }
    out
}

/// Why a reassignment request is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReassignmentRefused {
    #[error("The manual partition assignment includes an empty replica list.")]
    Empty,
    #[error("The manual partition assignment includes broker {0} more than once.")]
    Duplicate(i32),
    #[error(
        "The manual partition assignment includes broker {0}, but no such broker is registered."
    )]
    UnknownBroker(i32),
    #[error("No partition reassignment is in progress.")]
    NotInProgress,
    #[error("Cancelling the reassignment would leave no in-sync replica, and unclean leader election is disabled.")]
    CancelEmptiesIsr,
}

/// True while a reassignment of `p` is in progress.
pub(crate) fn is_reassigning(p: &PartitionRecord) -> bool {
    !p.adding_replicas.is_empty() || !p.removing_replicas.is_empty()
}

/// Start moving `p` to the replicas `target` (KIP-455 step 1): the
/// replicas become the target followed by the ones leaving; new replicas
/// fetch as followers until the leader admits them to the ISR. A
/// reassignment in progress is replaced (its original replicas are the
/// current ones less those it was adding). A target that only reorders the
/// replicas takes effect at once. Returns `p` unchanged when nothing moves.
///
/// # Errors
/// An empty target, a repeated or unregistered broker.
pub(crate) fn start_reassignment(
    s: &Snapshot,
    p: &PartitionRecord,
    target: &[i32],
) -> Result<PartitionRecord, ReassignmentRefused> {
    if target.is_empty() {
        return Err(ReassignmentRefused::Empty);
    }
    for (i, r) in target.iter().enumerate() {
        if target[..i].contains(r) {
            return Err(ReassignmentRefused::Duplicate(*r));
        }
        if !s.is_live(*r) {
            return Err(ReassignmentRefused::UnknownBroker(*r));
        }
    }
    let original: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let adding: Vec<i32> = target
        .iter()
        .copied()
        .filter(|r| !original.contains(r))
        .collect();
    let removing: Vec<i32> = original
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let replicas: Vec<i32> = target.iter().chain(&removing).copied().collect();
    let mut isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| replicas.contains(r))
        .collect();
    if isr.is_empty() {
        isr = p.isr.clone();
    }
    let leader = if replicas.contains(&p.leader) && isr.contains(&p.leader) {
        p.leader
    } else {
        first_eligible(s, &replicas, &isr)
    };
    let next = PartitionRecord {
        replicas,
        isr,
        leader,
        leader_epoch: p.leader_epoch + i32::from(leader != p.leader),
        adding_replicas: adding,
        removing_replicas: removing,
        ..p.clone()
    }
    .stamped(s);
    Ok(bump_if_changed(p, next))
}

/// Cancel the reassignment of `p` (KIP-455 (4)): the replicas it was
/// adding leave the replicas and the ISR. An ISR that would be empty
/// becomes the first remaining replica, only if `unclean` election is
/// allowed.
///
/// # Errors
/// No reassignment in progress; an ISR left empty without `unclean`.
pub(crate) fn cancel_reassignment(
    s: &Snapshot,
    p: &PartitionRecord,
    unclean: bool,
) -> Result<PartitionRecord, ReassignmentRefused> {
    if !is_reassigning(p) {
        return Err(ReassignmentRefused::NotInProgress);
    }
    let keep = |r: &i32| !p.adding_replicas.contains(r);
    let replicas: Vec<i32> = p.replicas.iter().copied().filter(keep).collect();
    let mut isr: Vec<i32> = p.isr.iter().copied().filter(keep).collect();
    if isr.is_empty() {
        if !unclean {
            return Err(ReassignmentRefused::CancelEmptiesIsr);
        }
        isr = replicas.first().copied().into_iter().collect();
    }
    let leader = if isr.contains(&p.leader) {
        p.leader
    } else {
        first_eligible(s, &replicas, &isr)
    };
    let next = PartitionRecord {
        replicas,
        isr,
        leader,
        leader_epoch: p.leader_epoch + i32::from(leader != p.leader),
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        ..p.clone()
    }
    .stamped(s);
    Ok(bump_if_changed(p, next))
}

/// The controller's completion test (KIP-455 step 3): once the ISR less
/// the leaving replicas is non-empty and holds every target replica, the
/// replicas become the target, the leaving ones leave the ISR, the leader
/// epoch is bumped, and a leader that left (or is gone) is replaced by the
/// first live target replica in the ISR. `None`: not complete (or nothing
/// in progress).
pub(crate) fn complete_reassignment(s: &Snapshot, p: &PartitionRecord) -> Option<PartitionRecord> {
    if !is_reassigning(p) {
        return None;
    }
    let staying = |r: &i32| !p.removing_replicas.contains(r);
    let target: Vec<i32> = p.replicas.iter().copied().filter(staying).collect();
    let isr: Vec<i32> = p.isr.iter().copied().filter(staying).collect();
    if isr.is_empty() || !target.iter().all(|r| isr.contains(r)) {
        return None;
    }
    let leader = if target.contains(&p.leader) && s.is_eligible(p.leader) {
        p.leader
    } else {
        first_eligible(s, &target, &isr)
    };
    Some(
        PartitionRecord {
            replicas: target,
            isr,
            leader,
            leader_epoch: p.leader_epoch + 1,
            partition_epoch: p.partition_epoch + 1,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            ..p.clone()
        }
        .stamped(s),
    )
}

/// The first of `replicas` that may lead (live, not shutting down) and is
/// in `isr`, else -1.
fn first_eligible(s: &Snapshot, replicas: &[i32], isr: &[i32]) -> i32 {
    replicas
        .iter()
        .copied()
        .find(|r| s.is_eligible(*r) && isr.contains(r))
        .unwrap_or(-1)
}

fn bump_if_changed(old: &PartitionRecord, mut next: PartitionRecord) -> PartitionRecord {
    if next != *old {
        next.partition_epoch = old.partition_epoch + 1;
    }
    next
}

#[cfg(test)]
mod tests;
