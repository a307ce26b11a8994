//! Guards the bound on open segment files (`strata.log.max.open.files`,
//! `HandleCache`): many logs sharing a tiny limit append, read, roll,
//! truncate, delete by retention, compact and reopen with every byte right,
//! the count of open handles never passes the limit, and durable appends
//! through reopened handles survive a power loss.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::cleaner_util::{compact_config, read_bytes};
use crate::common::*;
use strata_log::cleaner::{Cleaner, CleanerConfig};
use strata_log::fs::sim::SimFs;
use strata_log::fs::{SharedFs, StdFs};
use strata_log::{
    DirHealth, HandleCache, LoadParams, Log, LogConfig, MockClock, Offset, ReadBound,
};

const LIMIT: usize = 8;
const LOGS: usize = 20;

fn open(
    root: &Path,
    name: &str,
    cfg: LogConfig,
    clock: &Arc<MockClock>,
    fs: SharedFs,
    cache: &Arc<HandleCache>,
    clean: bool,
) -> Arc<Log> {
    let log = Log::open(
        &root.join(name),
        cfg,
        LoadParams {
            fs,
            handles: cache.clone(),
            had_clean_shutdown: clean,
            ..LoadParams::default()
        },
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap();
    log.update_high_watermark(log.log_end_offset());
    log
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

/// One batch of 3 records whose values name the log and the round.
fn batch(log: &Log, i: usize, round: usize) -> Vec<u8> {
    let base = log.log_end_offset().0;
    let mut b = strata_log::batch::BatchBuilder::new(Offset(base));
    for r in 0..3 {
        let v = format!("log{i}-round{round}-rec{r}-{}", "v".repeat(60));
        b.append(
            strata_log::Timestamp(1_000 + round as i64),
            Some(b"k"),
            Some(v.as_bytes()),
            &[],
        );
    }
    b.build()
}

fn append(log: &Log, bytes: &[u8]) {
    log.append_as_follower(bytes).unwrap();
    log.update_high_watermark(log.log_end_offset());
}

/// Every batch of the log from its start, by base offset.
fn contents(log: &Log) -> BTreeMap<i64, Vec<u8>> {
    read_all_batches(log)
        .into_iter()
        .map(|(b, bytes)| (b.base, bytes))
        .collect()
}

fn assert_bounded(cache: &HandleCache) {
    let s = cache.stats();
    // One thread: each open evicts at once, so at most one over.
    assert!(s.open <= LIMIT, "{s:?}");
    assert!(s.peak <= LIMIT + 1, "{s:?}");
}

#[test]
fn many_logs_share_a_tiny_handle_limit() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cache = HandleCache::new(LIMIT);
    let fs = StdFs::shared();
    let names: Vec<String> = (0..LOGS).map(|i| format!("t-{i}")).collect();
    let mut logs: Vec<Arc<Log>> = names
        .iter()
        .map(|n| {
            open(
                root.path(),
                n,
                small_segments(),
                &clock,
                fs.clone(),
                &cache,
                true,
            )
        })
        .collect();
    assert_bounded(&cache);
    let mut model: Vec<BTreeMap<i64, Vec<u8>>> = vec![BTreeMap::new(); LOGS];
    // Interleaved: a stride through the logs so neighbours are not reused.
    for round in 0..12 {
        for k in 0..LOGS {
            let i = (k * 7 + round) % LOGS;
            let b = batch(&logs[i], i, round);
            let base = logs[i].log_end_offset().0;
            append(&logs[i], &b);
            model[i].insert(base, b);
            assert_bounded(&cache);
            // A read of another log between appends.
            let j = (i * 13 + 5) % LOGS;
            let got = logs[j].read(Offset(0), 1 << 16, ReadBound::LogEnd, true);
            drop(got);
            assert_bounded(&cache);
        }
    }
    for (i, log) in logs.iter().enumerate() {
        let segs = log.segments();
        assert!(segs.len() > 3, "log {i} rolled");
        // Rolled by size only: an index reopened after the cache closed it
        // holds exactly its entries (a zero tail counted as entries would
        // read as full and roll early).
        for s in &segs[..segs.len() - 1] {
            assert!(s.size > 1024 - 400, "log {i}: early roll {segs:?}");
        }
        assert_eq!(contents(log), model[i], "log {i}");
        assert_bounded(&cache);
    }
    let stats = cache.stats();
    assert!(stats.evicted > 0 && stats.opens > LOGS as u64, "{stats:?}");

    // A read keeps its `.log` open while the cache closes it: the slice
    // still reads after every other log was used.
    let held = logs[0]
        .read(Offset(0), 1 << 16, ReadBound::LogEnd, true)
        .unwrap();
    for log in &logs[1..] {
        contents(log);
    }
    assert_eq!(
        split_batches(&held.read_to_vec().unwrap())[0].base,
        0,
        "a slice read after its handle was evicted"
    );
    drop(held);

    // Truncation and retention through reopened handles.
    for (i, log) in logs.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        let keys: Vec<i64> = model[i].keys().copied().collect();
        let to = keys[keys.len() / 2];
        log.truncate_to(Offset(to)).unwrap();
        model[i].retain(|b, _| *b < to);
        let b = batch(log, i, 99);
        append(log, &b);
        model[i].insert(to, b);
        assert_bounded(&cache);
    }
    for (i, log) in logs.iter().enumerate().filter(|(i, _)| i % 3 == 1) {
        log.update_config(LogConfig {
            retention_bytes: 2048,
            ..small_segments()
        });
        let before = log.log_start_offset();
        log.delete_old_segments().unwrap();
        assert!(
            log.log_start_offset() > before,
            "log {i}: retention deleted nothing"
        );
        log.delete_expired_files().unwrap();
        let start = log.log_start_offset().0;
        model[i].retain(|b, _| *b >= start);
        assert_bounded(&cache);
    }
    for (i, log) in logs.iter().enumerate() {
        assert_eq!(contents(log), model[i], "log {i} after truncate/retention");
    }

    // Clean close and reopen: everything still there.
    for log in &logs {
        log.close().unwrap();
    }
    drop(logs);
    assert_eq!(cache.open(), 0, "closed logs hold no handle");
    logs = names
        .iter()
        .map(|n| {
            open(
                root.path(),
                n,
                small_segments(),
                &clock,
                fs.clone(),
                &cache,
                true,
            )
        })
        .collect();
    for (i, log) in logs.iter().enumerate() {
        assert!(log.recovery_stats().recovered_segments.is_empty());
        assert_eq!(contents(log), model[i], "log {i} after reopen");
        assert_bounded(&cache);
    }
}

#[test]
fn compaction_works_under_a_tiny_handle_limit() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(crate::cleaner_util::T0);
    let cache = HandleCache::new(LIMIT);
    let fs = StdFs::shared();
    let logs: Vec<Arc<Log>> = (0..4)
        .map(|i| {
            open(
                root.path(),
                &format!("c-{i}"),
                compact_config(1024),
                &clock,
                fs.clone(),
                &cache,
                true,
            )
        })
        .collect();
    for round in 0..40 {
        for (i, log) in logs.iter().enumerate() {
            let v = format!("v{round}-{i}");
            crate::cleaner_util::append(
                log,
                crate::cleaner_util::T0,
                &[("a", Some(&v)), (&format!("k{round}"), Some("x"))],
            );
        }
    }
    let mut cleaner = Cleaner::new(&CleanerConfig::default(), clock.clone()).unwrap();
    for log in &logs {
        log.roll().unwrap();
        cleaner.clean(log).unwrap();
        assert_bounded(&cache);
    }
    for (i, log) in logs.iter().enumerate() {
        let (_, recs) = crate::cleaner_util::parse(&read_bytes(log));
        let a: Vec<_> = recs
            .iter()
            .filter(|r| r.key.as_deref() == Some(&b"a"[..]))
            .collect();
        assert_eq!(a.len(), 1, "log {i}: one value of a after cleaning");
        assert_eq!(a[0].value.as_deref(), Some(format!("v39-{i}").as_bytes()));
        assert_eq!(recs.len(), 41, "log {i}");
    }
}

#[test]
fn durable_appends_through_reopened_handles_survive_power_loss() {
    let root = tempfile::tempdir().unwrap();
    let clock = MockClock::new(0);
    let cache = HandleCache::new(LIMIT);
    let sim = Arc::new(SimFs::new(root.path(), 7).unwrap());
    let fs: SharedFs = sim.clone();
    let cfg = LogConfig {
        durable_append: true,
        ..small_segments()
    };
    let logs: Vec<Arc<Log>> = (0..20)
        .map(|i| {
            open(
                root.path(),
                &format!("d-{i}"),
                cfg.clone(),
                &clock,
                fs.clone(),
                &cache,
                false,
            )
        })
        .collect();
    let mut model: Vec<BTreeMap<i64, Vec<u8>>> = vec![BTreeMap::new(); logs.len()];
    for round in 0..12 {
        for (i, log) in logs.iter().enumerate() {
            // A client batch (base 0): the leader assigns the offsets.
            let mut b = strata_log::batch::BatchBuilder::new(Offset(0));
            b.append(
                strata_log::Timestamp(round as i64),
                Some(b"k"),
                Some(format!("d{i}-{round}-{}", "w".repeat(100)).as_bytes()),
                &[],
            );
            let base = log.log_end_offset().0;
            let mut bytes = b.build();
            log.append_as_leader(&mut bytes, strata_log::LeaderEpoch(0))
                .unwrap();
            // Durable mode acknowledged it: it must survive.
            assert!(log.durable_offset() > Offset(base), "log {i}");
            model[i].insert(base, bytes);
            assert_bounded(&cache);
        }
    }
    assert!(cache.stats().evicted > 0);
    drop(logs);
    sim.power_loss().unwrap();
    let after = HandleCache::new(LIMIT);
    for (i, m) in model.iter().enumerate() {
        let log = open(
            root.path(),
            &format!("d-{i}"),
            cfg.clone(),
            &clock,
            StdFs::shared(),
            &after,
            false,
        );
        let got = contents(&log);
        for (base, bytes) in m {
            let g = got
                .get(base)
                .unwrap_or_else(|| panic!("log {i} lost {base}"));
            assert_eq!(g, bytes, "log {i} batch {base}");
        }
    }
}
