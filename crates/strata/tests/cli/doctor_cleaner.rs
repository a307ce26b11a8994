//! `strata log doctor` names the 9th symptom, "compaction uses a lot of
//! CPU", on a log dir whose `cleaner-statistics.json` comes from really
//! cleaning a compacted partition (strata_log's cleaner on a log with tiny
//! segments, a small dedupe buffer and `min.cleanable.dirty.ratio=0.01`),
//! and `strata log verify` does not mind that file.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use serde_json::Value;
use strata_log::batch::BatchBuilder;
use strata_log::cleaner::{CleanerConfig, LogCleaner};
use strata_log::{CleanupPolicy, DirHealth, LoadParams, Log, LogConfig, SystemClock, Timestamp};

fn put(log: &Log, key: &str) {
    let mut b = BatchBuilder::new(log.log_end_offset());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    b.append(
        Timestamp(now),
        Some(key.as_bytes()),
        Some(&[b'v'; 100][..]),
        &[],
    );
    log.append_as_follower(&b.build()).unwrap();
}

/// Seal the dirty records (the active segment is never cleaned) and make
/// them readable to the cleaner.
fn seal(log: &Log) {
    log.roll().unwrap();
    put(log, "tail");
    log.update_high_watermark(log.log_end_offset());
}

fn clean_once(c: &LogCleaner, log: &Arc<Log>) {
    let mut w = c.worker().unwrap();
    c.clean_filthiest(&mut w, std::slice::from_ref(log))
        .expect("eligible")
        .unwrap();
}

/// `<root>/hot-0`: 300 keys written twice in 4 KiB segments, cleaned with a
/// map of 180 keys, then three cleanings of 10 updates each.
fn build(root: &Path) {
    let cfg = LogConfig {
        segment_bytes: 4096,
        cleanup_policy: CleanupPolicy::COMPACT,
        min_cleanable_dirty_ratio: 0.01,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    let clock = SystemClock::shared();
    let log = Log::open(
        &root.join("hot-0"),
        cfg,
        LoadParams::default(),
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap();
    for i in 0..600 {
        put(&log, &format!("key-{}", i % 300));
    }
    seal(&log);
    let c = LogCleaner::new(
        CleanerConfig {
            // 200 slots: 180 keys per pass at the 0.9 load factor.
            dedupe_buffer_size: 200 * 24,
            io_buffer_size: 8192,
            ..CleanerConfig::default()
        },
        clock,
    );
    clean_once(&c, &log);
    for round in 0..3 {
        for i in 0..10 {
            put(&log, &format!("key-{}", round * 10 + i));
        }
        seal(&log);
        clean_once(&c, &log);
    }
    assert_eq!(c.history().len(), 4);
}

fn cause<'a>(findings: &'a [Value], cause: &str) -> Option<&'a Value> {
    findings.iter().find(|f| f["cause"] == cause)
}

#[test]
fn the_doctor_names_why_compaction_costs_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    let stats = tmp.path().join("cleaner-statistics.json");
    assert!(stats.is_file());

    let (code, out, err) = run([
        "log",
        "doctor",
        "--json",
        "--topic-config",
        "cleanup.policy=compact",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let findings = report["partitions"][0]["findings"]
        .as_array()
        .unwrap()
        .clone();
    let ours: Vec<&Value> = findings
        .iter()
        .filter(|f| f["symptom"] == "compaction_uses_much_cpu")
        .collect();
    assert!(!ours.is_empty(), "{out}");

    let share = cause(&findings, "cleaner_cpu_share").expect("the figures");
    assert_eq!(share["numbers"]["cleanings"], 4);
    assert_eq!(share["numbers"]["partition_cleanings"], 4);

    let low = cause(&findings, "dirty_ratio_set_too_low").expect("dirty ratio");
    assert_eq!(low["settings"][0], "min.cleanable.dirty.ratio");
    assert_eq!(low["numbers"]["low_ratio_cleanings"], 3);
    assert!(
        low["numbers"]["recopy_percent"].as_f64().unwrap() > 80.0,
        "{low}"
    );
    assert_eq!(low["numbers"]["min_cleanable_dirty_ratio"], 0.01);

    let small = cause(&findings, "segments_too_small").expect("segments");
    assert_eq!(small["settings"][0], "segment.bytes");
    assert_eq!(small["numbers"]["segment_bytes"], 4096);

    let keys = cause(&findings, "huge_key_space").expect("key space");
    assert_eq!(keys["settings"][0], "log.cleaner.dedupe.buffer.size");
    assert!(
        keys["numbers"]["max_passes"].as_u64().unwrap() >= 2,
        "{keys}"
    );

    // The text output names them too.
    let (code, text, _) = run([
        "log",
        "doctor",
        "--topic-config",
        "cleanup.policy=compact",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(
        text.contains("compaction_uses_much_cpu / dirty_ratio_set_too_low"),
        "{text}"
    );

    // verify checks the partitions and ignores the statistics file.
    let (code, out, err) = run(["log", "verify", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn without_statistics_the_symptom_is_not_named_and_a_corrupt_file_is_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    build(tmp.path());
    std::fs::write(tmp.path().join("cleaner-statistics.json"), "{broken").unwrap();
    let (code, out, err) = run(["log", "doctor", "--json", tmp.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("cleaner statistics"), "{err}");
    assert!(!out.contains("compaction_uses_much_cpu"), "{out}");
}
