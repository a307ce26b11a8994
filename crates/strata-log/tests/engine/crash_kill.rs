//! Guards durability across process death: a child process appends and
//! flushes in a loop and is SIGKILLed at random moments; after every kill
//! the log reopens (unclean), every batch the child reported flushed is
//! present and intact, the whole log verifies, and appending continues.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::common::*;
use strata_log::batch::{validate_batch, BatchView};
use strata_log::{LoadParams, Log, LogConfig, Offset, ReadBound, SystemClock};

const ENV_DIR: &str = "STRATA_CRASH_WRITER_DIR";

fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 16 * 1024,
        index_interval_bytes: 512,
        ..LogConfig::default()
    }
}

fn open(root: &Path) -> Arc<Log> {
    Log::open(
        &root.join("crash-0"),
        cfg(),
        LoadParams::default(),
        SystemClock::shared(),
        strata_log::DirHealth::new(root),
    )
    .unwrap()
}

/// The records of the batch starting at `base`: deterministic content.
fn batch_at(base: i64) -> Vec<u8> {
    let n = 1 + (base % 5) as usize;
    let ts: Vec<i64> = (0..n as i64).map(|k| 1_000 + base + k).collect();
    follower_batch(base, &ts, 20 + (base % 97) as usize)
}

/// Writer mode: runs only when the parent test re-executes this binary.
#[test]
fn crash_writer_child() {
    let Some(root) = std::env::var_os(ENV_DIR) else {
        return;
    };
    let log = open(Path::new(&root));
    for i in 0..1_000_000u64 {
        let base = log.log_end_offset().0;
        log.append_as_follower(&batch_at(base)).unwrap();
        if i % 7 == 0 {
            log.flush().unwrap();
        } else {
            log.flush_up_to(log.log_end_offset()).unwrap();
        }
        println!("flushed {}", log.log_end_offset().0);
    }
}

/// Check every batch from 0 to the end: CRC, offsets, content.
fn verify(log: &Log) -> i64 {
    let mut at = 0i64;
    while at < log.log_end_offset().0 {
        let d = log
            .read(Offset(at), 1 << 20, ReadBound::LogEnd, false)
            .unwrap();
        let bytes = d.read_to_vec().unwrap();
        let batches = split_batches(&bytes);
        assert!(!batches.is_empty(), "no data at {at}");
        for b in batches {
            let raw = &bytes[b.position..b.position + b.size];
            validate_batch(&BatchView::parse(raw).unwrap()).unwrap();
            assert_eq!(b.base, at, "contiguous offsets");
            assert_eq!(raw, &batch_at(at)[..], "content of batch {at}");
            at = b.last + 1;
        }
    }
    at
}

#[test]
fn sigkilled_writer_never_loses_flushed_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut flushed_total = 0i64;
    for round in 0..30 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let wait_for = 1 + (seed >> 33) % 40;
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash_kill::crash_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV_DIR, tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        let mut last_flushed = flushed_total;
        while seen < wait_for {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("round {round}: writer exited early"))
                .unwrap();
            if let Some(v) = line.strip_prefix("flushed ") {
                last_flushed = v.trim().parse().unwrap();
                seen += 1;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Anything printed after our last read was flushed too.
        for line in lines.map_while(Result::ok) {
            if let Some(v) = line.strip_prefix("flushed ") {
                last_flushed = v.trim().parse().unwrap();
            }
        }
        let log = open(tmp.path());
        let end = verify(&log);
        assert!(
            end >= last_flushed,
            "round {round}: end {end} < flushed {last_flushed}"
        );
        assert_eq!(end, log.log_end_offset().0);
        flushed_total = last_flushed;
        // Continue appending from the parent too.
        log.append_as_follower(&batch_at(end)).unwrap();
        log.close().unwrap();
    }
    let log = open(tmp.path());
    assert!(log.num_segments() > 1, "the writers rolled segments");
    verify(&log);
}
