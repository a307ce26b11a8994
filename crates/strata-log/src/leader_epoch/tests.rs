//! Leader-epoch cache behaviour, following Kafka's LeaderEpochFileCacheTest.

use super::*;
use std::fs;

fn e(epoch: i32, start: i64) -> EpochEntry {
    EpochEntry::new(epoch, start)
}

fn cache() -> (tempfile::TempDir, LeaderEpochCache) {
    let dir = tempfile::tempdir().unwrap();
    let cache = LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path()).unwrap();
    (dir, cache)
}

/// A cache holding exactly `entries`, assigned in order.
fn with(entries: &[(i32, i64)]) -> (tempfile::TempDir, LeaderEpochCache) {
    let (dir, mut c) = cache();
    for &(ep, off) in entries {
        c.assign(LeaderEpoch(ep), Offset(off)).unwrap();
    }
    (dir, c)
}

fn end(c: &LeaderEpochCache, epoch: i32, leo: i64) -> (i32, i64) {
    let (ep, off) = c.end_offset_for(LeaderEpoch(epoch), Offset(leo));
    (ep.0, off.get())
}

#[test]
fn load_creates_an_empty_file_and_assign_persists() {
    let (dir, mut c) = cache();
    let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
    assert_eq!(
        fs::read(&path).unwrap(),
        b"",
        "created empty, as Kafka does"
    );
    assert!(c.is_empty() && c.latest_epoch().is_none());
    assert!(c.assign(LeaderEpoch(2), Offset(6)).unwrap());
    assert!(c.assign(LeaderEpoch(3), Offset(1532)).unwrap());
    assert_eq!(fs::read_to_string(&path).unwrap(), "0\n2\n2 6\n3 1532\n");
    assert!(
        !c.assign(LeaderEpoch(3), Offset(1600)).unwrap(),
        "no-op: no rewrite"
    );
    let reloaded = LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path()).unwrap();
    assert_eq!(reloaded.entries(), [e(2, 6), e(3, 1532)]);
    assert!(!reloaded.is_dirty());
}

#[test]
fn assign_rules() {
    // Same epoch, later offset: ignored; same epoch, earlier: replaces.
    let (_d, c) = with(&[(2, 9), (2, 10)]);
    assert_eq!(c.entries(), [e(2, 9)]);
    let (_d, c) = with(&[(5, 11), (6, 12), (7, 13), (7, 12)]);
    assert_eq!(c.entries(), [e(5, 11), e(7, 12)]);
    // Start offsets must increase: a new epoch at the same offset wins.
    let (_d, c) = with(&[(2, 9), (3, 9)]);
    assert_eq!(c.entries(), [e(3, 9)]);
    let (_d, c) = with(&[(2, 6), (3, 5)]);
    assert_eq!(c.entries(), [e(3, 5)]);
    // Epochs must increase: an older epoch removes the newer ones.
    let (_d, c) = with(&[(1, 5), (2, 6), (1, 7)]);
    assert_eq!(c.entries(), [e(1, 7)]);
    assert_eq!(end(&c, 1, 8), (1, 8));
    assert_eq!(end(&c, 2, 8), (-1, -1));
}

#[test]
fn assign_rejects_negative_values_without_changes() {
    let (_d, mut c) = with(&[(1, 5)]);
    for (ep, off) in [(-1, 10), (2, -1)] {
        assert!(matches!(
            c.assign(LeaderEpoch(ep), Offset(off)),
            Err(LeaderEpochError::InvalidEntry { .. })
        ));
    }
    assert_eq!(c.entries(), [e(1, 5)]);
}

#[test]
fn end_offset_for_follows_kafka() {
    let (_d, c) = cache();
    assert_eq!(end(&c, 0, 0), (-1, -1), "empty cache");
    assert_eq!(end(&c, -1, 73), (-1, -1));
    let (_d, c) = with(&[(2, 11), (3, 12)]);
    assert_eq!(end(&c, -1, 0), (-1, -1), "undefined epoch requested");
    let (_d, c) = with(&[(2, 10)]);
    assert_eq!(end(&c, 2, 11), (2, 11), "latest epoch: the LEO");
    assert_eq!(end(&c, 3, 100), (-1, -1), "above every epoch");
    let (_d, c) = with(&[(5, 11), (6, 12), (7, 13)]);
    assert_eq!(end(&c, 4, 0), (4, 11), "below every epoch");
    let (_d, c) = with(&[(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)]);
    assert_eq!(end(&c, 2, 17), (2, 15));
    let (_d, c) = with(&[(0, 10), (2, 13), (4, 17)]);
    assert_eq!(end(&c, 1, 0), (0, 13), "no exact epoch: the floor");
    assert_eq!(end(&c, 2, 0), (2, 17));
    assert_eq!(end(&c, 3, 0), (2, 17));
    let (_d, c) = with(&[(0, 0), (1, 0)]);
    // Epoch 0 was replaced by epoch 1 at the same offset, so 0 is now
    // below every epoch.
    assert_eq!(c.entries(), [e(1, 0)]);
    assert_eq!((end(&c, 1, 5), end(&c, 0, 5)), ((1, 5), (0, 0)));
}

/// The leader cache of the worked divergence cases of Kafka's
/// `PartitionTest`, LEO 17.
const PARTITION_TEST_CACHE: [(i32, i64); 6] = [(0, 0), (3, 2), (4, 8), (7, 13), (9, 14), (10, 17)];

#[test]
fn end_offset_for_matches_the_worked_divergence_cases() {
    let (_d, c) = with(&PARTITION_TEST_CACHE);
    let leo = 17;
    assert_eq!(
        end(&c, 2, leo),
        (0, 2),
        "no epoch 2: floor 0, ends where 3 starts"
    );
    assert_eq!(end(&c, 0, leo), (0, 2));
    assert_eq!(end(&c, 3, leo), (3, 8));
    assert_eq!(end(&c, 6, leo), (4, 13));
    assert_eq!(end(&c, 5, leo), (4, 13));
    assert_eq!(end(&c, 9, leo), (9, 17), "epoch 10 starts where 9 ends");
    assert_eq!(
        end(&c, 10, leo),
        (10, 17),
        "the latest epoch ends at the LEO"
    );
    assert_eq!(end(&c, 11, leo), (-1, -1), "above every epoch: undefined");
    assert_eq!(end(&c, -1, leo), (-1, -1), "undefined epoch requested");
}

#[test]
fn end_offset_for_an_epoch_older_than_the_first_kept_entry() {
    // The log start moved to 5: epochs 0 and 3 start at or below it, so 3
    // is re-added at 5 (Kafka `truncateFromStart`).
    let (_d, mut c) = with(&PARTITION_TEST_CACHE);
    assert!(c.truncate_from_start(Offset(5)));
    assert_eq!(
        c.entries(),
        [e(3, 5), e(4, 8), e(7, 13), e(9, 14), e(10, 17)]
    );
    // An epoch below the first entry answers with itself and the first
    // start offset (Kafka 3.9), not undefined.
    assert_eq!(end(&c, 2, 17), (2, 5));
    assert_eq!(end(&c, 1, 17), (1, 5));
    assert_eq!(end(&c, 0, 17), (0, 5));
    assert_eq!(end(&c, 3, 17), (3, 8));
    // The same with a first entry (2, 5), as the brief's case states it.
    let (_d, c) = with(&[(2, 5), (4, 8)]);
    assert_eq!(end(&c, 1, 9), (1, 5));
    assert_eq!(end(&c, 2, 9), (2, 8));
    assert_eq!(end(&c, 3, 9), (2, 8));
}

#[test]
fn truncate_from_end() {
    let (_d, mut c) = with(&[(2, 6), (3, 8), (4, 11)]);
    assert!(!c.truncate_from_end(UNDEFINED_EPOCH_OFFSET));
    assert!(!c.truncate_from_end(Offset(12)));
    assert!(!c.is_dirty());
    assert!(c.truncate_from_end(Offset(9)));
    assert_eq!(
        (c.entries(), c.latest_epoch()),
        (&[e(2, 6), e(3, 8)][..], Some(LeaderEpoch(3)))
    );
    assert!(c.is_dirty());
    assert!(c.truncate_from_end(Offset(8)));
    assert_eq!(c.entries(), [e(2, 6)]);
    assert!(c.truncate_from_end(Offset(0)));
    assert!(c.is_empty());
    assert!(!c.truncate_from_end(Offset(7)), "empty cache");
}

#[test]
fn truncate_from_start() {
    let check = |offset: i64, expected: &[EpochEntry], changed: bool| {
        let (_d, mut c) = with(&[(2, 6), (3, 8), (4, 11)]);
        assert_eq!(c.truncate_from_start(Offset(offset)), changed, "{offset}");
        assert_eq!(c.entries(), expected, "truncate_from_start({offset})");
    };
    check(-1, &[e(2, 6), e(3, 8), e(4, 11)], false);
    check(1, &[e(2, 6), e(3, 8), e(4, 11)], false);
    // The first entry already starts at 6: nothing changes, nothing to write.
    check(6, &[e(2, 6), e(3, 8), e(4, 11)], false);
    check(8, &[e(3, 8), e(4, 11)], true);
    check(9, &[e(3, 9), e(4, 11)], true);
    check(11, &[e(4, 11)], true);
    check(15, &[e(4, 15)], true);
    let (_d, mut c) = with(&[(0, 0), (1, 7), (2, 10)]);
    c.truncate_from_start(Offset(5));
    assert_eq!(c.entries(), [e(0, 5), e(1, 7), e(2, 10)]);
    let (_d, mut c) = cache();
    assert!(!c.truncate_from_start(Offset(7)));
    // What every start-up does with a log that starts at its first epoch.
    let (_d, mut c) = with(&[(0, 0)]);
    assert!(!c.truncate_from_start(Offset(0)));
    assert!(!c.is_dirty());
}

#[test]
fn truncations_persist_on_flush() {
    let (dir, mut c) = with(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_end(Offset(11));
    c.truncate_from_start(Offset(8));
    let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "0\n3\n2 6\n3 8\n4 11\n",
        "not yet"
    );
    c.flush().unwrap();
    assert!(!c.is_dirty());
    assert_eq!(
        LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path())
            .unwrap()
            .entries(),
        [e(3, 8)]
    );
    c.clear_and_flush().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "0\n0\n");
    // A vanished partition directory is tolerated by the async-style flush.
    let mut moved = with(&[(1, 1)]).1;
    moved.set_dir(&dir.path().join("gone"));
    moved.truncate_from_end(Offset(0));
    moved.flush_if_dir_exists().unwrap();
    assert!(moved.flush().is_err());
}

#[test]
fn lookups() {
    let (_d, c) = with(&[(0, 10), (1, 20), (5, 30)]);
    let at = |o| c.epoch_for_offset(Offset(o)).map(|e| e.0);
    assert_eq!(
        [at(25), at(20), at(30), at(50), at(5)],
        [Some(1), Some(1), Some(5), Some(5), None]
    );
    assert_eq!(c.next_epoch(LeaderEpoch(-1)), Some(LeaderEpoch(0)));
    assert_eq!(c.next_epoch(LeaderEpoch(1)), Some(LeaderEpoch(5)));
    assert_eq!(c.next_epoch(LeaderEpoch(5)), None);
    assert_eq!(c.previous_epoch(), Some(LeaderEpoch(1)));
    assert_eq!(c.previous_epoch_of(LeaderEpoch(5)), Some(LeaderEpoch(1)));
    assert_eq!(c.previous_entry(LeaderEpoch(0)), None);
    assert_eq!(c.epoch_entry(LeaderEpoch(1)), Some(e(1, 20)));
    assert_eq!(
        (c.earliest_entry(), c.latest_entry()),
        (Some(e(0, 10)), Some(e(5, 30)))
    );
    assert_eq!(
        c.epoch_entries_in_range(Offset(15), Offset(30)),
        [e(0, 15), e(1, 20)]
    );
    assert_eq!(
        c.epoch_entries_in_range(Offset(-1), Offset(25)),
        [e(0, 10), e(1, 20)]
    );
    assert_eq!(c.entries().len(), 3, "range query leaves the cache alone");
}

#[test]
fn loading_replays_assign_rules_and_rejects_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
    // An out-of-order file (as no writer produces) still loads consistently.
    fs::write(&path, "0\n3\n1 5\n2 6\n1 7\n").unwrap();
    assert_eq!(
        LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path())
            .unwrap()
            .entries(),
        [e(1, 7)]
    );
    fs::write(&path, "0\n1\n1 5 9\n").unwrap();
    assert!(matches!(
        LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path()),
        Err(LeaderEpochError::Checkpoint(
            CheckpointError::MalformedLine { line_number: 3, .. }
        ))
    ));
    fs::write(&path, "0\n1\n-1 5\n").unwrap();
    assert!(matches!(
        LeaderEpochCache::load(&crate::fs::StdFs::shared(), dir.path()),
        Err(LeaderEpochError::InvalidEntry { .. })
    ));
}
