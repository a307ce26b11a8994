//! The log cleaner against a model: random writes, tombstones and
//! compactions (some crashed at a random file operation, injected through
//! the file-system seam, and reopened through the loader) must always read
//! back as "latest value per key", with offsets monotonic and nothing at or
//! after the dirty end touched.

use std::sync::Arc;

use crate::cleaner_util::*;
use rand::{Rng, SeedableRng};
use strata_log::cleaner::{Cleaner, CleanerConfig, CleanerError};
use strata_log::fs::{Fault, FaultFs, FsOp};
use strata_log::{Clock, MockClock, Offset, ReadBound};

fn worker(clock: &Arc<MockClock>, map_bytes: u64) -> Cleaner {
    let cfg = CleanerConfig {
        dedupe_buffer_size: map_bytes,
        io_buffer_size: 4096,
        ..CleanerConfig::default()
    };
    Cleaner::new(&cfg, clock.clone()).unwrap()
}

/// Records at or after `from`, as bytes-level records.
fn tail(log: &strata_log::Log, from: Offset) -> Vec<Rec> {
    read_all(log)
        .1
        .into_iter()
        .filter(|r| r.offset >= from)
        .collect()
}

#[test]
fn random_writes_compactions_and_crashes_match_the_model() {
    for seed in 0..16u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let root = tempfile::tempdir().unwrap();
        let clock = MockClock::new(T0);
        let cfg = compact_config(700);
        let mut faults = FaultFs::new();
        let mut log = open_on(root.path(), &cfg, &clock, faults.shared());
        let mut model = Model::default();
        let mut crashes = 0;
        for step in 0..80 {
            match rng.gen_range(0..10) {
                0..=6 => {
                    let n = rng.gen_range(1..=4);
                    let recs: Vec<(String, Option<String>)> = (0..n)
                        .map(|_| {
                            let k = format!("k{}", rng.gen_range(0..12));
                            let v = (!rng.gen_bool(0.15))
                                .then(|| format!("v{step}-{}", rng.gen_range(0..1000)));
                            (k, v)
                        })
                        .collect();
                    let refs: Vec<(&str, Option<&str>)> = recs
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_deref()))
                        .collect();
                    let base = append(&log, clock.now_ms(), &refs);
                    model.write(base, &refs);
                }
                7 => clock.advance(rng.gen_range(0..15_000)),
                _ => {
                    // A crash at the n-th file operation of the clean:
                    // that one and every later one fail.
                    let fail_at = rng.gen_bool(0.5).then(|| rng.gen_range(0..40));
                    let snap_before = strata_log::cleaner::cleaner_snapshot(&log, None).unwrap();
                    let active = snap_before.segments.last().unwrap().base_offset;
                    let untouched = tail(&log, active);
                    let small_map = rng.gen_bool(0.3);
                    let mut w = worker(&clock, if small_map { 24 * 4 } else { 1 << 16 });
                    if let Some(n) = fail_at {
                        faults.fail_from(faults.op_count() + n, Fault::Eio);
                    }
                    let r = w.clean(&log);
                    faults.disarm();
                    match r {
                        Ok(o) => {
                            assert!(
                                o.end_offset <= active,
                                "seed {seed}: cleaned past the dirty end"
                            );
                        }
                        Err(e) => {
                            assert!(fail_at.is_some(), "seed {seed} step {step}: {e}");
                            // A crash: drop the log without closing, reopen through the loader.
                            drop(log);
                            crashes += 1;
                            faults = FaultFs::new();
                            log = open_on(root.path(), &cfg, &clock, faults.shared());
                        }
                    }
                    assert_eq!(
                        tail(&log, active),
                        untouched,
                        "seed {seed}: the active segment changed"
                    );
                }
            }
            let (_, recs) = read_all(&log);
            model.check(&recs);
        }
        // A final clean reopen reads the same.
        let before = read_all(&log).1;
        log.close().unwrap();
        drop(log);
        let log = open(root.path(), &cfg, &clock);
        assert_eq!(read_all(&log).1, before, "seed {seed}: reopen");
        let _ = crashes;
    }
}

#[test]
fn tombstone_kept_until_its_horizon_then_dropped_on_a_later_clean() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = compact_config(1 << 20);
    let log = open(root.path(), &cfg, &clock);
    // The tombstone's own timestamp is very old; it must still survive the
    // first clean (testCleanTombstone).
    append(&log, 1_000, &[("a", Some("1")), ("b", Some("1"))]);
    append(&log, 1_000, &[("a", None)]);
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("c", Some("1"))]);
    let mut w = worker(&clock, 1 << 16);
    let first = w.clean(&log).unwrap();
    assert_eq!(first.end_offset, Offset(3));
    let (hdrs, recs) = read_all(&log);
    let tomb = recs
        .iter()
        .find(|r| r.key.as_deref() == Some(b"a"))
        .expect("tombstone kept");
    assert_eq!(tomb.value, None);
    let h = hdrs
        .iter()
        .find(|h| h.base <= tomb.offset && tomb.offset <= h.last)
        .unwrap();
    let horizon = clock.now_ms() + cfg.delete_retention_ms;
    assert_eq!(
        h.delete_horizon,
        Some(strata_log::Timestamp(horizon)),
        "horizon = now + delete.retention.ms"
    );
    assert_eq!(
        h.base_timestamp.0, horizon,
        "BaseTimestamp holds the horizon"
    );
    assert_eq!(h.attributes & 0x40, 0x40);
    // Before the horizon a new clean keeps it.
    append(&log, clock.now_ms(), &[("c", Some("2"))]);
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("d", Some("1"))]);
    clock.advance(cfg.delete_retention_ms - 1);
    w.clean(&log).unwrap();
    assert!(
        read_all(&log)
            .1
            .iter()
            .any(|r| r.key.as_deref() == Some(b"a")),
        "kept before the horizon"
    );
    // After it, the next clean drops it.
    clock.advance(2);
    append(&log, clock.now_ms(), &[("d", Some("2"))]);
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("e", Some("1"))]);
    w.clean(&log).unwrap();
    let recs = read_all(&log).1;
    assert!(
        !recs.iter().any(|r| r.key.as_deref() == Some(b"a")),
        "dropped after the horizon"
    );
    assert!(recs.iter().any(|r| r.key.as_deref() == Some(b"b")));
}

#[test]
fn a_reader_holding_a_slice_across_a_clean_reads_the_old_bytes() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = compact_config(1 << 20);
    let log = open(root.path(), &cfg, &clock);
    for i in 0..50 {
        append(&log, clock.now_ms(), &[("k", Some(&format!("v{i}")))]);
    }
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("z", Some("1"))]);
    let held = log
        .read(Offset(0), usize::MAX / 2, ReadBound::LogEnd, true)
        .unwrap();
    let before = held.read_to_vec().unwrap();
    // A reader thread keeps reading while the clean runs; every read is a
    // consistent log.
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Acquire) || reads == 0 {
                let (_, recs) = read_all(&log);
                let latest = recs
                    .iter()
                    .rfind(|r| r.key.as_deref() == Some(b"k"))
                    .unwrap();
                assert_eq!(latest.value.as_deref(), Some(&b"v49"[..]));
                reads += 1;
            }
        });
        let mut w = worker(&clock, 1 << 16);
        w.clean(&log).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Release);
        reader.join().unwrap();
    });
    assert_eq!(
        held.read_to_vec().unwrap(),
        before,
        "the old slice still reads the old bytes"
    );
    let (_, after) = read_all(&log);
    assert_eq!(
        after
            .iter()
            .filter(|r| r.key.as_deref() == Some(b"k"))
            .count(),
        1
    );
}

#[test]
fn min_and_max_compaction_lag() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mut cfg = compact_config(1 << 20);
    cfg.min_compaction_lag_ms = 60_000;
    let log = open(root.path(), &cfg, &clock);
    for i in 0..10 {
        append(&log, clock.now_ms(), &[("k", Some(&format!("{i}")))]);
    }
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("x", Some("1"))]);
    let mut w = worker(&clock, 1 << 16);
    let o = w.clean(&log).unwrap();
    assert_eq!(
        o.end_offset,
        Offset(0),
        "records younger than the min lag are not cleaned"
    );
    assert_eq!(read_all(&log).1.len(), 11);
    clock.advance(60_001);
    let o = w.clean(&log).unwrap();
    assert_eq!(o.end_offset, Offset(10));
    assert_eq!(read_all(&log).1.len(), 2);
}

#[test]
fn max_compaction_lag_forces_a_barely_dirty_log() {
    use strata_log::cleaner::{cleanable, cleaner_snapshot, CompactionSettings};
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let log = open(root.path(), &compact_config(1 << 20), &clock);
    for i in 0..20 {
        append(
            &log,
            clock.now_ms(),
            &[(&format!("k{i}"), Some("a long enough value"))],
        );
    }
    log.roll().unwrap();
    let dirty_base = log.log_end_offset();
    append(&log, clock.now_ms(), &[("k1", Some("late"))]);
    log.roll().unwrap();
    let s = CompactionSettings {
        min_cleanable_dirty_ratio: 0.5,
        min_compaction_lag_ms: 0,
        max_compaction_lag_ms: 1_000,
    };
    let snap = cleaner_snapshot(&log, Some(dirty_base)).unwrap();
    let c = cleanable(&snap, &s, clock.now_ms());
    assert!(c.ratio < 0.5 && !c.is_eligible(&s), "ratio {}", c.ratio);
    clock.advance(1_001);
    let c = cleanable(&snap, &s, clock.now_ms());
    assert!(c.need_compaction_now() && c.is_eligible(&s));
    assert_eq!(c.compaction_delay_ms, 1);
}

#[test]
fn a_full_offset_map_cleans_in_several_passes() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = compact_config(1 << 20);
    let log = open(root.path(), &cfg, &clock);
    let mut model = Model::default();
    for round in 0..3 {
        for k in 0..20 {
            let (key, val) = (format!("k{k}"), format!("{round}"));
            let b = append(&log, clock.now_ms(), &[(&key, Some(&val))]);
            model.write(b, &[(&key, Some(&val))]);
        }
    }
    log.roll().unwrap();
    let b = append(&log, clock.now_ms(), &[("z", Some("1"))]);
    model.write(b, &[("z", Some("1"))]);
    // 6 slots at load factor 0.9: 5 keys per pass, stopping mid-segment.
    let mut w = worker(&clock, 24 * 6);
    assert_eq!(w.map_capacity(), 5);
    let o = w.clean(&log).unwrap();
    assert!(o.stats.passes > 1, "several passes: {:?}", o.stats);
    assert_eq!(
        o.end_offset,
        Offset(60),
        "the whole dirty section got cleaned"
    );
    let (_, recs) = read_all(&log);
    model.check(&recs);
    assert_eq!(recs.iter().filter(|r| r.offset < Offset(60)).count(), 20);
    let ckpt = strata_log::cleaner::CleanerCheckpoints::for_partition_dir(
        &strata_log::fs::StdFs::shared(),
        &partition_dir(root.path()),
    );
    assert_eq!(
        ckpt.get(&strata_log::TopicPartition::new("t", 0)).unwrap(),
        Some(Offset(60))
    );
}

#[test]
fn map_full_mid_segment_stops_the_pass_there() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = CleanerConfig {
        dedupe_buffer_size: 24 * 3,
        io_buffer_size: 4096,
        max_passes: 1,
        ..CleanerConfig::default()
    };
    let log = open(root.path(), &compact_config(1 << 20), &clock);
    for k in 0..6 {
        append(&log, clock.now_ms(), &[(&format!("k{k}"), Some("v"))]);
    }
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("z", Some("1"))]);
    let mut w = Cleaner::new(&cfg, clock.clone()).unwrap();
    let o = w.clean(&log).unwrap();
    // Two keys fit (3 slots x 0.9); the third ends the pass at its offset.
    assert_eq!(o.end_offset, Offset(2));
    assert_eq!(
        read_all(&log).1.len(),
        7,
        "nothing superseded, nothing lost"
    );
}

#[test]
fn a_crash_at_every_file_operation_reopens_to_the_same_keys() {
    // Learn the operations of one clean, then crash at each in turn.
    let build = |root: &std::path::Path, clock: &Arc<MockClock>| {
        let faults = FaultFs::new();
        let log = open_on(root, &compact_config(300), clock, faults.shared());
        let mut model = Model::default();
        for i in 0..30 {
            let (k, v) = (format!("k{}", i % 5), format!("v{i}"));
            let b = append(&log, clock.now_ms(), &[(&k, Some(&v))]);
            model.write(b, &[(&k, Some(&v))]);
        }
        (log, model, faults)
    };
    let clock = MockClock::new(T0);
    let probe_root = tempfile::tempdir().unwrap();
    let (log, _, probe) = build(probe_root.path(), &clock);
    let first = probe.op_count();
    worker(&clock, 1 << 16).clean(&log).unwrap();
    let ops: Vec<_> = probe.ops().split_off(first as usize);
    let checkpoint_written = |r: &strata_log::fs::OpRecord| {
        r.op == FsOp::Rename && r.path.ends_with("cleaner-offset-checkpoint.tmp")
    };
    assert!(
        ops.iter().any(|r| r.op == FsOp::SyncDir)
            && ops.iter().any(checkpoint_written)
            && ops.iter().any(|r| r.op == FsOp::WriteAt),
        "{ops:?}"
    );
    let expected = read_all(&log).1;
    // Crash at every operation, not once per kind of operation: a crash
    // at the renames of a group's first segment loses only superseded
    // records, one at its last segment's loses records the clean keeps.
    for (n, op) in ops.iter().enumerate() {
        let root = tempfile::tempdir().unwrap();
        let (log, model, faults) = build(root.path(), &clock);
        let before = read_all(&log).1;
        faults.fail_from(faults.op_count() + n as u64, Fault::Eio);
        let r = worker(&clock, 1 << 16).clean(&log);
        assert!(
            matches!(
                r,
                Err(CleanerError::Log { .. })
                    | Err(CleanerError::Checkpoint { .. })
                    | Err(CleanerError::TxnIndex { .. })
            ),
            "op {n} {op:?}: {r:?}"
        );
        drop(log);
        let names_after_crash = names(&partition_dir(root.path()));
        let log = open(root.path(), &compact_config(300), &clock);
        let leftovers: Vec<String> = names(&partition_dir(root.path()))
            .into_iter()
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "op {n}: {leftovers:?} (was {names_after_crash:?})"
        );
        let recs = read_all(&log).1;
        model.check(&recs);
        // Between the log before the clean and the log after it: no record
        // the clean keeps is lost, even one whose key has a newer value
        // elsewhere (the latest values alone would not show a lost group).
        for r in &expected {
            assert!(recs.contains(r), "op {n} {op:?}: lost {r:?}");
        }
        for r in &recs {
            assert!(before.contains(r), "op {n} {op:?}: invented {r:?}");
        }
        // Cleaning again converges on the same log as an uninterrupted clean.
        worker(&clock, 1 << 16).clean(&log).unwrap();
        assert_eq!(read_all(&log).1, expected, "op {n} {op:?}");
    }
}
