//! Moving one member from its current assignment toward the group's target
//! assignment, and fencing stale epochs (KIP-848).
//!
//! Kafka counterparts: `CurrentAssignmentBuilder` (group-coordinator
//! `modern/consumer/`) for [`reconcile`], and
//! `GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid` for
//! [`validate_epoch`]. Both are pure: the caller (the group state machine)
//! supplies the member's current state, the target and a view of who else
//! owns what, and writes the returned state as a `CurrentMemberAssignment`
//! record.
//!
//! # The rule (reference §4.3)
//!
//! Revoke before assign: a member first gives up the partitions that left its
//! target (state `UNREVOKED_PARTITIONS`, epoch unchanged), and only once its
//! heartbeat no longer lists them does it move on at `epoch + 1`. A partition
//! of its target still owned by another member (assigned or pending
//! revocation there) is held back ("unreleased") until that member lets it go,
//! so no partition is ever owned by two members. Every epoch change moves the
//! old epoch into `previous_member_epoch`, which [`validate_epoch`] accepts
//! once more in case the response carrying the new epoch was lost.

use uuid::Uuid;

use super::assignment::{self, TopicPartitions};

/// A member's reconciliation state, stored as an int8 in the
/// `ConsumerGroupCurrentMemberAssignment` record (Kafka `MemberState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// At its target epoch with every partition of its target (or waiting for none).
    Stable,
    /// Must revoke `pending_revocation` before it can advance.
    UnrevokedPartitions,
    /// At the target epoch, but waiting for partitions other members still own.
    UnreleasedPartitions,
    /// A state written by a newer coordinator; the member is fenced unless it owns nothing.
    Unknown,
}

impl MemberState {
    /// The record encoding: 0, 1, 2, 127.
    pub(crate) fn to_i8(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    /// The record decoding; a value this version does not know is `Unknown`.
    pub(crate) fn from_i8(v: i8) -> MemberState {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }

    /// Kafka's name, as `ConsumerGroupDescribe` and logs show it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
            MemberState::Unknown => "UNKNOWN",
        }
    }
}

/// A member's current assignment: the `ConsumerGroupCurrentMemberAssignment` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CurrentAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    /// What the member may consume now (the heartbeat response's assignment).
    pub assigned: TopicPartitions,
    /// What the member was asked to give up and has not yet confirmed.
    pub pending_revocation: TopicPartitions,
}

impl CurrentAssignment {
    /// A member that has just joined: epoch 0, previous epoch −1 (the defaults
    /// of Kafka's `ConsumerGroupMember.Builder`), stable, owning nothing.
    pub(crate) fn new_member() -> Self {
        CurrentAssignment {
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            assigned: TopicPartitions::new(),
            pending_revocation: TopicPartitions::new(),
        }
    }

    /// Kafka's `isReconciledTo`: stable at `target_epoch`.
    pub(crate) fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_epoch
    }

    /// The next state with `epoch` as the member epoch, the old one as previous.
    fn at_epoch(&self, epoch: i32, state: MemberState) -> Self {
        CurrentAssignment {
            member_epoch: epoch,
            previous_member_epoch: self.member_epoch,
            state,
            assigned: TopicPartitions::new(),
            pending_revocation: TopicPartitions::new(),
        }
    }
}

/// Why a heartbeat is refused with `FENCED_MEMBER_EPOCH` (error code 110).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fenced {
    /// The member claims an epoch the coordinator never gave it.
    #[error("member epoch {received} is greater than the coordinator's {current}; the member must abandon its partitions and rejoin")]
    EpochAhead { received: i32, current: i32 },
    /// An old epoch that is not the tolerated previous one (or owns too much).
    #[error("member epoch {received} is smaller than the coordinator's {current} (previous {previous}, owned partitions {owned_ok}); the member must abandon its partitions and rejoin", owned_ok = if *owned_is_subset { "within the assignment" } else { "absent or beyond the assignment" })]
    EpochBehind {
        received: i32,
        current: i32,
        previous: i32,
        owned_is_subset: bool,
    },
    /// The member's stored state is one this version does not know.
    #[error("member is in an unknown state; it must abandon all its partitions and rejoin")]
    UnknownState,
}

/// Whether the heartbeat says the member still owns any partition of `set`.
/// An absent `owned` field means "unchanged": assume it does.
fn still_owns_any(owned: Option<&TopicPartitions>, set: &TopicPartitions) -> bool {
    owned.is_none_or(|owned| assignment::intersects(owned, set))
}

/// Kafka's `CurrentAssignmentBuilder.build`: the member's next state toward
/// `target` at `target_epoch`. Returns `current` unchanged when it must wait.
///
/// `owned` is the heartbeat's `TopicPartitions` (`None` = field absent = the
/// member still owns everything it had). `owned_by_other(topic, partition)`
/// is true while another member still has that partition assigned or pending
/// revocation; such partitions are not handed out yet.
///
/// # Errors
///
/// [`Fenced::UnknownState`] when the stored state is [`MemberState::Unknown`]
/// and the heartbeat does not report owning nothing.
pub(crate) fn reconcile(
    current: &CurrentAssignment,
    target_epoch: i32,
    target: &TopicPartitions,
    owned: Option<&TopicPartitions>,
    owned_by_other: impl Fn(Uuid, i32) -> bool,
) -> Result<CurrentAssignment, Fenced> {
    let step = Step {
        current,
        target_epoch,
        target,
        owned,
        owned_by_other: &owned_by_other,
    };
    match current.state {
        MemberState::Stable => {
            if current.member_epoch == target_epoch {
                Ok(current.clone())
            } else {
                Ok(step.compute(current.member_epoch))
            }
        }
        MemberState::UnrevokedPartitions => {
            if still_owns_any(owned, &current.pending_revocation) {
                Ok(current.clone())
            } else {
                Ok(step.compute(current.member_epoch + 1))
            }
        }
        MemberState::UnreleasedPartitions => Ok(step.compute(current.member_epoch)),
        MemberState::Unknown => {
            if owned.is_none_or(|owned| !owned.is_empty()) {
                Err(Fenced::UnknownState)
            } else {
                Ok(step.compute(target_epoch))
            }
        }
    }
}

/// The inputs of one `computeNextAssignment`.
struct Step<'a> {
    current: &'a CurrentAssignment,
    target_epoch: i32,
    target: &'a TopicPartitions,
    owned: Option<&'a TopicPartitions>,
    owned_by_other: &'a dyn Fn(Uuid, i32) -> bool,
}

impl Step<'_> {
    /// `compute(e)` of §4.3: keep = assigned ∩ target, revoke = assigned −
    /// keep, add = target − keep minus what others still own.
    fn compute(&self, epoch_if_revoking: i32) -> CurrentAssignment {
        let assigned = &self.current.assigned;
        let keep = assignment::intersection(assigned, self.target);
        let revoke = assignment::difference(assigned, &keep);
        let mut add = TopicPartitions::new();
        let mut held_back = false;
        for (topic, partition) in
            assignment::iter_pairs(&assignment::difference(self.target, &keep))
        {
            if (self.owned_by_other)(topic, partition) {
                held_back = true;
            } else {
                assignment::insert(&mut add, topic, partition);
            }
        }

        if !revoke.is_empty() && still_owns_any(self.owned, &revoke) {
            // Stay at the old epoch (or the bumped one after a finished
            // revocation) until the client confirms these are gone.
            let mut next = self
                .current
                .at_epoch(epoch_if_revoking, MemberState::UnrevokedPartitions);
            next.assigned = keep;
            next.pending_revocation = revoke;
            return next;
        }
        let state = if held_back {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
        let mut next = self.current.at_epoch(self.target_epoch, state);
        next.assigned = assignment::union(&keep, &add);
        next
    }
}

/// §4.4: whether a heartbeat with `received_epoch` (≥ 0) from an existing
/// member is accepted. An older epoch passes only when it is the member's
/// previous epoch and the heartbeat lists its owned partitions, all within
/// the current assignment (the response with the new epoch was lost).
///
/// # Errors
///
/// [`Fenced::EpochAhead`] / [`Fenced::EpochBehind`] as described above.
pub(crate) fn validate_epoch(
    current: &CurrentAssignment,
    received_epoch: i32,
    owned: Option<&TopicPartitions>,
) -> Result<(), Fenced> {
    if received_epoch > current.member_epoch {
        return Err(Fenced::EpochAhead {
            received: received_epoch,
            current: current.member_epoch,
        });
    }
    if received_epoch < current.member_epoch {
        let owned_is_subset =
            owned.is_some_and(|owned| assignment::is_subset(owned, &current.assigned));
        if received_epoch != current.previous_member_epoch || !owned_is_subset {
            return Err(Fenced::EpochBehind {
                received: received_epoch,
                current: current.member_epoch,
                previous: current.previous_member_epoch,
                owned_is_subset,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "reconcile_tests.rs"]
mod tests;
