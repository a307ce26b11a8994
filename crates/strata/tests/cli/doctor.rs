//! `strata log doctor` answers each symptom of the operations table
//! (docs/operations.md): for every one a partition directory is built in
//! that state and the doctor must name the cause and the setting to change;
//! the same on copies of Kafka-written fixtures; and `--bootstrap-server`
//! takes the topic's configs from a (fake, loopback) broker's
//! DescribeConfigs answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use serde_json::Value;
use strata_log::batch::BatchBuilder;
use strata_log::OffsetCheckpointFile;
use strata_log::{
    CleanupPolicy, DirHealth, LoadParams, Log, LogConfig, MockClock, Offset, Timestamp,
    TopicPartition,
};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const T0: i64 = 1_700_000_000_000;

/// A Strata log at `<root>/<name>` written with a mock clock at `T0`.
fn open(root: &Path, name: &str, cfg: LogConfig) -> (Arc<Log>, Arc<MockClock>) {
    let clock = MockClock::new(T0);
    let log = Log::open(
        &root.join(name),
        cfg,
        LoadParams::default(),
        clock.clone(),
        DirHealth::new(root),
    )
    .unwrap();
    (log, clock)
}

/// Append one batch of records `(timestamp, value)` (key `k<i>`).
fn put(log: &Log, records: &[(i64, Option<&[u8]>)]) {
    let mut b = BatchBuilder::new(log.log_end_offset());
    for (i, (ts, v)) in records.iter().enumerate() {
        let key = format!("k{}", (log.log_end_offset().0 + i as i64) % 7);
        b.append(Timestamp(*ts), Some(key.as_bytes()), *v, &[]);
    }
    log.append_as_follower(&b.build()).unwrap();
}

fn put_ts(log: &Log, ts: i64) {
    put(log, &[(ts, Some(&[b'v'; 200][..]))]);
}

fn doctor(path: &Path, now: i64, extra: &[&str]) -> Value {
    let now = now.to_string();
    let mut args = vec![
        "log",
        "doctor",
        "--json",
        "--now-ms",
        now.as_str(),
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"))
}

fn findings(report: &Value) -> Vec<Value> {
    report["partitions"][0]["findings"]
        .as_array()
        .unwrap()
        .clone()
}

/// The finding with `cause`, asserting its symptom and that it names `setting`.
fn expect(report: &Value, symptom: &str, cause: &str, setting: &str) -> Value {
    let all = findings(report);
    let f = all
        .iter()
        .find(|f| f["cause"] == cause)
        .unwrap_or_else(|| {
            panic!(
                "no {cause} in {}",
                serde_json::to_string_pretty(&all).unwrap()
            )
        })
        .clone();
    assert_eq!(f["symptom"], symptom, "{f}");
    let settings: Vec<&str> = f["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(
        settings.contains(&setting),
        "{cause} should name {setting}: {f}"
    );
    assert!(!f["message"].as_str().unwrap().is_empty());
    f
}

fn absent(report: &Value, cause: &str) {
    assert!(
        findings(report).iter().all(|f| f["cause"] != cause),
        "unexpected {cause}: {report}"
    );
}

fn write_checkpoint(log_dir: &Path, name: &str, tp: &TopicPartition, offset: i64) {
    let mut m = BTreeMap::new();
    m.insert(tp.clone(), Offset(offset));
    OffsetCheckpointFile::in_dir(&strata_log::fs::StdFs::shared(), log_dir, name)
        .write(&m)
        .unwrap();
}

fn delete_cfg(retention_ms: i64) -> LogConfig {
    LogConfig {
        retention_ms,
        ..LogConfig::default()
    }
}

// ---- retention does not fire ----

#[test]
fn active_segment_holding_all_data_with_a_long_segment_ms() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "low-0", delete_cfg(HOUR));
    for h in 0..5 {
        put_ts(&log, T0 + h * HOUR);
    }
    log.close().unwrap();
    let now = T0 + 4 * HOUR + 30 * 60_000;
    let r = doctor(
        &tmp.path().join("low-0"),
        now,
        &["--topic-config", "retention.ms=3600000"],
    );
    let f = expect(
        &r,
        "retention_does_not_fire",
        "active_segment_holds_all_data",
        "segment.ms",
    );
    // The oldest record is 4.5 h old against a 1 h retention.
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["numbers"]["expires_at_ms"], T0 + 5 * HOUR + 1);
    assert_eq!(f["numbers"]["roll_at_ms"], T0 + 7 * DAY);
    absent(&r, "retention_due_now");
}

#[test]
fn a_future_timestamp_holds_retention_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "fut-0", delete_cfg(HOUR));
    put_ts(&log, T0 + 30 * DAY);
    log.roll().unwrap();
    put_ts(&log, T0 - 10 * DAY);
    log.close().unwrap();
    let r = doctor(
        &tmp.path().join("fut-0"),
        T0,
        &["--topic-config", "retention.ms=3600000"],
    );
    let f = expect(
        &r,
        "retention_does_not_fire",
        "future_timestamp",
        "message.timestamp.after.max.ms",
    );
    assert_eq!(f["numbers"]["largest_timestamp"], T0 + 30 * DAY);
}

#[test]
fn retention_plus_segment_ms_overshoot() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "ov-0", delete_cfg(DAY));
    for h in 0..20 {
        put_ts(&log, T0 + h * HOUR);
    }
    log.roll().unwrap();
    put_ts(&log, T0 + 30 * HOUR);
    log.close().unwrap();
    // 30 h after the first record: it is past retention.ms (24 h) but its
    // segment's newest record (19 h) is not.
    let now = T0 + 30 * HOUR;
    let r = doctor(
        &tmp.path().join("ov-0"),
        now,
        &["--topic-config", "retention.ms=86400000"],
    );
    let f = expect(
        &r,
        "retention_does_not_fire",
        "retention_plus_segment_overshoot",
        "segment.ms",
    );
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["numbers"]["span_ms"], 19 * HOUR);
    assert_eq!(
        f["numbers"]["oldest_record_deleted_at_ms"],
        T0 + 43 * HOUR + 1
    );
    let f = expect(
        &r,
        "retention_does_not_fire",
        "oldest_segment_expiry",
        "retention.ms",
    );
    assert_eq!(f["numbers"]["expires_at_ms"], T0 + 43 * HOUR + 1);
}

#[test]
fn a_high_watermark_below_the_expired_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "hw-0", delete_cfg(HOUR));
    put_ts(&log, T0);
    put_ts(&log, T0);
    log.roll().unwrap();
    put_ts(&log, T0);
    log.close().unwrap();
    write_checkpoint(
        tmp.path(),
        "replication-offset-checkpoint",
        &TopicPartition::new("hw", 0),
        1,
    );
    let r = doctor(
        &tmp.path().join("hw-0"),
        T0 + DAY,
        &["--topic-config", "retention.ms=3600000"],
    );
    let f = expect(
        &r,
        "retention_does_not_fire",
        "high_watermark_below",
        "min.insync.replicas",
    );
    assert_eq!(f["numbers"]["high_watermark"], 1);
    assert_eq!(f["numbers"]["segment_upper_bound"], 2);
    assert_eq!(r["partitions"][0]["high_watermark_assumed"], false);
}

#[test]
fn due_now_unlimited_and_below_retention_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "due-0", delete_cfg(HOUR));
    put_ts(&log, T0);
    log.roll().unwrap();
    put_ts(&log, T0 + DAY);
    log.close().unwrap();
    let dir = tmp.path().join("due-0");
    let r = doctor(&dir, T0 + DAY, &["--topic-config", "retention.ms=3600000"]);
    let f = expect(
        &r,
        "retention_does_not_fire",
        "retention_due_now",
        "log.retention.check.interval.ms",
    );
    assert_eq!(f["numbers"]["segments"], 1);
    assert_eq!(f["numbers"]["new_log_start_offset"], 1);
    let r = doctor(
        &dir,
        T0 + DAY,
        &[
            "--topic-config",
            "retention.ms=-1",
            "--topic-config",
            "retention.bytes=-1",
        ],
    );
    expect(
        &r,
        "retention_does_not_fire",
        "retention_unlimited",
        "retention.ms",
    );
    // Broker defaults from a server.properties file are used too.
    let props = tmp.path().join("server.properties");
    std::fs::write(
        &props,
        "# test\nlog.retention.hours=48\nlog.retention.bytes=100000\n",
    )
    .unwrap();
    let r = doctor(&dir, T0 + DAY, &["--config", props.to_str().unwrap()]);
    let f = expect(
        &r,
        "retention_does_not_fire",
        "below_retention_bytes",
        "retention.bytes",
    );
    assert!(f["numbers"]["bytes_until_deletion"].as_u64().unwrap() > 0);
    assert_eq!(
        r["effective_config"]["retention.ms"],
        (48 * HOUR).to_string()
    );
}

// ---- compact topic not shrinking ----

fn compact_cfg() -> LogConfig {
    LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    }
}

const COMPACT: [&str; 2] = ["--topic-config", "cleanup.policy=compact"];

#[test]
fn all_dirty_data_in_the_active_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "c1-0", compact_cfg());
    for i in 0..5 {
        put_ts(&log, T0 + i);
    }
    log.close().unwrap();
    let r = doctor(&tmp.path().join("c1-0"), T0 + HOUR, &COMPACT);
    let f = expect(
        &r,
        "compact_topic_not_shrinking",
        "dirty_data_only_in_active_segment",
        "segment.ms",
    );
    assert!(f["numbers"]["active_dirty_bytes"].as_u64().unwrap() > 1000);
    expect(
        &r,
        "retention_does_not_fire",
        "compact_only_policy",
        "cleanup.policy",
    );
}

fn four_segments(root: &Path, name: &str) -> Arc<Log> {
    let (log, _) = open(root, name, compact_cfg());
    for s in 0..4 {
        put_ts(&log, T0 + s);
        put_ts(&log, T0 + s);
        log.roll().unwrap();
    }
    put_ts(&log, T0 + 10);
    log
}

#[test]
fn dirty_ratio_below_min_cleanable() {
    let tmp = tempfile::tempdir().unwrap();
    let log = four_segments(tmp.path(), "c2-0");
    log.close().unwrap();
    // Cleaned up to offset 6: three clean segments, one dirty → ratio 0.25.
    write_checkpoint(
        tmp.path(),
        "cleaner-offset-checkpoint",
        &TopicPartition::new("c2", 0),
        6,
    );
    let r = doctor(&tmp.path().join("c2-0"), T0 + HOUR, &COMPACT);
    let f = expect(
        &r,
        "compact_topic_not_shrinking",
        "dirty_ratio_below_minimum",
        "min.cleanable.dirty.ratio",
    );
    assert_eq!(f["numbers"]["dirty_ratio"], 0.25);
    // With a lower threshold the same log is due.
    let r = doctor(
        &tmp.path().join("c2-0"),
        T0 + HOUR,
        &[
            "--topic-config",
            "cleanup.policy=compact",
            "--topic-config",
            "min.cleanable.dirty.ratio=0.2",
        ],
    );
    expect(
        &r,
        "compact_topic_not_shrinking",
        "compaction_due_now",
        "log.cleaner.enable",
    );
    absent(&r, "dirty_ratio_below_minimum");
}

#[test]
fn min_compaction_lag_holds_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let log = four_segments(tmp.path(), "c3-0");
    log.close().unwrap();
    let r = doctor(
        &tmp.path().join("c3-0"),
        T0 + HOUR,
        &[
            "--topic-config",
            "cleanup.policy=compact",
            "--topic-config",
            "min.compaction.lag.ms=86400000",
        ],
    );
    let f = expect(
        &r,
        "compact_topic_not_shrinking",
        "min_compaction_lag_holds_segments",
        "min.compaction.lag.ms",
    );
    assert_eq!(f["numbers"]["first_uncleanable_offset"], 0);
}

// ---- disk doubles during compaction ----

#[test]
fn compaction_headroom_counts_every_rewritten_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let log = four_segments(tmp.path(), "c4-0");
    let rewritten: u64 = log.segments()[..4].iter().map(|s| s.size).sum();
    log.close().unwrap();
    let r = doctor(&tmp.path().join("c4-0"), T0 + HOUR, &COMPACT);
    let f = expect(
        &r,
        "disk_doubles_during_compaction",
        "compaction_headroom",
        "file.delete.delay.ms",
    );
    assert_eq!(f["numbers"]["peak_extra_bytes"], rewritten);
    assert!(f["numbers"]["free_bytes"].as_u64().is_some());
}

// ---- tombstones linger / consumer cache keeps deleted keys ----

#[test]
fn uncleaned_tombstones_and_a_short_delete_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "tomb-0", compact_cfg());
    put(&log, &[(T0, Some(b"a")), (T0, None), (T0, None)]);
    put(&log, &[(T0, None)]);
    log.close().unwrap();
    let dir = tmp.path().join("tomb-0");
    let r = doctor(&dir, T0 + HOUR, &COMPACT);
    let f = expect(
        &r,
        "tombstones_linger",
        "tombstones_not_yet_cleaned",
        "delete.retention.ms",
    );
    assert_eq!(f["numbers"]["tombstones"], 3);
    let f = expect(
        &r,
        "consumer_cache_keeps_deleted_keys",
        "consumers_must_catch_up_within_delete_retention",
        "delete.retention.ms",
    );
    assert_eq!(f["severity"], "info");
    let r = doctor(
        &dir,
        T0 + HOUR,
        &[
            "--topic-config",
            "cleanup.policy=compact",
            "--topic-config",
            "delete.retention.ms=60000",
        ],
    );
    let f = expect(
        &r,
        "consumer_cache_keeps_deleted_keys",
        "consumers_must_catch_up_within_delete_retention",
        "delete.retention.ms",
    );
    assert_eq!(f["severity"], "warning");
}

fn copy_fixture(tmp: &Path, fixture: &str, name: &str) -> PathBuf {
    let (_, file) = manifest(&fixtures().join(fixture));
    let dir = tmp.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&file, dir.join(file.file_name().unwrap())).unwrap();
    dir
}

#[test]
fn kafka_cleaned_tombstones_wait_for_their_horizon() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture(tmp.path(), "delete-horizon", "dh-0");
    let (m, _) = manifest(&fixtures().join("delete-horizon"));
    let horizon = m["batches"][0]["delete_horizon_ms"].as_i64().unwrap();
    let r = doctor(&dir, horizon - HOUR, &COMPACT);
    let f = expect(
        &r,
        "tombstones_linger",
        "tombstones_await_delete_horizon",
        "delete.retention.ms",
    );
    assert_eq!(f["numbers"]["latest_horizon_ms"], horizon);
    assert_eq!(f["numbers"]["tombstones"], 1);
    // After the horizon: they wait for the next cleaning instead.
    let r = doctor(&dir, horizon + 1, &COMPACT);
    let f = expect(
        &r,
        "tombstones_linger",
        "tombstones_await_delete_horizon",
        "min.cleanable.dirty.ratio",
    );
    assert!(f.get("numbers").unwrap().get("latest_horizon_ms").is_none());
}

// ---- segments roll too small ----

#[test]
fn segments_rolled_because_the_time_index_filled_first() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_index_bytes: 120,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(tmp.path(), "ti-0", cfg);
    for i in 0..40 {
        put_ts(&log, T0 + i);
    }
    assert!(log.num_segments() >= 3);
    log.close().unwrap();
    let r = doctor(
        &tmp.path().join("ti-0"),
        T0 + HOUR,
        &[
            "--topic-config",
            "segment.index.bytes=120",
            "--topic-config",
            "index.interval.bytes=0",
        ],
    );
    let f = expect(
        &r,
        "segments_roll_too_small",
        "time_index_filled_first",
        "segment.index.bytes",
    );
    assert_eq!(f["numbers"]["max_entries"], 10);
    let f = expect(&r, "index_fill", "index_fill", "index.interval.bytes");
    assert_eq!(f["severity"], "warning");
}

#[test]
fn segments_rolled_by_segment_ms_on_a_slow_topic() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_ms: HOUR,
        ..LogConfig::default()
    };
    let (log, clock) = open(tmp.path(), "sm-0", cfg);
    for i in 0..12 {
        clock.set(T0 + i * 10 * 60_000);
        put_ts(&log, T0 + i * 10 * 60_000);
    }
    assert!(log.num_segments() >= 2);
    log.close().unwrap();
    let r = doctor(
        &tmp.path().join("sm-0"),
        T0 + 2 * HOUR,
        &["--topic-config", "segment.ms=3600000"],
    );
    expect(
        &r,
        "segments_roll_too_small",
        "rolled_by_segment_ms",
        "segment.ms",
    );
    let f = expect(&r, "next_roll", "next_roll", "segment.bytes");
    assert!(f["numbers"]["roll_at_ms"].as_i64().unwrap() > T0);
}

// ---- broker restart very slow ----

#[test]
fn recovery_estimate_from_bytes_after_the_recovery_point() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "rec-0", LogConfig::default());
    for i in 0..50 {
        put(&log, &[(T0 + i, Some(&[b'v'; 2000][..]))]);
    }
    log.roll().unwrap();
    put_ts(&log, T0 + 60);
    let bytes = log.size_in_bytes();
    let active = log.segments()[1].size;
    drop(log);
    let tp = TopicPartition::new("rec", 0);
    let dir = tmp.path().join("rec-0");
    // No checkpoint at all: everything is recovered; at 1 KiB/s > 60 s.
    let r = doctor(&dir, T0, &["--read-rate-kib", "1"]);
    let f = expect(
        &r,
        "broker_restart_very_slow",
        "recovery_after_unclean_shutdown",
        "num.recovery.threads.per.data.dir",
    );
    assert_eq!(f["numbers"]["recovery_bytes"], bytes);
    assert_eq!(f["severity"], "warning");
    assert_eq!(
        f["numbers"]["estimated_recovery_ms"],
        (bytes * 1000 / 1024) as i64
    );
    // A recovery point at the active segment leaves only it.
    write_checkpoint(tmp.path(), "recovery-point-offset-checkpoint", &tp, 50);
    let r = doctor(&dir, T0, &["--read-rate-kib", "1"]);
    let f = expect(
        &r,
        "broker_restart_very_slow",
        "recovery_after_unclean_shutdown",
        "segment.bytes",
    );
    assert_eq!(f["numbers"]["recovery_bytes"], active);
    // A clean shutdown marker: no recovery next time.
    std::fs::write(tmp.path().join(".kafka_cleanshutdown"), b"").unwrap();
    let r = doctor(&dir, T0, &["--read-rate-kib", "1"]);
    let f = expect(
        &r,
        "broker_restart_very_slow",
        "recovery_after_unclean_shutdown",
        "flush.ms",
    );
    assert_eq!(f["severity"], "info");
}

// ---- Kafka-written fixtures, log dirs, text output ----

#[test]
fn kafka_fixtures_in_a_log_dir() {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture(tmp.path(), "data-none", "orders-0");
    copy_fixture(tmp.path(), "data-zstd", "orders-1");
    std::fs::write(tmp.path().join("meta.properties"), "version=1\n").unwrap();
    let (m, _) = manifest(&fixtures().join("data-none"));
    let nulls = m["batches"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| b["records"].as_array().unwrap())
        .filter(|r| r["value_hex"].is_null())
        .count();
    let last_ts = m["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["max_timestamp"].as_i64().unwrap())
        .max()
        .unwrap();
    // Delete policy, 8 days after the data: retention would delete it all.
    let r = doctor(tmp.path(), last_ts + 8 * DAY, &[]);
    assert_eq!(r["partitions"].as_array().unwrap().len(), 2);
    let f = expect(
        &r,
        "retention_does_not_fire",
        "retention_due_now",
        "retention.ms",
    );
    assert_eq!(f["numbers"]["new_log_start_offset"], 300);
    // Compact policy: every tombstone Kafka wrote is counted, even compressed.
    let r = doctor(tmp.path(), last_ts + HOUR, &COMPACT);
    for p in r["partitions"].as_array().unwrap() {
        let f = p["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["cause"] == "tombstones_not_yet_cleaned")
            .unwrap()
            .clone();
        assert_eq!(f["numbers"]["tombstones"], nulls, "{}", p["dir"]);
    }
    // Text output names the cause and the settings.
    let (code, out, err) = run([
        "log",
        "doctor",
        "--now-ms",
        &(last_ts + HOUR).to_string(),
        "--topic-config",
        "cleanup.policy=compact",
        tmp.path().join("orders-0").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dirty_data_only_in_active_segment"), "{out}");
    assert!(out.contains("change: segment.ms"), "{out}");
    // The fixtures were copied, never touched.
    assert!(!fixtures()
        .join("data-none")
        .join("00000000000000000000.index")
        .exists());
}

#[test]
fn bad_arguments_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = run([
        "log",
        "doctor",
        "--topic-config",
        "retention.ms",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("key=value"), "{err}");
    let (code, _, err) = run([
        "log",
        "doctor",
        "--topic-config",
        "nope=1",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
}

// ---- --bootstrap-server ----

mod fake_broker {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult,
    };
    use kafka_protocol::messages::{
        ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, RequestHeader, ResponseHeader,
    };
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    /// Answer one DescribeConfigs on 127.0.0.1 with `configs` for the topic.
    pub fn serve_once(
        configs: Vec<(&'static str, &'static str)>,
    ) -> (String, std::thread::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut size = [0u8; 4];
            s.read_exact(&mut size).unwrap();
            let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
            s.read_exact(&mut body).unwrap();
            let mut buf = Bytes::from(body);
            let api = ApiKey::DescribeConfigs;
            let h = RequestHeader::decode(&mut buf, api.request_header_version(4)).unwrap();
            let v = h.request_api_version;
            let req = DescribeConfigsRequest::decode(&mut buf, v).unwrap();
            let topic = req.resources[0].resource_name.to_string();
            let mut t = DescribeConfigsResult::default();
            t.resource_type = 2;
            t.resource_name = req.resources[0].resource_name.clone();
            for (n, val) in &configs {
                let mut c = DescribeConfigsResourceResult::default();
                c.name = StrBytes::from_static_str(n);
                c.value = Some(StrBytes::from_static_str(val));
                t.configs.push(c);
            }
            let mut resp = DescribeConfigsResponse::default();
            resp.results.push(t);
            let mut out = BytesMut::new();
            let mut rh = ResponseHeader::default();
            rh.correlation_id = h.correlation_id;
            rh.encode(&mut out, api.response_header_version(v)).unwrap();
            resp.encode(&mut out, v).unwrap();
            s.write_all(&(out.len() as i32).to_be_bytes()).unwrap();
            s.write_all(&out).unwrap();
            topic
        });
        (addr, h)
    }
}

#[test]
fn bootstrap_server_configs_come_from_describe_configs() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = open(tmp.path(), "remote-0", LogConfig::default());
    put_ts(&log, T0);
    log.roll().unwrap();
    put_ts(&log, T0 + DAY);
    log.close().unwrap();
    let (addr, server) = fake_broker::serve_once(vec![
        ("retention.ms", "3600000"),
        ("cleanup.policy", "delete"),
        ("unknown.broker.thing", "1"),
    ]);
    let r = doctor(
        &tmp.path().join("remote-0"),
        T0 + DAY,
        &["--bootstrap-server", &addr, "--topic", "remote"],
    );
    assert_eq!(server.join().unwrap(), "remote");
    assert_eq!(r["config_source"]["broker"]["bootstrap_server"], addr);
    assert_eq!(r["effective_config"]["retention.ms"], "3600000");
    expect(
        &r,
        "retention_does_not_fire",
        "retention_due_now",
        "retention.ms",
    );
    // No broker listening: exit 2 with the address in the error.
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (code, _, err) = run([
        "log",
        "doctor",
        "--bootstrap-server",
        &gone,
        "--topic",
        "remote",
        tmp.path().join("remote-0").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains(&gone), "{err}");
}

#[test]
fn kafka_fixture_partition_answers_each_applicable_symptom() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_fixture(tmp.path(), "data-lz4", "events-0");
    let (m, _) = manifest(&fixtures().join("data-lz4"));
    let size = m["size_in_bytes"].as_u64().unwrap();
    let batches = m["batches"].as_array().unwrap();
    let first_ts = batches[0]["max_timestamp"].as_i64().unwrap();
    let last_ts = batches
        .iter()
        .map(|b| b["max_timestamp"].as_i64().unwrap())
        .max()
        .unwrap();
    // A broker whose clock is a day behind the producer's: the data is "in
    // the future" and cannot expire before last_ts + retention.ms.
    let r = doctor(&dir, last_ts - DAY, &[]);
    let f = expect(
        &r,
        "retention_does_not_fire",
        "future_timestamp",
        "message.timestamp.type",
    );
    assert_eq!(f["numbers"]["largest_timestamp"], last_ts);
    assert_eq!(f["numbers"]["expires_at_ms"], last_ts + 7 * DAY + 1);
    // An hour after the data: the one (active) segment holds everything.
    let r = doctor(&dir, last_ts + HOUR, &[]);
    let f = expect(
        &r,
        "retention_does_not_fire",
        "active_segment_holds_all_data",
        "segment.ms",
    );
    assert_eq!(f["numbers"]["roll_at_ms"], first_ts + 7 * DAY);
    let f = expect(&r, "next_roll", "next_roll", "segment.bytes");
    assert_eq!(f["numbers"]["bytes_until_roll"], (1u64 << 30) - size);
    // Without checkpoints, a restart recovers the whole Kafka-written segment.
    let f = expect(
        &r,
        "broker_restart_very_slow",
        "recovery_after_unclean_shutdown",
        "num.recovery.threads.per.data.dir",
    );
    assert_eq!(f["numbers"]["recovery_bytes"], size);
    assert_eq!(r["partitions"][0]["log_end_offset"], 300);
    // Compacted: the tombstones (lz4-compressed) and the consumer rule.
    let r = doctor(
        &dir,
        last_ts + HOUR,
        &[
            "--topic-config",
            "cleanup.policy=compact",
            "--topic-config",
            "delete.retention.ms=1000",
        ],
    );
    let f = expect(
        &r,
        "consumer_cache_keeps_deleted_keys",
        "consumers_must_catch_up_within_delete_retention",
        "delete.retention.ms",
    );
    assert_eq!(f["severity"], "warning");
    expect(
        &r,
        "compact_topic_not_shrinking",
        "dirty_data_only_in_active_segment",
        "segment.bytes",
    );
}

#[test]
fn segments_rolled_because_the_offset_index_filled_first() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_index_bytes: 80,
        index_interval_bytes: 0,
        ..LogConfig::default()
    };
    let (log, _) = open(tmp.path(), "oi-0", cfg);
    // One timestamp for every batch: the time index keeps one entry while
    // the offset index takes one per append.
    for _ in 0..30 {
        put_ts(&log, T0);
    }
    assert!(log.num_segments() >= 3);
    log.close().unwrap();
    let r = doctor(
        &tmp.path().join("oi-0"),
        T0 + HOUR,
        &[
            "--topic-config",
            "segment.index.bytes=80",
            "--topic-config",
            "index.interval.bytes=0",
        ],
    );
    let f = expect(
        &r,
        "segments_roll_too_small",
        "offset_index_filled_first",
        "index.interval.bytes",
    );
    assert_eq!(f["numbers"]["max_entries"], 10);
    absent(&r, "time_index_filled_first");
}

#[test]
fn thousands_of_segments_slow_the_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("many-0");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..1_001i64 {
        std::fs::write(dir.join(format!("{i:020}.log")), b"").unwrap();
    }
    let r = doctor(&dir, T0, &[]);
    let f = expect(
        &r,
        "broker_restart_very_slow",
        "many_segments",
        "segment.bytes",
    );
    assert_eq!(f["numbers"]["segments"], 1001);
    assert_eq!(r["partitions"][0]["segments"], 1001);
}

// ---- offline: per-topic configs from the topic store ----

/// `strata-topics.json` as the broker writes it: one topic with `configs`.
fn write_topic_store(log_dir: &Path, topic: &str, configs: &[(&str, &str)]) {
    let configs: serde_json::Map<String, Value> = configs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let doc = serde_json::json!({
        "version": 1,
        "cluster_id": "abc",
        "next_producer_id": 0,
        "topics": { topic: {
            "id": "0fedcba9-8765-4321-0fed-cba987654321",
            "partitions": 1, "leader_epoch": 0, "configs": configs } }
    });
    std::fs::write(log_dir.join("strata-topics.json"), doc.to_string()).unwrap();
}

#[test]
fn offline_mode_reads_the_topics_configs_from_the_topic_store() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = LogConfig {
        segment_bytes: 65_536,
        retention_ms: HOUR,
        ..LogConfig::default()
    };
    let (log, _) = open(tmp.path(), "small-0", cfg);
    for i in 0..400 {
        put_ts(&log, T0 + i);
    }
    assert!(log.num_segments() >= 2);
    let active = log.segments().last().unwrap().size;
    log.close().unwrap();
    write_topic_store(
        tmp.path(),
        "small",
        &[("segment.bytes", "65536"), ("retention.ms", "3600000")],
    );
    let dir = tmp.path().join("small-0");
    // The broker default would be 1 GiB and 7 days; the topic's own say 64 KiB and 1 h.
    for target in [dir.as_path(), tmp.path()] {
        let r = doctor(target, T0 + 2 * HOUR, &[]);
        let f = expect(&r, "next_roll", "next_roll", "segment.bytes");
        assert_eq!(f["numbers"]["bytes_until_roll"], 65_536 - active, "{f}");
        let f = expect(
            &r,
            "retention_does_not_fire",
            "retention_due_now",
            "log.retention.check.interval.ms",
        );
        assert!(f["numbers"]["segments"].as_u64().unwrap() >= 1, "{f}");
        let p = &r["partitions"][0];
        assert_eq!(p["effective_config"]["segment.bytes"], "65536", "{p}");
        assert_eq!(p["topic_store_configs"]["retention.ms"], "3600000", "{p}");
    }
    // `--topic-config` still wins over the stored value.
    let r = doctor(
        &dir,
        T0 + 2 * HOUR,
        &["--topic-config", "segment.bytes=131072"],
    );
    let f = expect(&r, "next_roll", "next_roll", "segment.bytes");
    assert_eq!(f["numbers"]["bytes_until_roll"], 131_072 - active, "{f}");
    // Another topic's configs are not applied.
    write_topic_store(tmp.path(), "other", &[("segment.bytes", "65536")]);
    let r = doctor(&dir, T0 + 2 * HOUR, &[]);
    let f = expect(&r, "next_roll", "next_roll", "segment.bytes");
    assert_eq!(
        f["numbers"]["bytes_until_roll"],
        (1u64 << 30) - active,
        "{f}"
    );
    absent(&r, "retention_due_now");
}

// ---- damage that `strata log verify` finds ----

fn damage(report: &Value) -> Vec<Value> {
    findings(report)
        .into_iter()
        .filter(|f| f["cause"] == "verify_found_damage")
        .collect()
}

#[test]
fn corruption_found_by_verify_is_a_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str| {
        let dir = write_strata_partition(tmp.path(), name, 30, 5, 300, 1 << 20);
        let log = files_with(&dir, ".log").remove(0);
        let bytes = std::fs::read(&log).unwrap();
        (dir, log, bytes)
    };
    // Undamaged: no such finding.
    let (dir, _, _) = write("fine");
    assert!(damage(&doctor(&dir, T0, &[])).is_empty());

    // A flipped byte inside a batch: CRC mismatch.
    let (dir, log, mut bytes) = write("crc");
    let second = 12 + i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    bytes[second + 70] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();
    let d = damage(&doctor(&dir, T0, &[]));
    let crc = d
        .iter()
        .find(|f| f["numbers"]["problem"] == "corrupt_batch")
        .unwrap_or_else(|| panic!("{d:?}"));
    assert_eq!(crc["severity"], "error");
    assert_eq!(crc["symptom"], "data_damaged");
    assert_eq!(crc["numbers"]["position"], second as u64);
    assert_eq!(crc["numbers"]["file"], log.to_str().unwrap());
    assert!(
        crc["message"].as_str().unwrap().contains("checksum"),
        "{crc}"
    );

    // A torn tail.
    let (dir, log, bytes) = write("torn");
    std::fs::write(&log, &bytes[..bytes.len() - 10]).unwrap();
    let d = damage(&doctor(&dir, T0, &[]));
    assert!(
        d.iter()
            .any(|f| f["numbers"]["problem"] == "truncated_batch"),
        "{d:?}"
    );

    // An index entry pointing inside a batch.
    let (dir, _, _) = write("index");
    let index = files_with(&dir, ".index").remove(0);
    let mut ix = std::fs::read(&index).unwrap();
    let pos = i32::from_be_bytes(ix[12..16].try_into().unwrap());
    ix[12..16].copy_from_slice(&(pos + 7).to_be_bytes());
    std::fs::write(&index, &ix).unwrap();
    let d = damage(&doctor(&dir, T0, &[]));
    assert!(
        d.iter().any(
            |f| f["numbers"]["problem"] == "index_position_not_batch_start"
                && f["numbers"]["file"] == index.to_str().unwrap()
        ),
        "{d:?}"
    );
    // The text output says it too.
    let (code, out, err) = run(["log", "doctor", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("[ERROR] data_damaged / verify_found_damage:"),
        "{out}"
    );
}
