//! Guards the replication invariant that a follower's files are the
//! leader's: batches a leader's `append_as_leader` wrote, appended by a
//! follower with `append_as_follower` one by one or in multi-batch chunks
//! (one fetch response each), give byte-identical `.log` files (and
//! indexes and producer snapshots) across rolls, the same leader-epoch
//! cache and the same producer state (last sequence per producer). The
//! chunked case guards the follower's per-batch roll decision: weighing the
//! whole chunk (as Kafka's follower does) would roll earlier than the
//! leader did.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use strata_log::batch::BatchBuilder;
use strata_log::{
    LeaderEpoch, LoadParams, Log, LogConfig, MockClock, Offset, ProducerEpoch, ProducerId,
    Timestamp,
};

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1_500,
        index_interval_bytes: 200,
        ..LogConfig::default()
    }
}

/// One client batch: idempotent when `producer` is given.
fn batch(producer: Option<(i64, i16, i32)>, n: usize, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    if let Some((pid, epoch, seq)) = producer {
        b = b.producer(ProducerId(pid), ProducerEpoch(epoch), seq);
    }
    for i in 0..n {
        let v = format!("value-{ts}-{i}").repeat(3);
        b.append(
            Timestamp(ts + i as i64),
            Some(b"k"),
            Some(v.as_bytes()),
            &[],
        );
    }
    b.build()
}

/// The leader's appends: plain and idempotent batches of two producers,
/// over two leader epochs (the second assigned at the log end first, as on
/// becoming leader). Returns each append's bytes as written.
fn lead(leader: &Log) -> Vec<Vec<u8>> {
    let mut written = Vec::new();
    let mut seqs = [0i32; 2];
    for i in 0..40i64 {
        if i == 25 {
            leader.assign_epoch_at_end(LeaderEpoch(4)).unwrap();
        }
        let epoch = if i < 25 {
            LeaderEpoch(1)
        } else {
            LeaderEpoch(4)
        };
        let n = 1 + (i % 4) as usize;
        let producer = match i % 3 {
            0 => None,
            p => {
                let k = (p - 1) as usize;
                let seq = seqs[k];
                seqs[k] += n as i32;
                Some((100 + k as i64, 0, seq))
            }
        };
        let mut b = batch(producer, n, 1_000 * i);
        leader.append_as_leader(&mut b, epoch).unwrap();
        written.push(b);
    }
    written
}

fn files(dir: &Path, suffix: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn concat(dir: &Path) -> Vec<u8> {
    files(dir, ".log")
        .into_iter()
        .flat_map(|(_, b)| b)
        .collect()
}

/// `all_batches`: also the retained batch metadata (the last five per
/// producer); a log reopened from a snapshot keeps only the last one, as in
/// Kafka.
fn assert_same_state(leader: &Log, follower: &Log, all_batches: bool) {
    assert_eq!(follower.log_end_offset(), leader.log_end_offset());
    for e in 0..6 {
        assert_eq!(
            follower.end_offset_for_epoch(LeaderEpoch(e)),
            leader.end_offset_for_epoch(LeaderEpoch(e)),
            "epoch {e}"
        );
    }
    assert_eq!(
        std::fs::read(follower.dir().join("leader-epoch-checkpoint")).unwrap(),
        std::fs::read(leader.dir().join("leader-epoch-checkpoint")).unwrap()
    );
    assert_eq!(follower.producer_id_count(), 2);
    assert_eq!(follower.producer_id_count(), leader.producer_id_count());
    for pid in [100, 101] {
        let (l, f) = (
            leader.producer_state_of(ProducerId(pid)).unwrap(),
            follower.producer_state_of(ProducerId(pid)).unwrap(),
        );
        assert_eq!(f.last_seq(), l.last_seq(), "producer {pid}");
        assert_eq!(f.producer_epoch(), l.producer_epoch());
        assert_eq!(f.last_data_offset(), l.last_data_offset());
        if all_batches {
            assert_eq!(f.batch_metadata(), l.batch_metadata(), "producer {pid}");
        } else {
            assert_eq!(f.batch_metadata().last(), l.batch_metadata().last());
        }
    }
    assert_eq!(
        follower.producer_state_end_offset(),
        leader.producer_state_end_offset()
    );
}

#[test]
fn batch_by_batch_follower_files_are_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_000_000);
    let leader = open_log(tmp.path(), "l/t-0", config(), &clock, LoadParams::default());
    let follower = open_log(tmp.path(), "f/t-0", config(), &clock, LoadParams::default());
    let written = lead(&leader);
    assert!(leader.num_segments() >= 3, "the test needs rolls");
    for b in &written {
        follower.append_as_follower(b).unwrap();
    }
    assert_eq!(
        leader
            .segments()
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>(),
        follower
            .segments()
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>()
    );
    assert_eq!(files(&follower.dir(), ".log"), files(&leader.dir(), ".log"));
    assert_same_state(&leader, &follower, true);
    // The producer snapshots taken at each roll match too.
    assert_eq!(
        follower.producer_snapshot_offsets(),
        leader.producer_snapshot_offsets()
    );
    assert_eq!(
        files(&follower.dir(), ".snapshot"),
        files(&leader.dir(), ".snapshot")
    );
    // After a clean close the indexes (trimmed) are identical as well.
    leader.close().unwrap();
    follower.close().unwrap();
    for suffix in [".log", ".index", ".timeindex", ".snapshot"] {
        assert_eq!(
            files(&follower.dir(), suffix),
            files(&leader.dir(), suffix),
            "{suffix}"
        );
    }
}

#[test]
fn chunked_follower_appends_give_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let clock = MockClock::new(1_000_000);
    let leader = open_log(tmp.path(), "l/t-0", config(), &clock, LoadParams::default());
    let follower = open_log(tmp.path(), "f/t-0", config(), &clock, LoadParams::default());
    let written = lead(&leader);
    // Fetch responses of up to three batches each.
    for chunk in written.chunks(3) {
        let bytes: Vec<u8> = chunk.concat();
        follower.append_as_follower(&bytes).unwrap();
    }
    assert_eq!(concat(&follower.dir()), concat(&leader.dir()));
    assert_same_state(&leader, &follower, true);
    assert_eq!(
        leader
            .segments()
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>(),
        follower
            .segments()
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>()
    );
    assert!(follower.num_segments() >= 3, "the test needs rolls");
    assert_eq!(files(&follower.dir(), ".log"), files(&leader.dir(), ".log"));
    assert_eq!(
        files(&follower.dir(), ".snapshot"),
        files(&leader.dir(), ".snapshot")
    );
    // A reopened follower reads the same stream back.
    let dir = follower.dir();
    follower.close().unwrap();
    leader.close().unwrap();
    for suffix in [".index", ".timeindex"] {
        assert_eq!(
            files(&dir, suffix),
            files(&leader.dir(), suffix),
            "{suffix}"
        );
    }
    drop(follower);
    let reopened: Arc<Log> = open_log(
        tmp.path(),
        "f/t-0",
        config(),
        &clock,
        LoadParams {
            had_clean_shutdown: true,
            recovery_point: leader.log_end_offset(),
            ..LoadParams::default()
        },
    );
    assert_eq!(reopened.dir(), dir);
    assert_same_state(&leader, &reopened, false);
}
