//! Guards §4.3's reconciliation table and §4.4's epoch fencing, and that two
//! members handing partitions over never own the same partition at once.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::*;
use crate::group::consumer::assignment::{from_pairs, TopicPartitions};

fn t(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn tp(parts: &[i32]) -> TopicPartitions {
    from_pairs([(t(1), parts.to_vec())])
}

fn member(
    epoch: i32,
    prev: i32,
    state: MemberState,
    assigned: &[i32],
    pending: &[i32],
) -> CurrentAssignment {
    CurrentAssignment {
        member_epoch: epoch,
        previous_member_epoch: prev,
        state,
        assigned: tp(assigned),
        pending_revocation: tp(pending),
    }
}

fn nobody(_: Uuid, _: i32) -> bool {
    false
}

#[test]
fn state_codes_round_trip() {
    for s in [
        MemberState::Stable,
        MemberState::UnrevokedPartitions,
        MemberState::UnreleasedPartitions,
        MemberState::Unknown,
    ] {
        assert_eq!(MemberState::from_i8(s.to_i8()), s);
    }
    assert_eq!(MemberState::UnrevokedPartitions.to_i8(), 1);
    assert_eq!(MemberState::Unknown.to_i8(), 127);
    assert_eq!(MemberState::from_i8(42), MemberState::Unknown);
    assert_eq!(
        MemberState::UnreleasedPartitions.name(),
        "UNRELEASED_PARTITIONS"
    );
    let fresh = CurrentAssignment::new_member();
    assert_eq!((fresh.member_epoch, fresh.previous_member_epoch), (0, -1));
    assert!(fresh.is_reconciled_to(0) && !fresh.is_reconciled_to(1));
}

#[test]
fn stable_at_target_epoch_is_unchanged() {
    let m = member(5, 4, MemberState::Stable, &[0, 1], &[]);
    let next = reconcile(&m, 5, &tp(&[2, 3]), Some(&tp(&[0, 1])), nobody).unwrap();
    assert_eq!(next, m, "same epoch: no move even if the target differs");
}

#[test]
fn stable_new_member_gets_free_partitions_at_target_epoch() {
    let m = CurrentAssignment::new_member();
    let next = reconcile(&m, 3, &tp(&[0, 1]), Some(&TopicPartitions::new()), nobody).unwrap();
    assert_eq!(next, member(3, 0, MemberState::Stable, &[0, 1], &[]));
}

#[test]
fn stable_with_revocation_goes_unrevoked_at_old_epoch() {
    let m = member(5, 4, MemberState::Stable, &[0, 1, 2], &[]);
    let next = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0, 1, 2])), nobody).unwrap();
    assert_eq!(
        next,
        member(5, 5, MemberState::UnrevokedPartitions, &[0], &[1, 2])
    );
    // Owned field absent: assume it still owns them, same result.
    let absent = reconcile(&m, 6, &tp(&[0, 3]), None, nobody).unwrap();
    assert_eq!(absent, next);
}

#[test]
fn revocation_already_done_by_client_skips_unrevoked() {
    // The client reports it no longer owns 1 and 2: nothing to wait for.
    let m = member(5, 4, MemberState::Stable, &[0, 1, 2], &[]);
    let next = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0])), nobody).unwrap();
    assert_eq!(next, member(6, 5, MemberState::Stable, &[0, 3], &[]));
}

#[test]
fn unrevoked_waits_while_any_pending_partition_is_owned() {
    let m = member(5, 5, MemberState::UnrevokedPartitions, &[0], &[1, 2]);
    let still = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0, 2])), nobody).unwrap();
    assert_eq!(still, m);
    let absent = reconcile(&m, 6, &tp(&[0, 3]), None, nobody).unwrap();
    assert_eq!(absent, m, "absent owned field means still owned");
}

#[test]
fn unrevoked_after_revocation_advances_to_target() {
    let m = member(5, 5, MemberState::UnrevokedPartitions, &[0], &[1, 2]);
    let next = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0])), nobody).unwrap();
    assert_eq!(next, member(6, 5, MemberState::Stable, &[0, 3], &[]));
}

#[test]
fn unrevoked_then_new_revocation_moves_to_epoch_plus_one() {
    // While revoking, the target moved on again (epoch 8) and also drops 0.
    let m = member(5, 5, MemberState::UnrevokedPartitions, &[0], &[1, 2]);
    let next = reconcile(&m, 8, &tp(&[3]), Some(&tp(&[0])), nobody).unwrap();
    assert_eq!(
        next,
        member(6, 5, MemberState::UnrevokedPartitions, &[], &[0])
    );
}

#[test]
fn partitions_owned_by_others_are_held_back() {
    let m = member(5, 4, MemberState::Stable, &[0], &[]);
    let busy = |_: Uuid, p: i32| p == 3;
    let next = reconcile(&m, 6, &tp(&[0, 2, 3]), Some(&tp(&[0])), busy).unwrap();
    assert_eq!(
        next,
        member(6, 5, MemberState::UnreleasedPartitions, &[0, 2], &[])
    );

    // Only held-back partitions to add: UNRELEASED at the target epoch.
    let m = member(5, 4, MemberState::Stable, &[0], &[]);
    let next = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0])), busy).unwrap();
    assert_eq!(
        next,
        member(6, 5, MemberState::UnreleasedPartitions, &[0], &[])
    );
}

#[test]
fn unreleased_picks_up_released_partitions() {
    let m = member(6, 5, MemberState::UnreleasedPartitions, &[0], &[]);
    let still_busy = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0])), |_, p| p == 3).unwrap();
    assert_eq!(still_busy.state, MemberState::UnreleasedPartitions);
    assert_eq!(still_busy.assigned, tp(&[0]));
    let freed = reconcile(&m, 6, &tp(&[0, 3]), Some(&tp(&[0])), nobody).unwrap();
    assert_eq!(freed, member(6, 6, MemberState::Stable, &[0, 3], &[]));
}

#[test]
fn stable_losing_everything_without_owning_is_stable_empty() {
    let m = member(5, 4, MemberState::Stable, &[0], &[]);
    let next = reconcile(
        &m,
        6,
        &TopicPartitions::new(),
        Some(&TopicPartitions::new()),
        nobody,
    )
    .unwrap();
    assert_eq!(next, member(6, 5, MemberState::Stable, &[], &[]));
}

#[test]
fn unknown_state_fences_unless_the_member_owns_nothing() {
    let m = member(5, 4, MemberState::Unknown, &[0], &[]);
    assert_eq!(
        reconcile(&m, 6, &tp(&[0]), None, nobody),
        Err(Fenced::UnknownState)
    );
    assert_eq!(
        reconcile(&m, 6, &tp(&[0]), Some(&tp(&[0])), nobody),
        Err(Fenced::UnknownState)
    );
    // Owns nothing: revoke what it had (0 is gone from the target), at target epoch.
    let next = reconcile(&m, 6, &tp(&[1]), Some(&TopicPartitions::new()), nobody).unwrap();
    assert_eq!(next, member(6, 5, MemberState::Stable, &[1], &[]));
}

#[test]
fn epoch_validation() {
    let m = member(7, 6, MemberState::Stable, &[0, 1], &[]);
    assert_eq!(validate_epoch(&m, 7, None), Ok(()));
    assert!(matches!(
        validate_epoch(&m, 8, Some(&tp(&[0]))),
        Err(Fenced::EpochAhead {
            received: 8,
            current: 7
        })
    ));
    assert_eq!(validate_epoch(&m, 6, Some(&tp(&[0, 1]))), Ok(()));
    assert_eq!(validate_epoch(&m, 6, Some(&TopicPartitions::new())), Ok(()));
    assert!(
        validate_epoch(&m, 6, None).is_err(),
        "previous epoch needs the owned field"
    );
    assert!(
        validate_epoch(&m, 6, Some(&tp(&[0, 2]))).is_err(),
        "owns beyond assignment"
    );
    assert!(
        validate_epoch(&m, 5, Some(&tp(&[0]))).is_err(),
        "older than previous"
    );
    // A rejoin (epoch 0) of a member bumped once since joining is tolerated,
    // one bumped twice is not.
    let once = member(3, 0, MemberState::Stable, &[0], &[]);
    assert_eq!(
        validate_epoch(&once, 0, Some(&TopicPartitions::new())),
        Ok(())
    );
    assert!(validate_epoch(&m, 0, Some(&TopicPartitions::new())).is_err());
    // The message names the epochs.
    let msg = validate_epoch(&m, 9, None).unwrap_err().to_string();
    assert!(msg.contains('9') && msg.contains('7'), "{msg}");
}

/// Two members, partitions 0..6; A owns all, then B joins and the target
/// splits them. Each round both heartbeat in turn (the client revokes what
/// the response dropped and reports what it owns). Checks no partition is
/// ever owned by two members — on the coordinator side (assigned ∪ pending)
/// and on the client side (what each client consumes).
#[test]
fn handover_between_two_members_never_double_owns() {
    let all: Vec<i32> = (0..6).collect();
    let mut coord: BTreeMap<&str, CurrentAssignment> = BTreeMap::new();
    coord.insert("a", member(1, 0, MemberState::Stable, &all, &[]));
    coord.insert("b", CurrentAssignment::new_member());
    let mut client: BTreeMap<&str, TopicPartitions> = BTreeMap::new();
    client.insert("a", tp(&all));
    client.insert("b", TopicPartitions::new());

    let target_epoch = 2;
    let mut target: BTreeMap<&str, TopicPartitions> = BTreeMap::new();
    target.insert("a", tp(&[0, 1, 2]));
    target.insert("b", tp(&[3, 4, 5]));

    for round in 0..6 {
        for &who in &["b", "a"] {
            let other = if who == "a" { "b" } else { "a" };
            let other_state = coord[other].clone();
            let owned_by_other = |topic: Uuid, p: i32| {
                assignment::contains(&other_state.assigned, topic, p)
                    || assignment::contains(&other_state.pending_revocation, topic, p)
            };
            let next = reconcile(
                &coord[who],
                target_epoch,
                &target[who],
                Some(&client[who]),
                owned_by_other,
            )
            .unwrap();
            // The client's reaction: consume exactly the returned assignment.
            client.insert(who, next.assigned.clone());
            coord.insert(who, next);

            let a = &coord["a"];
            let b = &coord["b"];
            let a_all = assignment::union(&a.assigned, &a.pending_revocation);
            let b_all = assignment::union(&b.assigned, &b.pending_revocation);
            assert!(
                !assignment::intersects(&a_all, &b_all),
                "round {round} after {who}: coordinator double ownership {a:?} {b:?}"
            );
            assert!(!assignment::intersects(&client["a"], &client["b"]));
        }
    }
    assert_eq!(
        coord["a"],
        member(2, 1, MemberState::Stable, &[0, 1, 2], &[])
    );
    assert!(coord["b"].is_reconciled_to(2));
    assert_eq!(coord["b"].assigned, tp(&[3, 4, 5]));
}

/// The same handover when B heartbeats first and A is slow to revoke: B must
/// sit in UNRELEASED until A's revocation is confirmed.
#[test]
fn joiner_waits_unreleased_until_previous_owner_revokes() {
    let a = member(1, 0, MemberState::Stable, &[0, 1], &[]);
    let b = CurrentAssignment::new_member();
    // A learns of the new target, still owns both: UNREVOKED, pending 1.
    let a1 = reconcile(&a, 2, &tp(&[0]), Some(&tp(&[0, 1])), nobody).unwrap();
    assert_eq!(
        a1,
        member(1, 1, MemberState::UnrevokedPartitions, &[0], &[1])
    );
    let a_has = |st: &CurrentAssignment, p: i32| {
        assignment::contains(&st.assigned, t(1), p)
            || assignment::contains(&st.pending_revocation, t(1), p)
    };
    let b1 = reconcile(&b, 2, &tp(&[1]), Some(&TopicPartitions::new()), |_, p| {
        a_has(&a1, p)
    })
    .unwrap();
    assert_eq!(
        b1,
        member(2, 0, MemberState::UnreleasedPartitions, &[], &[])
    );
    // A revokes 1 and moves to epoch 2.
    let a2 = reconcile(&a1, 2, &tp(&[0]), Some(&tp(&[0])), nobody).unwrap();
    assert_eq!(a2, member(2, 1, MemberState::Stable, &[0], &[]));
    let b2 = reconcile(&b1, 2, &tp(&[1]), Some(&TopicPartitions::new()), |_, p| {
        a_has(&a2, p)
    })
    .unwrap();
    assert_eq!(b2, member(2, 2, MemberState::Stable, &[1], &[]));
}
