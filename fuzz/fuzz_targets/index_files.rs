//! Arbitrary bytes as a segment's `.index`, `.timeindex` and `.txnindex`,
//! opened from disk by the engine (read-only, as log loading and the tools
//! open an existing index) and put through every reader and sanity check:
//! lookups, entries, `sanity_check`, `check_all_entries`, the aborted
//! transactions of a fetch; and through the pure codecs the tools use
//! (`strata_log::codec`), whose verdict must match the engine's. Any panic
//! or overflow is a bug. Every version-0
//! aborted-transaction record read re-encodes to a record that decodes to
//! itself.
//!
//! Input: 8 bytes of base offset (the segment file name's offset, kept
//! non-negative), 8 bytes used as a lookup target, then the file.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use strata_log::codec::index::{self as codec, IndexSlot, OffsetSlot, TimeSlot};
use strata_log::codec::txn::decode_records;
use strata_log::{
    AbortedTxn, IndexError, OffsetIndex, OffsetPosition, TimeIndex, TransactionIndex,
};
use strata_log::fs::{SharedFs, StdFs};
use strata_log::{Offset, Position, Timestamp};

/// One scratch directory per process; every input overwrites the same files.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("strata-fuzz-index")
            .tempdir()
            .expect("temp dir")
            .keep()
    })
}

/// The codec's full check on the file's bytes, as the tools run it: it must
/// find exactly what the engine finds on its mapping of the same file.
fn same_verdict<S: IndexSlot>(file: &[u8], base: Offset, engine: Result<(), IndexError>) {
    let entries = file.len() / S::SIZE;
    let slot = |n| codec::slot_at::<S>(file, n);
    let pure = codec::check_all_entries(file.len() as u64, entries, base, slot);
    assert_eq!(engine.map_err(|e| e.corruption()), pure.map_err(Some));
}

/// The broker default `segment.index.bytes`.
const MAX_INDEX_SIZE: usize = 10 << 20;

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let base = Offset(i64::from_be_bytes(data[..8].try_into().unwrap()) & i64::MAX);
    let target = i64::from_be_bytes(data[8..16].try_into().unwrap());
    let file = &data[16..];
    let dir = dir();
    let fs: SharedFs = StdFs::shared();

    let path = dir.join("segment.index");
    std::fs::write(&path, file).unwrap();
    if let Ok(index) = OffsetIndex::open(&fs, &path, base, MAX_INDEX_SIZE, false) {
        let _ = index.sanity_check();
        same_verdict::<OffsetSlot>(file, base, index.check_all_entries());
        let _ = (index.last_offset(), index.is_full(), index.size_in_bytes());
        for n in 0..index.entries() {
            let _ = index.entry(n);
        }
        let found = index.lookup(Offset(target));
        let _ = index.lookup(base);
        // A fetch's size is an i32 of the request.
        let fetch_size = (target as i32).unsigned_abs() as usize;
        let _ = index.fetch_upper_bound_offset(found, fetch_size);
        let at = OffsetPosition {
            offset: base,
            position: Position(target as u32),
        };
        let _ = index.fetch_upper_bound_offset(at, fetch_size);
    }

    let path = dir.join("segment.timeindex");
    std::fs::write(&path, file).unwrap();
    if let Ok(index) = TimeIndex::open(&fs, &path, base, MAX_INDEX_SIZE, false) {
        let _ = index.sanity_check();
        same_verdict::<TimeSlot>(file, base, index.check_all_entries());
        let _ = (index.last_entry(), index.is_full(), index.size_in_bytes());
        for n in 0..index.entries() {
            let _ = index.entry(n);
        }
        let _ = index.lookup(Timestamp(target));
    }

    let path = dir.join("segment.txnindex");
    std::fs::write(&path, file).unwrap();
    if let Ok(index) = TransactionIndex::open(&fs, &path, base) {
        let _ = index.sanity_check();
        let _ = index.is_empty();
        let _ = index.collect_aborted_txns(Offset(target), base);
        let _ = index.collect_aborted_txns(base, Offset(target));
        let pure = decode_records(file);
        assert_eq!(
            index.all_aborted_txns().map_err(|e| e.corruption()),
            pure.map_err(|e| Some(e.into()))
        );
        if let Ok(all) = index.all_aborted_txns() {
            // Only version 0 (what a broker writes) round-trips: decode reads
            // the version from byte 0 alone, as Kafka does, while encode
            // writes an i16, so a negative version -n re-reads as -1.
            for txn in all.into_iter().filter(|t| t.version == 0) {
                assert_eq!(AbortedTxn::decode(&txn.encode()), Some(txn));
            }
        }
    }
});
