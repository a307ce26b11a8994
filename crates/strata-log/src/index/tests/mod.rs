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
