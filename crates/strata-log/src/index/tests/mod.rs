//! Behaviour of the index files, mostly Kafka's OffsetIndexTest,
//! TimeIndexTest and TransactionIndexTest plus the on-disk bytes.

mod offset;
mod time;
mod txn;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use tempfile::TempDir;

use super::*;
use crate::types::{Offset, Position, ProducerId, Timestamp};

const BASE: Offset = Offset(45);

fn new_path(dir: &TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

fn offset_index(dir: &TempDir, base: Offset, max_entries: usize) -> OffsetIndex {
    OffsetIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(dir, "00.index"),
        base,
        max_entries * 8,
        true,
    )
    .unwrap()
}

fn op(offset: i64, position: u32) -> OffsetPosition {
    OffsetPosition {
        offset: Offset(offset),
        position: Position(position),
    }
}

fn to(ts: i64, offset: i64) -> TimestampOffset {
    TimestampOffset {
        timestamp: Timestamp(ts),
        offset: Offset(offset),
    }
}

fn corruption(r: Result<(), IndexError>) -> IndexCorruption {
    match r {
        Err(e) => e
            .corruption()
            .unwrap_or_else(|| panic!("not a corruption: {e}")),
        Ok(()) => panic!("expected corruption"),
    }
}

/// The `VmFlags` line of the mapping of `path` in `/proc/self/smaps`.
fn vm_flags_of(path: &Path) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let name = path.to_str()?;
    let mut lines = smaps.lines().skip_while(|l| !l.ends_with(name));
    lines.next()?;
    lines
        .find(|l| l.starts_with("VmFlags:"))
        .map(str::to_string)
}

/// Index mappings ask for no readahead (`MADV_RANDOM`, shown as `rr` in
/// smaps): with readahead, the first entry written to a new sparse index
/// faulted in megabytes of zeroes, ~10 ms of CPU per partition of a
/// Produce request spread over many partitions.
#[test]
fn index_maps_ask_for_no_readahead() {
    let dir = TempDir::new().unwrap();
    let mut writable = offset_index(&dir, BASE, 1024);
    writable.append(Offset(46), Position(0)).unwrap();
    let flags = vm_flags_of(&new_path(&dir, "00.index")).expect("the index is mapped");
    assert!(flags.split_whitespace().any(|f| f == "rr"), "{flags}");
    drop(writable);
    let read_only = OffsetIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(&dir, "00.index"),
        BASE,
        1024 * 8,
        false,
    )
    .unwrap();
    let flags = vm_flags_of(&new_path(&dir, "00.index")).expect("the index is mapped");
    assert!(flags.split_whitespace().any(|f| f == "rr"), "{flags}");
    drop(read_only);
}
