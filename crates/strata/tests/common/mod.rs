//! Shared helpers for the `strata` binary's integration tests: running the
//! built binary, locating the Kafka-written fixtures and their manifests, and
//! writing partition directories with Strata's own log engine.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::Value;
use strata_log::batch::BatchBuilder;
use strata_log::{
    DirHealth, LeaderEpoch, LoadParams, Log, LogConfig, MockClock, Offset, Timestamp,
};

/// The Kafka-written fixtures (`STRATA_FIXTURES` overrides the location).
pub fn fixtures() -> PathBuf {
    match std::env::var_os("STRATA_FIXTURES") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/kafka-records"
        )),
    }
}

/// Every fixture folder, sorted.
pub fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 9,
        "expected the 9 fixture folders, found {dirs:?}"
    );
    dirs
}

/// A fixture's manifest and its segment path.
pub fn manifest(dir: &Path) -> (Value, PathBuf) {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
    let m: Value = serde_json::from_str(&text).expect("manifest json");
    let file = dir.join(m["file"].as_str().expect("file"));
    (m, file)
}

/// Run the binary; returns (exit code, stdout, stderr).
pub fn run<I, S>(args: I) -> (i32, String, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out: Output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run strata");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn hex_bytes(v: &Value) -> Option<Vec<u8>> {
    v.as_str().map(|s| hex::decode(s).expect("hex"))
}

/// `kafka-dump-log`'s batch line for a manifest batch.
pub fn expected_batch_line(b: &Value) -> String {
    let horizon = b["delete_horizon_ms"].as_i64().unwrap();
    let horizon = if horizon >= 0 {
        format!("OptionalLong[{horizon}]")
    } else {
        "OptionalLong.empty".to_owned()
    };
    let base_seq = b["base_sequence"].as_i64().unwrap();
    let delta = b["last_offset"].as_i64().unwrap() - b["base_offset"].as_i64().unwrap();
    let last_seq = if base_seq < 0 { -1 } else { base_seq + delta };
    format!(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} \
         producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} \
         deleteHorizonMs: {} position: {} {}: {} size: {} magic: 2 compresscodec: {} crc: {} isvalid: true",
        b["base_offset"], b["last_offset"], b["count"], base_seq, last_seq, b["producer_id"],
        b["producer_epoch"], b["partition_leader_epoch"], b["is_transactional"], b["is_control"],
        horizon, b["position"], b["timestamp_type"].as_str().unwrap(), b["max_timestamp"],
        b["size"], b["compression"].as_str().unwrap(), b["crc"],
    )
}

/// The deep-iteration metadata part of a record line (no key/payload).
pub fn expected_record_line(b: &Value, r: &Value) -> String {
    let key = hex_bytes(&r["key_hex"]);
    let value = hex_bytes(&r["value_hex"]);
    let base_seq = b["base_sequence"].as_i64().unwrap();
    let offset = r["offset"].as_i64().unwrap();
    let seq = if base_seq < 0 {
        -1
    } else {
        base_seq + offset - b["base_offset"].as_i64().unwrap()
    };
    let keys: Vec<&str> = r["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["key"].as_str().unwrap())
        .collect();
    format!(
        "| offset: {offset} {}: {} keySize: {} valueSize: {} sequence: {seq} headerKeys: [{}]",
        b["timestamp_type"].as_str().unwrap(),
        r["timestamp"],
        key.as_ref().map_or(-1, |k| k.len() as i64),
        value.as_ref().map_or(-1, |v| v.len() as i64),
        keys.join(",")
    )
}

/// A mock clock at a fixed time.
pub fn clock(now_ms: i64) -> Arc<MockClock> {
    MockClock::new(now_ms)
}

/// Write a partition directory `<parent>/<topic>-0` with Strata's engine:
/// `batches` batches of `per_batch` records each (index entries every
/// `interval` bytes, segments of `segment_bytes`), then close the log cleanly.
pub fn write_strata_partition(
    parent: &Path,
    topic: &str,
    batches: usize,
    per_batch: usize,
    interval: i32,
    segment_bytes: i32,
) -> PathBuf {
    let dir = parent.join(format!("{topic}-0"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = LogConfig {
        index_interval_bytes: interval,
        segment_bytes,
        ..LogConfig::default()
    };
    let now = 1_700_000_000_000i64;
    let log = Log::open(
        &dir,
        config,
        LoadParams::default(),
        clock(now + 1_000_000),
        DirHealth::new(parent),
    )
    .expect("open log");
    for b in 0..batches {
        let mut builder = BatchBuilder::new(Offset(0));
        for r in 0..per_batch {
            let n = b * per_batch + r;
            let key = format!("key-{n}");
            let value = format!("value-{n}-{}", "x".repeat(n % 50));
            builder.append(
                Timestamp(now + n as i64 * 10),
                Some(key.as_bytes()),
                Some(value.as_bytes()),
                &[],
            );
        }
        let mut bytes = builder.build();
        log.append_as_leader(&mut bytes, LeaderEpoch(b as i32 / 4))
            .expect("append");
    }
    log.close().expect("close");
    dir
}

/// Paths of a directory's files with `suffix`, sorted.
pub fn files_with(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Copy a directory's regular files into a new directory named `name` under `parent`.
pub fn copy_dir(from: &Path, parent: &Path, name: &str) -> PathBuf {
    let to = parent.join(name);
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.path().is_file() {
            let dest = to.join(e.file_name());
            std::fs::copy(e.path(), &dest).unwrap();
            let mut perms = std::fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&dest, perms).unwrap();
        }
    }
    to
}
