//! State-machine tests of the classic coordinator: join/sync/heartbeat/leave
//! sequences, timers driven by an explicit clock, static membership,
//! protocol selection and each error answer.

use kafka_protocol::error::ResponseError as E;

use super::api::LeaveMember;
use super::config::GroupConfig;
use super::harness::*;
use super::member::Protocol;
use super::records::{decode_key, GroupMetadataValue, RecordKey};
use super::store::StoreError;

const G: &str = "grp";

#[test]
fn dynamic_member_joins_syncs_and_heartbeats() {
    let mut h = Harness::new(0);
    let (id, t) = h.join_new(G);
    let r = h
        .take_join(t)
        .expect("a single member completes at once with no delay");
    assert_eq!(r.error, None);
    assert_eq!((r.generation_id, r.leader_id.as_str()), (1, id.as_str()));
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    assert_eq!(r.members.len(), 1, "the leader gets the member list");
    assert_eq!(h.state(G), "CompletingRebalance");
    assert_eq!(
        h.heartbeat(G, &id, 1),
        None,
        "heartbeats are fine while completing"
    );
    let s = h.sync(G, &id, 1, &[(&id, b"assign")]);
    let s = h.take_sync(s).unwrap();
    assert_eq!((s.error, s.assignment.as_ref()), (None, &b"assign"[..]));
    assert_eq!(s.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(h.state(G), "Stable");
    // The assignment was persisted as a GroupMetadataValue v3.
    let (_, _, rec) = h.store.records.last().unwrap();
    assert!(matches!(
        decode_key(&rec.key).unwrap(),
        RecordKey::GroupMetadata(_)
    ));
    let v = GroupMetadataValue::decode(rec.value.as_ref().unwrap()).unwrap();
    assert_eq!((v.generation, v.members.len()), (1, 1));
    assert_eq!(v.members[0].assignment.as_ref(), b"assign");
    assert_eq!(h.heartbeat(G, &id, 1), None);
}

#[test]
fn initial_rebalance_delay_waits_and_extends_for_new_members() {
    let mut h = Harness::new(3000);
    let (a, ta) = h.join_new(G);
    assert!(
        h.take_join(ta).is_none(),
        "held for group.initial.rebalance.delay.ms"
    );
    h.advance(2000);
    let (b, tb) = h.join_new(G);
    h.advance(1000);
    // A member arrived during the delay: one more delay round.
    assert!(h.take_join(ta).is_none());
    assert_eq!(h.state(G), "PreparingRebalance");
    h.advance(3000);
    let ra = h.take_join(ta).unwrap();
    let rb = h.take_join(tb).unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
    let leader = if ra.members.is_empty() { &b } else { &a };
    assert_eq!(&ra.leader_id, leader);
    assert_eq!(
        ra.members.len() + rb.members.len(),
        2,
        "only the leader gets members"
    );
}

#[test]
fn second_member_triggers_rebalance_and_follower_sync_waits_for_leader() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    assert_eq!(h.state(G), "PreparingRebalance");
    assert!(h.take_join(tb).is_none());
    assert_eq!(h.heartbeat(G, &a, 1), Some(E::RebalanceInProgress));
    let ta = h.join(G, &a);
    let ra = h.take_join(ta).unwrap();
    let rb = h.take_join(tb).unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    assert_eq!(ra.leader_id, a, "the old leader stays leader");
    assert_eq!((ra.members.len(), rb.members.len()), (2, 0));
    let sb = h.sync(G, &b, 2, &[]);
    assert!(
        h.take_sync(sb).is_none(),
        "a follower waits for the leader's assignment"
    );
    let sa = h.sync(G, &a, 2, &[(&a, b"A"), (&b, b"B")]);
    assert_eq!(h.take_sync(sa).unwrap().assignment.as_ref(), b"A");
    assert_eq!(h.take_sync(sb).unwrap().assignment.as_ref(), b"B");
    assert_eq!(h.state(G), "Stable");
}

#[test]
fn session_expiry_removes_member_and_empties_group() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    h.advance(i64::from(SESSION) - 1);
    assert_eq!(
        h.heartbeat(G, &a, 1),
        None,
        "a heartbeat resets the session"
    );
    h.advance(i64::from(SESSION) - 1);
    assert_eq!(h.state(G), "Stable", "deadline was pushed by the heartbeat");
    h.advance(1);
    assert_eq!(h.state(G), "Empty");
    assert_eq!(h.generation(G), 2);
    assert_eq!(h.heartbeat(G, &a, 1), Some(E::UnknownMemberId));
    // The empty generation is persisted without members.
    let (_, _, rec) = h.store.records.last().unwrap();
    let v = GroupMetadataValue::decode(rec.value.as_ref().unwrap()).unwrap();
    assert_eq!(
        (v.generation, v.members.len(), v.protocol.as_deref()),
        (2, 0, None)
    );
}

#[test]
fn rebalance_timeout_drops_members_that_do_not_rejoin() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    h.advance(5000);
    assert_eq!(
        h.heartbeat(G, &a, 1),
        Some(E::RebalanceInProgress),
        "a keeps heartbeating but never rejoins"
    );
    h.advance(i64::from(REBALANCE) - 5000);
    let rb = h
        .take_join(tb)
        .expect("join phase ends at the rebalance timeout");
    assert_eq!(
        (rb.generation_id, rb.leader_id.as_str()),
        (2, b.as_str()),
        "b is elected leader"
    );
    assert_eq!(rb.members.len(), 1);
    assert_eq!(h.heartbeat(G, &a, 2), Some(E::UnknownMemberId));
}

#[test]
fn members_that_never_sync_are_removed() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    let sa = h.sync(G, &a, 2, &[(&a, b"A"), (&b, b"B")]);
    assert!(h.take_sync(sa).is_some());
    assert_eq!(h.state(G), "Stable");
    for _ in 0..3 {
        h.advance(9_000);
        assert_eq!(h.heartbeat(G, &a, 2), None);
        // b stays alive by heartbeats but never sends its SyncGroup.
        assert_eq!(h.heartbeat(G, &b, 2), None);
    }
    h.advance(i64::from(REBALANCE) - 27_000);
    // b never synced: removed, and the group rebalances without it.
    assert_eq!(h.state(G), "PreparingRebalance");
    assert!(!h.m.group(G).unwrap().has(&b));
}

#[test]
fn new_member_that_never_rejoins_after_member_id_required_expires() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let t = h.join(G, "");
    let pending = h.take_join(t).unwrap().member_id;
    assert!(h.m.group(G).unwrap().is_pending(&pending));
    h.advance(i64::from(SESSION) - 1);
    assert_eq!(h.heartbeat(G, &a, 1), None);
    h.advance(1);
    assert!(!h.m.group(G).unwrap().is_pending(&pending));
    assert_eq!(
        h.state(G),
        "Stable",
        "a pending member never triggers a rebalance"
    );
}

#[test]
fn static_member_restart_keeps_generation_and_fences_old_id() {
    let mut h = Harness::new(0);
    let req = h.join_request(G, "", Some("inst-1"));
    let t = h.join_with(req.clone());
    let r = h
        .take_join(t)
        .expect("static members skip MEMBER_ID_REQUIRED");
    assert_eq!(r.error, None);
    let old = r.member_id.clone();
    assert!(old.starts_with("inst-1-"));
    let s = h.sync(G, &old, 1, &[(&old, b"A")]);
    assert!(h.take_sync(s).is_some());
    // Restart: same instance id, unknown member id, same protocols.
    let t2 = h.join_with(req);
    let r2 = h.take_join(t2).expect("answered at once, no rebalance");
    assert_eq!(r2.error, None);
    assert_ne!(r2.member_id, old);
    assert_eq!(r2.generation_id, 1);
    assert!(r2.skip_assignment, "a v9 static leader skips the assignor");
    assert_eq!(h.state(G), "Stable");
    assert_eq!(
        h.heartbeat_static(G, &old, Some("inst-1"), 1),
        Some(E::FencedInstanceId)
    );
    assert_eq!(
        h.heartbeat_static(G, &r2.member_id, Some("inst-1"), 1),
        None
    );
    let s2 = h.sync(G, &r2.member_id, 1, &[]);
    assert_eq!(
        h.take_sync(s2).unwrap().assignment.as_ref(),
        b"A",
        "assignment kept"
    );
    // The new member id was persisted.
    let (_, _, rec) = h.store.records.last().unwrap();
    let v = GroupMetadataValue::decode(rec.value.as_ref().unwrap()).unwrap();
    assert_eq!(v.members[0].member_id, r2.member_id);
    assert_eq!(v.members[0].group_instance_id.as_deref(), Some("inst-1"));
}

#[test]
fn static_member_with_unknown_instance_is_unknown() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    assert_eq!(
        h.heartbeat_static(G, &a, Some("nope"), 1),
        Some(E::UnknownMemberId)
    );
}

#[test]
fn protocol_selection_prefers_most_votes_among_common_protocols() {
    let mut h = Harness::new(1000);
    let mut tickets = Vec::new();
    for prefs in [
        &["range", "roundrobin"][..],
        &["roundrobin", "range"],
        &["roundrobin", "sticky"],
    ] {
        let mut req = h.join_request(G, "", None);
        req.require_known_member_id = false;
        req.protocols = protocols(prefs, &["t"]);
        tickets.push(h.join_with(req));
    }
    let mut bad = h.join_request(G, "", None);
    bad.protocols = protocols(&["sticky-only"], &["t"]);
    let tb = h.join_with(bad);
    assert_eq!(
        h.take_join(tb).unwrap().error,
        Some(E::InconsistentGroupProtocol)
    );
    let mut other_type = h.join_request(G, "", None);
    other_type.protocol_type = "connect".into();
    let to = h.join_with(other_type);
    assert_eq!(
        h.take_join(to).unwrap().error,
        Some(E::InconsistentGroupProtocol)
    );
    h.advance(1000);
    assert!(
        h.take_join(tickets[0]).is_none(),
        "members kept arriving: one more delay"
    );
    h.advance(1000);
    for t in tickets {
        assert_eq!(
            h.take_join(t).unwrap().protocol_name.as_deref(),
            Some("roundrobin")
        );
    }
}

#[test]
fn join_errors() {
    let mut h = Harness::new(0);
    let mut req = h.join_request(G, "", None);
    req.session_timeout_ms = 5999;
    let t = h.join_with(req);
    assert_eq!(
        h.take_join(t).unwrap().error,
        Some(E::InvalidSessionTimeout)
    );
    let t = h.join("missing", "some-id");
    assert_eq!(h.take_join(t).unwrap().error, Some(E::UnknownMemberId));
    let t = h.join("", "");
    assert_eq!(h.take_join(t).unwrap().error, Some(E::InvalidGroupId));
    let a = h.stable_single(G);
    let t = h.join(G, "stranger");
    assert_eq!(h.take_join(t).unwrap().error, Some(E::UnknownMemberId));
    // Old protocol (v3-) clients join directly without MEMBER_ID_REQUIRED.
    let mut old = h.join_request(G, "", None);
    old.require_known_member_id = false;
    let t = h.join_with(old);
    assert!(h.take_join(t).is_none(), "parked until a rejoins");
    assert_eq!(h.heartbeat(G, &a, 1), Some(E::RebalanceInProgress));
}

#[test]
fn group_max_size() {
    let mut h = Harness::with_config(GroupConfig {
        initial_rebalance_delay_ms: 0,
        max_size: 1,
        ..GroupConfig::default()
    });
    let a = h.stable_single(G);
    let t = h.join(G, "");
    let r = h.take_join(t).unwrap();
    assert_eq!(
        (r.error, r.member_id.as_str()),
        (Some(E::GroupMaxSizeReached), "")
    );
    // Existing members are still accepted.
    let t = h.join(G, &a);
    assert_eq!(h.take_join(t).unwrap().error, None);
}

#[test]
fn sync_and_heartbeat_errors() {
    let mut h = Harness::new(0);
    let s = h.sync("missing", "m", 1, &[]);
    assert_eq!(h.take_sync(s).unwrap().error, Some(E::UnknownMemberId));
    let a = h.stable_single(G);
    let s = h.sync(G, &a, 7, &[]);
    assert_eq!(h.take_sync(s).unwrap().error, Some(E::IllegalGeneration));
    assert_eq!(h.heartbeat(G, &a, 7), Some(E::IllegalGeneration));
    assert_eq!(h.heartbeat(G, "stranger", 1), Some(E::UnknownMemberId));
    assert_eq!(h.heartbeat("missing", "m", 1), Some(E::UnknownMemberId));
    let (_b, _tb) = h.join_new(G);
    let s = h.sync(G, &a, 1, &[]);
    assert_eq!(h.take_sync(s).unwrap().error, Some(E::RebalanceInProgress));
}

#[test]
fn failed_group_write_fails_the_sync_and_rebalances() {
    let mut h = Harness::new(0);
    let (id, t) = h.join_new(G);
    assert!(h.take_join(t).is_some());
    h.store.fail_next = Some(|partition| StoreError::Storage {
        partition,
        source: Box::new(std::io::Error::other("disk")),
    });
    let s = h.sync(G, &id, 1, &[(&id, b"A")]);
    assert_eq!(h.take_sync(s).unwrap().error, Some(E::NotCoordinator));
    // One member, no rejoin needed to see the new round start.
    assert_eq!(h.state(G), "PreparingRebalance");
    h.store.fail_next = Some(|partition| StoreError::Unavailable {
        partition,
        source: None,
    });
    let t = h.join(G, &id);
    assert_eq!(h.take_join(t).unwrap().generation_id, 2);
    let s = h.sync(G, &id, 2, &[(&id, b"A")]);
    assert_eq!(
        h.take_sync(s).unwrap().error,
        Some(E::CoordinatorNotAvailable)
    );
}

#[test]
fn leave_group_rebalances_the_rest() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    let leave = |id: &str| LeaveMember {
        member_id: id.to_string(),
        group_instance_id: None,
    };
    let r =
        h.m.leave(G, vec![leave(&b), leave("stranger")], h.now, &mut h.store);
    assert_eq!(r.error, None);
    assert_eq!(r.members[0].1, None);
    assert_eq!(r.members[1].1, Some(E::UnknownMemberId));
    // a was completing a rebalance: it must rejoin.
    assert_eq!(h.state(G), "PreparingRebalance");
    let ta = h.join(G, &a);
    assert_eq!(h.take_join(ta).unwrap().generation_id, 3);
    let r = h.m.leave("missing", vec![leave("x")], h.now, &mut h.store);
    assert_eq!(r.members[0].1, Some(E::UnknownMemberId));
}

#[test]
fn leaving_by_instance_id_only() {
    let mut h = Harness::new(0);
    let req = h.join_request(G, "", Some("i1"));
    let t = h.join_with(req);
    let id = h.take_join(t).unwrap().member_id;
    let s = h.sync(G, &id, 1, &[]);
    assert!(h.take_sync(s).is_some());
    let r = h.m.leave(
        G,
        vec![LeaveMember {
            member_id: String::new(),
            group_instance_id: Some("i1".into()),
        }],
        h.now,
        &mut h.store,
    );
    assert_eq!(r.members[0].1, None);
    assert_eq!(h.state(G), "Empty");
}

#[test]
fn loading_and_inactive_coordinator_answers() {
    let mut h = Harness::new(0);
    let p = h.m.partition_for(G);
    h.m.begin_loading(p);
    let t = h.join(G, "");
    assert_eq!(
        h.take_join(t).unwrap().error,
        Some(E::CoordinatorLoadInProgress)
    );
    let s = h.sync(G, "m", 1, &[]);
    assert_eq!(h.take_sync(s).unwrap().error, Some(E::RebalanceInProgress));
    assert_eq!(
        h.heartbeat(G, "m", 1),
        None,
        "heartbeats are answered blindly while loading"
    );
    h.m.finish_loading(p);
    let (id, t) = h.join_new(G);
    assert!(h.take_join(t).is_some());
    h.m.deactivate();
    assert_eq!(h.heartbeat(G, &id, 1), Some(E::CoordinatorNotAvailable));
}

#[test]
fn unloading_answers_parked_requests() {
    let mut h = Harness::new(5000);
    let (_id, t) = h.join_new(G);
    h.m.deactivate();
    let replies = h.m.take_replies();
    assert_eq!(replies.len(), 1);
    match &replies[0] {
        super::api::Reply::Join(ticket, r) => {
            assert_eq!(*ticket, t);
            assert_eq!(r.error, Some(E::NotCoordinator));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn leader_rejoin_in_stable_forces_rebalance_follower_same_metadata_does_not() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    let sa = h.sync(G, &a, 2, &[(&a, b"A"), (&b, b"B")]);
    let sb = h.sync(G, &b, 2, &[]);
    assert!(h.take_sync(sa).is_some() && h.take_sync(sb).is_some());
    // Follower with unchanged metadata: current generation, no rebalance.
    let tb = h.join(G, &b);
    let rb = h.take_join(tb).unwrap();
    assert_eq!((rb.error, rb.generation_id), (None, 2));
    assert_eq!(h.state(G), "Stable");
    // Follower with new subscription: rebalance.
    let mut req = h.join_request(G, &b, None);
    req.protocols = vec![Protocol {
        name: "range".into(),
        metadata: subscription(&["t", "u"]),
    }];
    h.join_with(req);
    assert_eq!(h.state(G), "PreparingRebalance");
}

#[test]
fn a_superseded_join_is_answered_so_no_request_hangs() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    let sa = h.sync(G, &a, 2, &[]);
    let sb = h.sync(G, &b, 2, &[]);
    assert!(h.take_sync(sa).is_some() && h.take_sync(sb).is_some());
    let (_c, tc) = h.join_new(G);
    // a rejoins twice while the group still waits for b.
    let first = h.join(G, &a);
    assert!(h.take_join(first).is_none());
    let second = h.join(G, &a);
    assert_eq!(
        h.take_join(first).unwrap().error,
        Some(E::RebalanceInProgress),
        "Kafka drops the superseded request; Strata answers it so the connection is not blocked"
    );
    assert!(h.take_join(second).is_none());
    let tb = h.join(G, &b);
    for t in [second, tb, tc] {
        assert_eq!(h.take_join(t).unwrap().generation_id, 3);
    }
}

#[test]
fn member_removed_while_parked_on_sync_gets_an_answer() {
    let mut h = Harness::new(0);
    let a = h.stable_single(G);
    let (b, tb) = h.join_new(G);
    let ta = h.join(G, &a);
    assert!(h.take_join(ta).is_some() && h.take_join(tb).is_some());
    let sb = h.sync(G, &b, 2, &[]);
    assert!(h.take_sync(sb).is_none());
    let r = h.leave(G, &b);
    assert_eq!(r.members[0].1, None);
    assert_eq!(
        h.take_sync(sb).unwrap().error,
        Some(E::UnknownMemberId),
        "Kafka would leave it unanswered; Strata answers so the connection is not blocked"
    );
}

/// The broker side of the kafka-python run behind the old xfail of
/// `test_groups_restart.py`: a lone leader's sync runs into a rebalance, it
/// leads a two-member generation, rejoins the Stable group (its metadata
/// changed), a third member arrives and the follower rejoins after a
/// heartbeat. Every parked JoinGroup and SyncGroup gets exactly one answer
/// (the harness rejects a second), the leader's own assignment included; the
/// member that stalled in that run did so inside the client (see
/// `tests/clients/group_member.py`).
#[test]
fn leader_rejoining_for_new_metadata_gets_every_answer() {
    let mut h = Harness::new(0);
    let (l, tl) = h.join_new(G);
    assert_eq!(h.take_join(tl).unwrap().generation_id, 1);
    let (b, tb) = h.join_new(G);
    let sl = h.sync(G, &l, 1, &[(&l, b"")]);
    assert_eq!(h.take_sync(sl).unwrap().error, Some(E::RebalanceInProgress));
    let tl = h.join(G, &l);
    let (rl, rb) = (h.take_join(tl).unwrap(), h.take_join(tb).unwrap());
    assert_eq!(
        (rl.generation_id, rb.generation_id, rl.leader_id.as_str()),
        (2, 2, l.as_str())
    );
    let sl = h.sync(G, &l, 2, &[(&l, b""), (&b, b"")]);
    let sb = h.sync(G, &b, 2, &[]);
    assert_eq!(h.take_sync(sl).unwrap().error, None);
    assert_eq!(h.take_sync(sb).unwrap().error, None);

    let tl = h.join(G, &l);
    assert_eq!(h.state(G), "PreparingRebalance");
    let (c, tc) = h.join_new(G);
    h.advance(500);
    assert_eq!(h.heartbeat(G, &b, 2), Some(E::RebalanceInProgress));
    let tb = h.join(G, &b);
    let rl = h.take_join(tl).expect("the leader's JoinGroup is answered");
    assert_eq!((rl.generation_id, rl.members.len()), (3, 3));
    assert_eq!(h.take_join(tb).unwrap().generation_id, 3);
    assert_eq!(h.take_join(tc).unwrap().generation_id, 3);
    let sc = h.sync(G, &c, 3, &[]);
    let sl = h.sync(G, &l, 3, &[(&l, b"L"), (&b, b"B"), (&c, b"C")]);
    let sb = h.sync(G, &b, 3, &[]);
    for (t, want) in [(sl, b"L"), (sb, b"B"), (sc, b"C")] {
        let s = h.take_sync(t).expect("every SyncGroup is answered");
        assert_eq!((s.error, s.assignment.as_ref()), (None, &want[..]));
    }
    assert_eq!(h.state(G), "Stable");
    h.advance(i64::from(SESSION) - 1);
    for m in [&l, &b, &c] {
        assert_eq!(h.heartbeat(G, m, 3), None);
    }
}
