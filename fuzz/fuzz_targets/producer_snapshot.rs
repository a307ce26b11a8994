//! Arbitrary bytes as a producer-state `.snapshot` file, read from disk as
//! log loading reads it: `read_snapshot`, each entry restored into the
//! in-memory producer state, and a `ProducerStateManager` reloading from the
//! file, and through the pure codec (`strata_log::codec::snapshot`) the
//! tools use, which must agree with it. Any panic or overflow is a bug. Whatever decodes must write back
//! (`write_snapshot`) to a file that reads as the same entries.
//!
//! The CRC covers the whole body, so the fuzzer would rarely get past it:
//! when the first input byte is odd the rest of the input is the file with
//! its CRC fixed up; when even, the rest is the file as is.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use strata_log::codec::snapshot::{
    decode_snapshot, encode_snapshot, stamp_crc, ProducerSnapshotEntry, SNAPSHOT_HEADER_SIZE,
};
use strata_log::{read_snapshot, write_snapshot, ProducerStateManager};
use strata_log::fs::{SharedFs, StdFs};
use strata_log::{Offset, TopicPartition};

/// One scratch directory per process; every input overwrites the same files.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("strata-fuzz-snapshot")
            .tempdir()
            .expect("temp dir")
            .keep()
    })
}

/// The snapshot of the segment at this offset (`<20 digits>.snapshot`).
const SNAPSHOT_OFFSET: i64 = 100;

fuzz_target!(|data: &[u8]| {
    let fs: SharedFs = StdFs::shared();
    let Some((&mode, file)) = data.split_first() else {
        return;
    };
    let mut file = file.to_vec();
    if mode & 1 == 1 && file.len() >= SNAPSHOT_HEADER_SIZE {
        stamp_crc(&mut file);
    }
    let dir = dir();
    let path = dir.join(format!("{SNAPSHOT_OFFSET:020}.snapshot"));
    std::fs::write(&path, &file).unwrap();

    // The pure codec the tools use and the engine's file reader agree, and
    // whatever decodes re-encodes to bytes that decode the same.
    let pure = decode_snapshot(&file);
    assert_eq!(pure.as_ref().ok(), read_snapshot(&path).as_ref().ok());
    if let Ok(entries) = &pure {
        assert_eq!(decode_snapshot(&encode_snapshot(entries)).as_ref(), Ok(entries));
    }

    if let Ok(entries) = read_snapshot(&path) {
        for e in &entries {
            let entry = e.to_entry();
            let _ = (
                entry.first_seq(),
                entry.last_seq(),
                entry.last_data_offset(),
            );
            let _ = ProducerSnapshotEntry::from_entry(&entry);
        }
        let copy = dir.join("copy.bin");
        write_snapshot(&*fs, &copy, &entries, false).unwrap();
        assert_eq!(read_snapshot(&copy).unwrap(), entries);
    }

    // Log loading: the manager picks the snapshot up and restores from it
    // (deleting it if corrupt, so it is written again each time above).
    let tp = TopicPartition::new("fuzz", 0);
    let mut manager = ProducerStateManager::new(&fs, dir, tp, i64::MAX).unwrap();
    manager
        .truncate_and_reload(Offset(0), Offset(SNAPSHOT_OFFSET), 0)
        .unwrap();
    for (_, e) in manager.active_producers() {
        let _ = (e.first_seq(), e.first_data_offset(), e.last_data_offset());
    }
    let _ = (manager.first_unstable_offset(), manager.map_end_offset());
    manager.remove_expired_producers(i64::MAX);
});
