use super::*;

const EVICT: i64 = 120_000;

fn key(topic: &str, partition: i32) -> PartitionKey {
    PartitionKey {
        topic: TopicKey::Name(topic.into()),
        partition,
    }
}

fn req(offset: i64) -> PartitionRequest {
    PartitionRequest {
        fetch_offset: offset,
        partition_max_bytes: 1 << 20,
        current_leader_epoch: -1,
        log_start_offset: -1,
        last_fetched_epoch: -1,
    }
}

fn requested(topic: &str, partition: i32, offset: i64) -> RequestedPartition {
    RequestedPartition {
        key: key(topic, partition),
        request: req(offset),
    }
}

fn partitions(n: i32) -> OrderedPartitions {
    let mut p = OrderedPartitions::default();
    for i in 0..n {
        p.insert(key("t", i), CachedPartition::new(req(0)));
    }
    p
}

fn answer(hw: i64, records: u64) -> PartitionAnswer {
    PartitionAnswer {
        records_len: records,
        high_watermark: hw,
        log_start_offset: 0,
        last_stable_offset: hw,
        error_code: 0,
        preferred_replica: false,
        diverging: false,
    }
}

fn incremental(
    c: &mut FetchSessionCache,
    now: i64,
    id: i32,
    epoch: i32,
    fetch: &[RequestedPartition],
    forgotten: &[PartitionKey],
) -> Context {
    c.new_context(now, 12, id, epoch, fetch, forgotten)
}

#[test]
fn epochs_wrap_to_one_and_stay_final() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
}

#[test]
fn request_epochs_choose_the_context() {
    let mut c = FetchSessionCache::new(10, EVICT);
    let f = [requested("t", 0, 0)];
    assert!(matches!(
        c.new_context(0, 12, 0, FINAL_EPOCH, &f, &[]),
        Context::Sessionless
    ));
    assert!(matches!(
        c.new_context(0, 12, 0, INITIAL_EPOCH, &f, &[]),
        Context::Full {
            uses_topic_ids: false
        }
    ));
    assert!(matches!(
        c.new_context(0, 13, 0, INITIAL_EPOCH, &f, &[]),
        Context::Full {
            uses_topic_ids: true
        }
    ));
    assert!(matches!(
        incremental(&mut c, 0, 1234, 1, &f, &[]),
        Context::Error(SessionError::IdNotFound)
    ));
    let id = c.maybe_create_session(0, false, false, partitions(3));
    assert!(id > 0);
    assert!(matches!(
        incremental(&mut c, 0, id, 2, &[], &[]),
        Context::Error(SessionError::InvalidEpoch)
    ));
    assert!(matches!(
        c.new_context(0, 13, id, 1, &[], &[]),
        Context::Error(SessionError::TopicIdError)
    ));
    // The right epoch: the session's partitions, then epoch 2 is expected.
    match incremental(&mut c, 0, id, 1, &[], &[]) {
        Context::Incremental {
            session_id,
            epoch,
            partitions,
        } => {
            assert_eq!((session_id, epoch, partitions.len()), (id, 1, 3));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        incremental(&mut c, 0, id, 1, &[], &[]),
        Context::Error(SessionError::InvalidEpoch)
    ));
    assert!(matches!(
        incremental(&mut c, 0, id, 2, &[], &[]),
        Context::Incremental { .. }
    ));
    // Epoch -1 with the id closes it.
    assert!(matches!(
        c.new_context(0, 12, id, FINAL_EPOCH, &[], &[]),
        Context::Sessionless
    ));
    assert!(!c.contains(id));
}

#[test]
fn a_full_request_naming_a_session_closes_it() {
    let mut c = FetchSessionCache::new(10, EVICT);
    let id = c.maybe_create_session(0, false, false, partitions(2));
    assert!(c.contains(id));
    assert!(matches!(
        c.new_context(5, 12, id, INITIAL_EPOCH, &[], &[]),
        Context::Full { .. }
    ));
    assert!(!c.contains(id));
    assert_eq!(c.stats().sessions, 0);
    assert_eq!(c.stats().partitions, 0);
}

#[test]
fn incremental_requests_add_update_and_forget_partitions() {
    let mut c = FetchSessionCache::new(10, EVICT);
    let id = c.maybe_create_session(0, false, false, partitions(3));
    assert_eq!(c.stats().partitions, 3);
    let Context::Incremental { partitions, .. } = incremental(
        &mut c,
        1,
        id,
        1,
        &[requested("t", 1, 77), requested("u", 0, 5)],
        &[key("t", 0)],
    ) else {
        panic!()
    };
    let got: Vec<(PartitionKey, i64)> = partitions
        .iter()
        .map(|(k, c)| (k.clone(), c.request.fetch_offset))
        .collect();
    assert_eq!(
        got,
        vec![(key("t", 1), 77), (key("t", 2), 0), (key("u", 0), 5)]
    );
    assert_eq!(c.stats().partitions, 3);
    // Forgetting every partition closes the session.
    assert!(matches!(
        incremental(
            &mut c,
            2,
            id,
            2,
            &[],
            &[key("t", 1), key("t", 2), key("u", 0)]
        ),
        Context::Sessionless
    ));
    assert!(!c.contains(id));
}

#[test]
fn only_changed_partitions_are_listed_and_the_cache_follows() {
    let mut c = FetchSessionCache::new(10, EVICT);
    let id = c.maybe_create_session(0, false, false, partitions(3));
    let Context::Incremental { epoch, .. } = incremental(&mut c, 0, id, 1, &[], &[]) else {
        panic!()
    };
    let all = |hw: [i64; 3], rec: [u64; 3]| {
        (0..3)
            .map(|i| (key("t", i as i32), answer(hw[i], rec[i])))
            .collect::<Vec<_>>()
    };
    // First answer after creation: every high watermark is new.
    let a = all([5, 0, 0], [100, 0, 0]);
    assert_eq!(c.select(id, epoch, &a, true), Ok(vec![true, true, true]));
    // Nothing changed: nothing listed.
    let Context::Incremental { epoch, .. } = incremental(&mut c, 0, id, 2, &[], &[]) else {
        panic!()
    };
    let a = all([5, 0, 0], [0, 0, 0]);
    assert_eq!(c.select(id, epoch, &a, true), Ok(vec![false, false, false]));
    // A produce to partition 1: only it; sizing without update changes nothing.
    let Context::Incremental { epoch, .. } = incremental(&mut c, 0, id, 3, &[], &[]) else {
        panic!()
    };
    let a = all([5, 2, 0], [0, 50, 0]);
    assert_eq!(c.select(id, epoch, &a, false), Ok(vec![false, true, false]));
    assert_eq!(c.select(id, epoch, &a, false), Ok(vec![false, true, false]));
    assert_eq!(c.select(id, epoch, &a, true), Ok(vec![false, true, false]));
    // Partitions that returned records moved to the end of the session:
    // 0 after the first answer, then 1.
    let Context::Incremental { partitions, .. } = incremental(&mut c, 0, id, 4, &[], &[]) else {
        panic!()
    };
    let order: Vec<i32> = partitions.iter().map(|(k, _)| k.partition).collect();
    assert_eq!(order, vec![2, 0, 1]);
    // A duplicate of an old epoch cannot commit.
    assert_eq!(c.select(id, 3, &a, true), Err(SessionError::InvalidEpoch));
}

#[test]
fn errors_are_always_listed_and_relisted_when_they_clear() {
    let mut cached = CachedPartition::new(req(0));
    let ok = answer(5, 0);
    assert!(must_respond(&mut cached, &ok, true));
    assert!(!must_respond(&mut cached, &ok, true));
    let err = PartitionAnswer {
        error_code: 6,
        ..ok
    };
    assert!(must_respond(&mut cached, &err, true));
    assert!(must_respond(&mut cached, &err, true));
    // Cleared: same offsets as before the error, still listed once.
    assert!(must_respond(&mut cached, &ok, true));
    assert!(!must_respond(&mut cached, &ok, true));
    for changed in [
        PartitionAnswer {
            log_start_offset: 3,
            ..ok
        },
        PartitionAnswer {
            last_stable_offset: 4,
            ..ok
        },
        PartitionAnswer {
            preferred_replica: true,
            ..ok
        },
        PartitionAnswer {
            diverging: true,
            ..ok
        },
    ] {
        let mut c = cached.clone();
        assert!(must_respond(&mut c, &changed, false), "{changed:?}");
    }
}

#[test]
fn zero_slots_never_open_a_session() {
    let mut c = FetchSessionCache::new(0, EVICT);
    assert_eq!(
        c.maybe_create_session(0, false, false, partitions(5)),
        INVALID_SESSION_ID
    );
    assert_eq!(
        c.maybe_create_session(0, true, false, partitions(5)),
        INVALID_SESSION_ID
    );
}

#[test]
fn a_full_cache_evicts_only_stale_or_less_valuable_sessions() {
    let mut c = FetchSessionCache::new(1, EVICT);
    let a = c.maybe_create_session(0, false, false, partitions(3));
    assert!(a > 0);
    // Young and used: a consumer cannot evict it, even with more partitions.
    assert_eq!(
        c.maybe_create_session(1_000, false, false, partitions(10)),
        INVALID_SESSION_ID
    );
    // A follower may evict a consumer session at once if it is worth more.
    let f = c.maybe_create_session(2_000, true, false, partitions(1));
    assert!(f > 0 && !c.contains(a));
    assert_eq!(c.stats().evictions, 1);
    // Idle longer than the eviction time: anyone evicts it.
    let b = c.maybe_create_session(2_000 + EVICT + 1, false, false, partitions(1));
    assert!(b > 0 && !c.contains(f));
    assert_eq!(c.stats().evictions, 2);
}

#[test]
fn old_sessions_are_evicted_by_bigger_ones_but_not_by_equal_ones() {
    let mut c = FetchSessionCache::new(1, EVICT);
    let a = c.maybe_create_session(0, false, false, partitions(3));
    // Touched after it is older than the eviction time: evictable by all.
    let t = EVICT + 10;
    assert!(matches!(
        incremental(&mut c, t, a, 1, &[], &[]),
        Context::Incremental { .. }
    ));
    assert_eq!(
        c.maybe_create_session(t + 1, false, false, partitions(3)),
        INVALID_SESSION_ID
    );
    let b = c.maybe_create_session(t + 2, false, false, partitions(4));
    assert!(b > 0 && !c.contains(a));
    assert_eq!(
        c.stats(),
        CacheStats {
            sessions: 1,
            partitions: 4,
            evictions: 1
        }
    );
}

#[test]
fn followers_do_not_evict_young_follower_sessions() {
    let mut c = FetchSessionCache::new(1, EVICT);
    let f = c.maybe_create_session(0, true, false, partitions(1));
    assert_eq!(
        c.maybe_create_session(10, true, false, partitions(100)),
        INVALID_SESSION_ID
    );
    assert!(c.contains(f));
}

#[test]
fn session_ids_are_positive_and_unique() {
    let mut c = FetchSessionCache::new(500, EVICT);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..500 {
        let id = c.maybe_create_session(0, false, false, partitions(1));
        assert!(id > 0);
        assert!(seen.insert(id));
    }
    assert_eq!(c.stats().sessions, 500);
    assert_eq!(
        c.maybe_create_session(1, false, false, partitions(1)),
        INVALID_SESSION_ID
    );
}
