//! The cleaner service: it picks the filthiest compacted log, records each
//! partition's state, retries a failed cleaning with growing backoff instead
//! of giving up, runs retention after cleaning `compact,delete` logs, and
//! runs as named threads under the log manager.

use std::sync::Arc;

use crate::cleaner_util::*;
use strata_log::batch::BatchBuilder;
use strata_log::cleaner::{CleanerConfig, CleanerError, LogCleaner};
use strata_log::{
    CleanupPolicy, Clock, DirHealth, LeaderEpoch, LoadParams, Log, LogManager, LogManagerConfig,
    MockClock, Offset, Timestamp,
};

fn open_named(
    root: &std::path::Path,
    name: &str,
    cfg: &strata_log::LogConfig,
    clock: &Arc<MockClock>,
) -> Arc<Log> {
    open_named_on(root, name, cfg, clock, strata_log::fs::StdFs::shared())
}

fn open_named_on(
    root: &std::path::Path,
    name: &str,
    cfg: &strata_log::LogConfig,
    clock: &Arc<MockClock>,
    fs: strata_log::fs::SharedFs,
) -> Arc<Log> {
    let log = Log::open(
        &root.join(name),
        cfg.clone(),
        LoadParams {
            fs,
            ..LoadParams::default()
        },
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap();
    log.update_high_watermark(log.log_end_offset());
    log
}

/// `n` overwrites of one key, rolled, plus one record in the active segment.
fn dirty(log: &Log, clock: &MockClock, n: usize) {
    for i in 0..n {
        append(
            log,
            clock.now_ms(),
            &[("k", Some(&format!("value number {i}")))],
        );
    }
    log.roll().unwrap();
    append(log, clock.now_ms(), &[("tail", Some("x"))]);
}

fn cleaner(clock: &Arc<MockClock>) -> LogCleaner {
    LogCleaner::new(
        CleanerConfig {
            dedupe_buffer_size: 1 << 16,
            io_buffer_size: 8192,
            retry_backoff_ms: 1_000,
            retry_backoff_max_ms: 4_000,
            ..CleanerConfig::default()
        },
        clock.clone(),
    )
}

#[test]
fn picks_the_filthiest_log_and_records_its_state() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let cfg = compact_config(1 << 20);
    let a = open_named(root.path(), "a-0", &cfg, &clock);
    let b = open_named(root.path(), "b-0", &cfg, &clock);
    let plain = open_named(
        root.path(),
        "p-0",
        &strata_log::LogConfig::default(),
        &clock,
    );
    dirty(&a, &clock, 30);
    dirty(&plain, &clock, 30);
    // b: a clean segment of 10 records, then 20 dirty ones: a is filthier.
    for i in 0..10 {
        append(
            &b,
            clock.now_ms(),
            &[(&format!("c{i}"), Some("value number 0"))],
        );
    }
    b.roll().unwrap();
    dirty(&b, &clock, 20);
    strata_log::cleaner::CleanerCheckpoints::for_partition_dir(
        &strata_log::fs::StdFs::shared(),
        &b.dir(),
    )
    .update(&b.topic_partition().clone(), Some(Offset(10)))
    .unwrap();
    let c = cleaner(&clock);
    let mut w = c.worker().unwrap();
    let logs = vec![plain.clone(), b.clone(), a.clone()];
    let before = c.status(&a).unwrap();
    assert!(before.eligible && before.cleanable.ratio > 0.99);
    assert_eq!(before.oldest_uncleaned_record_age_ms, Some(0));
    let o = c.clean_filthiest(&mut w, &logs).unwrap().unwrap();
    assert_eq!(&o.tp, a.topic_partition());
    clock.advance(500);
    let st = c.status(&a).unwrap();
    assert_eq!(st.time_since_last_clean_ms, Some(500));
    assert!(st.bytes_reclaimed_total > 0 && st.failure.is_none());
    assert_eq!(st.cleanable.first_dirty_offset, Offset(30));
    // Next round: b; then nothing (the plain log is never cleaned).
    let o = c.clean_filthiest(&mut w, &logs).unwrap().unwrap();
    assert_eq!(&o.tp, b.topic_partition());
    assert!(c.clean_filthiest(&mut w, &logs).is_none());
    assert_eq!(read_all(&plain).1.len(), 31);
}

#[test]
fn a_failed_cleaning_is_retried_with_growing_backoff_and_visible() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let faults = strata_log::fs::FaultFs::new();
    let log = open_named_on(
        root.path(),
        "a-0",
        &compact_config(1 << 20),
        &clock,
        faults.shared(),
    );
    dirty(&log, &clock, 20);
    let c = cleaner(&clock);
    // Every operation on the `.cleaned` files fails, starting with the
    // first one of the cleaning (before anything is swapped in).
    faults.fail_all(strata_log::fs::Fault::Eio, |_, p| {
        p.to_string_lossy().ends_with(".cleaned")
    });
    let mut failing = c.worker().unwrap();
    let logs = vec![log.clone()];
    let r = c.clean_filthiest(&mut failing, &logs).unwrap();
    assert!(matches!(r, Err(CleanerError::Log { .. })), "{r:?}");
    let f = c.state(log.topic_partition()).unwrap().failure.unwrap();
    assert_eq!((f.consecutive, f.retry_at_ms), (1, T0 + 1_000));
    assert!(
        !f.storage_failure,
        "no file was touched: the dir stays online"
    );
    assert!(log.dir_health().is_online());
    assert!(
        c.clean_filthiest(&mut failing, &logs).is_none(),
        "backing off"
    );
    clock.advance(1_000);
    assert!(c.clean_filthiest(&mut failing, &logs).unwrap().is_err());
    let f = c.state(log.topic_partition()).unwrap().failure.unwrap();
    assert_eq!(
        (f.consecutive, f.retry_at_ms),
        (2, clock.now_ms() + 2_000),
        "doubled"
    );
    assert!(c.status(&log).unwrap().failure.is_some());
    // Once the fault is gone the retry succeeds and clears the failure.
    clock.advance(2_000);
    faults.disarm();
    let mut ok = c.worker().unwrap();
    assert!(c.clean_filthiest(&mut ok, &logs).unwrap().is_ok());
    assert!(c.state(log.topic_partition()).unwrap().failure.is_none());
    assert_eq!(read_all(&log).1.len(), 2);
}

#[test]
fn compact_delete_runs_retention_after_cleaning() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mut cfg = compact_config(1 << 20);
    cfg.cleanup_policy = CleanupPolicy {
        compact: true,
        delete: true,
    };
    cfg.retention_bytes = 1;
    let log = open_named(root.path(), "a-0", &cfg, &clock);
    dirty(&log, &clock, 10);
    let c = cleaner(&clock);
    let mut w = c.worker().unwrap();
    c.clean_filthiest(&mut w, std::slice::from_ref(&log))
        .unwrap()
        .unwrap();
    assert!(
        log.log_start_offset() > Offset(0),
        "retention.bytes deleted the cleaned segment"
    );
    assert_eq!(log.num_segments(), 1);
}

#[test]
fn keyless_records_are_refused_on_a_compacted_topic() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let log = open_named(root.path(), "a-0", &compact_config(1 << 20), &clock);
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp(T0), None, Some(b"v"), &[]);
    let mut bytes = b.build();
    assert!(log.append_as_leader(&mut bytes, LeaderEpoch(0)).is_err());
    assert_eq!(log.log_end_offset(), Offset(0));
}

fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_manager_runs_named_cleaner_threads_until_shutdown() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mgr = LogManager::open(
        LogManagerConfig::new(vec![root.path().to_path_buf()]),
        clock.clone(),
    )
    .unwrap();
    mgr.cleaner().configure(CleanerConfig {
        threads: 2,
        dedupe_buffer_size: 1 << 16,
        ..CleanerConfig::default()
    });
    mgr.start_background();
    // A new thread names itself once it runs: wait for that (deadline, no
    // sleep). Names are cut at 15 bytes in /proc: "strata-log-clea".
    let count = || {
        thread_names()
            .iter()
            .filter(|n| n.starts_with("strata-log-clea"))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count() < 2 && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert_eq!(count(), 2, "{:?}", thread_names());
    mgr.shutdown().unwrap();
    assert!(
        !thread_names()
            .iter()
            .any(|n| n.starts_with("strata-log-clea")),
        "joined at shutdown"
    );
}

#[test]
fn truncation_below_the_active_segment_lowers_the_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let log = open_named(root.path(), "a-0", &compact_config(1 << 20), &clock);
    dirty(&log, &clock, 20);
    let c = cleaner(&clock);
    let mut w = c.worker().unwrap();
    c.clean_filthiest(&mut w, std::slice::from_ref(&log))
        .unwrap()
        .unwrap();
    let ckpt = strata_log::cleaner::CleanerCheckpoints::for_partition_dir(
        &strata_log::fs::StdFs::shared(),
        &log.dir(),
    );
    let tp = log.topic_partition().clone();
    assert_eq!(ckpt.get(&tp).unwrap(), Some(Offset(20)));
    // Inside the active segment: unchanged.
    append(&log, clock.now_ms(), &[("more", Some("1"))]);
    log.truncate_to(Offset(21)).unwrap();
    assert_eq!(ckpt.get(&tp).unwrap(), Some(Offset(20)));
    // Below it: lowered to the new active segment's base.
    log.truncate_to(Offset(19)).unwrap();
    let active = log.segments().last().unwrap().base_offset;
    assert_eq!(ckpt.get(&tp).unwrap(), Some(active));
    assert!(active <= Offset(19));
}

/// A clock whose monotonic time moves 10 ms at every reading, as if each
/// chunk of cleaner I/O took that long.
#[derive(Debug)]
struct Ticking(Arc<MockClock>);

impl Clock for Ticking {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
    fn monotonic_ns(&self) -> u64 {
        self.0.advance_ns(10_000_000);
        self.0.monotonic_ns()
    }
}

#[test]
fn io_max_bytes_per_second_throttles_a_cleaning() {
    use strata_log::cleaner::{Cleaner, Throttler};
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let log = open_named(root.path(), "a-0", &compact_config(1 << 20), &clock);
    for i in 0..400 {
        append(
            &log,
            clock.now_ms(),
            &[(&format!("k{}", i % 7), Some(&"v".repeat(200)))],
        );
    }
    log.roll().unwrap();
    append(&log, clock.now_ms(), &[("tail", Some("x"))]);
    let ticking: strata_log::SharedClock = Arc::new(Ticking(clock.clone()));
    let slept = Arc::new(std::sync::Mutex::new(std::time::Duration::ZERO));
    let s2 = slept.clone();
    let c2 = clock.clone();
    let sleeper: strata_log::cleaner::Sleeper = Arc::new(move |d| {
        *s2.lock().unwrap() += d;
        c2.advance_ns(d.as_nanos() as u64);
    });
    let cfg = CleanerConfig {
        dedupe_buffer_size: 1 << 16,
        io_buffer_size: 8192,
        ..CleanerConfig::default()
    };
    // 10 KB/s against ~100 KB read per 10 ms tick: it must pause.
    let mut w = Cleaner::new(&cfg, clock.clone())
        .unwrap()
        .with_throttler(Throttler::new(10_000.0, ticking, sleeper));
    let o = w.clean(&log).unwrap();
    assert!(o.bytes_reclaimed() > 0);
    let total = *slept.lock().unwrap();
    assert!(total.as_secs() >= 1, "slept {total:?}");
    assert_eq!(w.throttler().total_slept(), total);
}
