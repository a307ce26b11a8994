//! Guards loading and recovery at open (§9): torn and corrupt tails, lost or
//! garbage indexes, preallocated leftovers, interrupted clean/split swaps,
//! and that an unclean open re-reads only from the recovery point.

use std::fs::{self, OpenOptions};
use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use proptest::prelude::*;
use strata_log::{LoadParams, Log, LogConfig, MockClock, Offset, Timestamp};

fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 2_000,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

fn unclean(rp: Offset) -> LoadParams {
    LoadParams {
        recovery_point: rp,
        ..LoadParams::default()
    }
}

fn clean() -> LoadParams {
    LoadParams {
        had_clean_shutdown: true,
        ..LoadParams::default()
    }
}

/// Append `n` batches of 2 records (offsets 2i, 2i+1, timestamps 10i, 10i+5).
fn fill(log: &Log, from: i64, n: i64) {
    for i in from..from + n {
        log.append_as_follower(&follower_batch(2 * i, &[10 * i, 10 * i + 5], 30))
            .unwrap();
    }
}

/// Every batch readable from the log, in order.
fn read_all(log: &Log) -> Vec<RawBatch> {
    read_all_batches(log).into_iter().map(|(b, _)| b).collect()
}

fn assert_batches(log: &Log, n: i64) {
    let all = read_all(log);
    assert_eq!(all.len() as i64, n);
    for (i, b) in all.iter().enumerate() {
        assert_eq!((b.base, b.last), (2 * i as i64, 2 * i as i64 + 1));
    }
    assert_eq!(log.log_end_offset(), Offset(2 * n));
    for i in 0..n {
        let r = log
            .fetch_offset_for_timestamp(Timestamp(10 * i + 1))
            .unwrap()
            .unwrap();
        assert_eq!(r.offset, Offset(2 * i + 1), "timestamp lookup {i}");
    }
}

fn reopen(root: &Path, name: &str, params: LoadParams) -> Arc<Log> {
    open_log(root, name, cfg(), &MockClock::new(0), params)
}

#[test]
fn torn_last_batch_is_cut_and_the_rest_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "a-0", LoadParams::default());
    fill(&log, 0, 10);
    let rp = log.recovery_point();
    let segs = log.segments();
    drop(log);
    let last = segs.last().unwrap();
    let f = OpenOptions::new().write(true).open(&last.log_path).unwrap();
    f.set_len(last.size - 7).unwrap();
    let log = reopen(tmp.path(), "a-0", unclean(rp));
    assert_batches(&log, 9);
    let stats = log.recovery_stats();
    assert!(stats.truncated_bytes > 0);
    assert_eq!(stats.recovered_segments.last(), Some(&last.base_offset));
    // Appends continue after the cut.
    fill(&log, 9, 1);
    assert_batches(&log, 10);
}

#[test]
fn corrupt_crc_mid_segment_drops_later_batches_and_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "b-0", LoadParams::default());
    fill(&log, 0, 60);
    let segs = log.segments();
    assert!(segs.len() >= 4, "{}", segs.len());
    drop(log);
    let victim = &segs[1];
    let bytes = fs::read(&victim.log_path).unwrap();
    let batches = split_batches(&bytes);
    let bad = &batches[2];
    let mut corrupted = bytes.clone();
    corrupted[bad.position + bad.size - 3] ^= 0x55;
    fs::write(&victim.log_path, &corrupted).unwrap();
    let log = reopen(tmp.path(), "b-0", unclean(Offset(0)));
    let kept = (bad.base / 2) as i64;
    assert_batches(&log, kept);
    let stats = log.recovery_stats();
    let later: Vec<Offset> = segs[2..].iter().map(|s| s.base_offset).collect();
    assert_eq!(stats.deleted_segments, later);
    assert_eq!(
        stats.recovered_segments,
        vec![segs[0].base_offset, segs[1].base_offset]
    );
    assert_eq!(log.segments().len(), 2);
    for s in &segs[2..] {
        assert!(!s.log_path.exists());
    }
}

#[test]
fn missing_index_is_rebuilt_even_after_a_clean_shutdown() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "c-0", LoadParams::default());
    fill(&log, 0, 40);
    let segs = log.segments();
    log.close().unwrap();
    let want = read_offset_index(&segs[0].index_path);
    assert!(!want.is_empty());
    fs::remove_file(&segs[0].index_path).unwrap();
    let log = reopen(tmp.path(), "c-0", clean());
    assert_eq!(
        log.recovery_stats().rebuilt_indexes,
        vec![segs[0].base_offset]
    );
    assert!(log.recovery_stats().recovered_segments.is_empty());
    assert_eq!(read_offset_index(&segs[0].index_path), want);
    assert_batches(&log, 40);
}

#[test]
fn missing_time_index_becomes_an_empty_file() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "d-0", LoadParams::default());
    fill(&log, 0, 40);
    let segs = log.segments();
    log.close().unwrap();
    fs::remove_file(&segs[0].time_index_path).unwrap();
    let log = reopen(tmp.path(), "d-0", clean());
    assert_eq!(
        log.recovery_stats().empty_time_indexes,
        vec![segs[0].base_offset]
    );
    assert_eq!(fs::metadata(&segs[0].time_index_path).unwrap().len(), 0);
    // Offsets still resolve; time lookups still find the right records.
    assert_batches(&log, 40);
}

#[test]
fn garbage_index_fails_the_checks_and_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "g-0", LoadParams::default());
    fill(&log, 0, 40);
    let segs = log.segments();
    log.close().unwrap();
    let want = read_offset_index(&segs[0].index_path);
    fs::write(&segs[0].index_path, [1u8, 2]).unwrap();
    let log = reopen(tmp.path(), "g-0", clean());
    assert_eq!(
        log.recovery_stats().rebuilt_indexes,
        vec![segs[0].base_offset]
    );
    assert_eq!(read_offset_index(&segs[0].index_path), want);
    assert_batches(&log, 40);
}

#[test]
fn preallocated_zero_filled_index_left_by_a_crash_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "e-0", LoadParams::default());
    fill(&log, 0, 5);
    log.flush().unwrap();
    let seg = log.segments().remove(0);
    // Crash: the active segment's index is still preallocated to 10 MiB.
    assert_eq!(
        fs::metadata(&seg.index_path).unwrap().len(),
        10 * 1024 * 1024
    );
    drop(log);
    // Even if the dir were believed clean, the zero tail is detected.
    let log = reopen(tmp.path(), "e-0", clean());
    assert_eq!(log.recovery_stats().rebuilt_indexes, vec![seg.base_offset]);
    assert_batches(&log, 5);
    let info = &log.segments()[0];
    assert_eq!(info.offset_index_max_entries, 10 * 1024 * 1024 / 8);
}

#[test]
fn preallocated_log_tail_of_zeros_is_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let c = LogConfig {
        preallocate: true,
        segment_bytes: 100_000,
        ..cfg()
    };
    let clock = MockClock::new(0);
    let log = open_log(tmp.path(), "f-0", c.clone(), &clock, LoadParams::default());
    // The first segment is created by the loader; roll to get a preallocated one.
    log.roll().unwrap();
    fill(&log, 0, 7);
    let seg = log.segments().remove(0);
    assert_eq!(fs::metadata(&seg.log_path).unwrap().len(), 100_000);
    let data = seg.size;
    drop(log);
    let log = open_log(tmp.path(), "f-0", c, &clock, unclean(Offset(0)));
    assert_batches(&log, 7);
    assert_eq!(log.recovery_stats().truncated_bytes, 100_000 - data);
    assert_eq!(fs::metadata(&seg.log_path).unwrap().len(), data);
}

#[test]
fn unclean_open_rereads_only_from_the_recovery_point() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "h-0", LoadParams::default());
    fill(&log, 0, 60);
    let segs = log.segments();
    assert!(segs.len() >= 4);
    // Rolls flushed everything below the active segment's base.
    let rp = log.recovery_point();
    assert_eq!(rp, segs.last().unwrap().base_offset);
    drop(log);
    let log = reopen(tmp.path(), "h-0", unclean(rp));
    assert_eq!(log.recovery_stats().recovered_segments, vec![rp]);
    assert_batches(&log, 60);
    log.close().unwrap();
    let log = reopen(tmp.path(), "h-0", clean());
    assert!(log.recovery_stats().recovered_segments.is_empty());
    assert_eq!(log.recovery_point(), Offset(120));
    assert_batches(&log, 60);
}

#[test]
fn orphan_indexes_are_deleted_and_log_end_below_start_resets() {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "i-0", LoadParams::default());
    fill(&log, 0, 5);
    log.close().unwrap();
    let dir = tmp.path().join("i-0");
    fs::write(dir.join(format!("{:020}.index", 999)), [0u8; 16]).unwrap();
    fs::write(dir.join(format!("{:020}.timeindex", 999)), [0u8; 24]).unwrap();
    let params = LoadParams {
        log_start_offset: Offset(500),
        had_clean_shutdown: true,
        ..LoadParams::default()
    };
    let log = reopen(tmp.path(), "i-0", params);
    assert_eq!(log.recovery_stats().orphan_indexes_deleted.len(), 2);
    // LEO 10 < checkpointed log start 500: one empty segment at 500.
    assert_eq!(log.log_start_offset(), Offset(500));
    assert_eq!(log.log_end_offset(), Offset(500));
    assert_eq!(log.segments().len(), 1);
    log.flush().unwrap();
    let names = file_names(&dir);
    for suffix in ["log", "index", "timeindex"] {
        assert!(
            names.contains(&format!("{:020}.{suffix}", 500)),
            "{names:?}"
        );
    }
}

/// A closed log of two segments [0, 20) and [20, 40) plus the bytes of a
/// "cleaned" segment holding only the odd batches of [0, 40).
fn swap_setup(root: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let c = LogConfig {
        segment_bytes: 100_000,
        ..cfg()
    };
    let log = open_log(root, "s-0", c, &MockClock::new(0), LoadParams::default());
    fill(&log, 0, 10);
    log.roll().unwrap();
    fill(&log, 10, 10);
    log.close().unwrap();
    let mut cleaned = Vec::new();
    for i in (1..20).step_by(2) {
        cleaned.extend(follower_batch(2 * i, &[10 * i, 10 * i + 5], 30));
    }
    (root.join("s-0"), cleaned)
}

fn offsets(log: &Log) -> Vec<i64> {
    read_all(log).iter().map(|b| b.base).collect()
}

#[test]
fn swap_recovery_in_each_crash_state() {
    let all: Vec<i64> = (0..20).map(|i| 2 * i).collect();
    let odd: Vec<i64> = (1..20).step_by(2).map(|i| 2 * i).collect();
    // 1. Only .cleaned output: deleted, old segments untouched.
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cleaned) = swap_setup(tmp.path());
    fs::write(dir.join(format!("{:020}.log.cleaned", 0)), &cleaned).unwrap();
    fs::write(dir.join(format!("{:020}.index.cleaned", 0)), []).unwrap();
    let log = reopen(tmp.path(), "s-0", clean());
    assert_eq!(offsets(&log), all);
    assert_eq!(log.recovery_stats().deleted_temp_files.len(), 2);
    drop(log);
    // 2. Split interrupted mid-rename: a higher .swap and a lower .cleaned.
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cleaned) = swap_setup(tmp.path());
    fs::write(dir.join(format!("{:020}.log.cleaned", 0)), &cleaned).unwrap();
    fs::write(dir.join(format!("{:020}.log.swap", 20)), &cleaned).unwrap();
    let log = reopen(tmp.path(), "s-0", clean());
    assert_eq!(offsets(&log), all);
    assert!(file_names(&dir)
        .iter()
        .all(|n| !n.ends_with(".swap") && !n.ends_with(".cleaned")));
    drop(log);
    // 3. All .swap present, old files not renamed yet: the swap completes.
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cleaned) = swap_setup(tmp.path());
    fs::write(dir.join(format!("{:020}.log.swap", 0)), &cleaned).unwrap();
    let log = reopen(tmp.path(), "s-0", clean());
    assert_eq!(offsets(&log), odd);
    assert_eq!(log.segments().len(), 1);
    assert!(!dir.join(format!("{:020}.log", 20)).exists());
    drop(log);
    // 4. Old files already renamed .deleted: deleted, swap completes.
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cleaned) = swap_setup(tmp.path());
    fs::write(dir.join(format!("{:020}.log.swap", 0)), &cleaned).unwrap();
    for base in [0, 20] {
        for suffix in ["log", "index", "timeindex"] {
            let p = dir.join(format!("{base:020}.{suffix}"));
            fs::rename(&p, format!("{}.deleted", p.display())).unwrap();
        }
    }
    let log = reopen(tmp.path(), "s-0", clean());
    assert_eq!(offsets(&log), odd);
    assert!(file_names(&dir).iter().all(|n| !n.ends_with(".deleted")));
    drop(log);
    // 5. Final names in place with .deleted leftovers.
    let tmp = tempfile::tempdir().unwrap();
    let (dir, cleaned) = swap_setup(tmp.path());
    fs::write(dir.join(format!("{:020}.log.deleted", 40)), &cleaned).unwrap();
    fs::write(dir.join(format!("{:020}.snapshot.deleted", 40)), []).unwrap();
    let log = reopen(tmp.path(), "s-0", clean());
    assert_eq!(offsets(&log), all);
    assert!(file_names(&dir).iter().all(|n| !n.ends_with(".deleted")));
}

/// The recovery_tail fuzz target's property, on the normal test path.
fn check_valid_prefix_survives(batches: usize, tail: &[u8], unclean_open: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let log = reopen(tmp.path(), "p-0", LoadParams::default());
    fill(&log, 0, batches as i64);
    let seg = log.segments().remove(0);
    drop(log);
    let mut f = OpenOptions::new().append(true).open(&seg.log_path).unwrap();
    std::io::Write::write_all(&mut f, tail).unwrap();
    drop(f);
    let params = if unclean_open {
        unclean(Offset(0))
    } else {
        clean()
    };
    let log = reopen(tmp.path(), "p-0", params);
    let got = read_all(&log);
    assert!(got.len() >= batches, "{} < {batches}", got.len());
    for (i, b) in got.iter().take(batches).enumerate() {
        assert_eq!(b.base, 2 * i as i64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]
    #[test]
    fn valid_prefix_survives_any_tail(batches in 0usize..6, tail in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_valid_prefix_survives(batches, &tail, true);
    }
}
