//! Guards against a SIGBUS on a full disk. Index files are preallocated
//! sparse and memory-mapped (as Kafka's); the first store into a hole
//! allocates a disk block inside a page fault, and when the file system is
//! full that fault is SIGBUS, which killed the whole broker. An append whose
//! index entry needs a new block on a full file system must fail with an
//! ordinary error (ENOSPC, so the log directory goes offline) and leave what
//! was stored readable.
//!
//! The test mounts a 4 MiB tmpfs (CI runs as root); where mounting is not
//! permitted it says so and checks nothing.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use strata_log::{LeaderEpoch, LoadParams, LogConfig, MockClock, ReadBound};

/// Unmounts on drop, so a failed assertion leaves no mount behind.
struct Tmpfs<'a>(&'a Path);

impl Drop for Tmpfs<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

fn mount_tmpfs(dir: &Path, size: &str) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Write until the file system is full.
fn fill(path: &Path) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let chunk = vec![0u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    // The last partial chunk may have left a page with room; take it too.
    while f.write_all(&[0u8]).is_ok() {}
}

#[test]
fn an_index_entry_that_needs_a_block_on_a_full_disk_is_an_error_not_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    if !mount_tmpfs(dir.path(), "4m") {
        eprintln!("SKIPPED CHECK: cannot mount a tmpfs here (needs root); nothing was checked");
        return;
    }
    let _mount = Tmpfs(dir.path());
    let cfg = LogConfig {
        // An index entry for every batch; all batches share one timestamp,
        // so the time index keeps a single entry and only the offset index grows.
        index_interval_bytes: 0,
        segment_index_bytes: 1 << 20,
        segment_bytes: 1 << 30,
        ..LogConfig::default()
    };
    let clock = MockClock::new(1_700_000_000_000);
    let log = open_log(dir.path(), "t-0", cfg, &clock, LoadParams::default());
    let entries = |log: &strata_log::Log| log.segments().last().unwrap().offset_index_entries;
    let log_size = |log: &strata_log::Log| log.segments().last().unwrap().size;

    // Fill the offset index up to a 64 KiB boundary (8,192 entries of 8 bytes):
    // the next entry needs a block that nothing has touched yet, with or
    // without space reserved ahead.
    let batch = client_batch(1, 1_700_000_000_000, 10);
    let boundary = 64 * 1024 / 8;
    while entries(&log) < boundary {
        let mut b = batch.clone();
        log.append_as_leader(&mut b, LeaderEpoch(0)).unwrap();
    }
    assert_eq!(entries(&log), boundary);
    // The next batch must fit in the log's last, already allocated page, so
    // that the log write itself succeeds on the full disk.
    let page = 4096u64;
    let room = page - log_size(&log) % page;
    assert!(
        log_size(&log) % page != 0 && room >= batch.len() as u64,
        "test setup: the next batch must fit in the log's last page ({room} bytes left, batch {})",
        batch.len()
    );
    let stored_end = log.log_end_offset();

    fill(&dir.path().join("filler"));
    let mut b = batch.clone();
    let result = log.append_as_leader(&mut b, LeaderEpoch(0));
    // Without the reservation this process dies of SIGBUS right here.
    let err = result.expect_err("an index entry with no disk block left must fail");
    let text = strata_log::ErrorChain(&err).to_string();
    assert!(
        text.contains("No space left on device"),
        "the error names ENOSPC: {text}"
    );

    assert!(
        !log.dir_health().is_online(),
        "the failure takes the directory offline"
    );

    // After space is freed and the log reopened (a restart), everything
    // appended before is there, and appends work again.
    drop(log);
    std::fs::remove_file(dir.path().join("filler")).unwrap();
    let cfg = LogConfig {
        index_interval_bytes: 0,
        segment_index_bytes: 1 << 20,
        segment_bytes: 1 << 30,
        ..LogConfig::default()
    };
    let log = open_log(dir.path(), "t-0", cfg, &clock, LoadParams::default());
    assert!(log.log_end_offset() >= stored_end);
    let mut at = log.log_start_offset();
    let mut batches = 0i64;
    while at < stored_end {
        let d = log.read(at, 1 << 20, ReadBound::LogEnd, false).unwrap();
        let bytes = d.read_to_vec().unwrap();
        let got = split_batches(&bytes);
        let last = got.last().expect("a batch below the end");
        batches += got.len() as i64;
        at = strata_log::Offset(last.last + 1);
    }
    assert!(at >= stored_end);
    assert!(
        batches >= stored_end.0,
        "{batches} batches below {stored_end:?}"
    );
    let mut b = batch.clone();
    log.append_as_leader(&mut b, LeaderEpoch(0))
        .expect("appends work again once space is back");
}
