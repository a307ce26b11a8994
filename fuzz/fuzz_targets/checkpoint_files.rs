//! Arbitrary bytes as each text checkpoint a log directory holds, read from
//! disk by the engine's readers: an offset checkpoint
//! (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `cleaner-offset-checkpoint`, `replication-offset-checkpoint`), a
//! partition's `leader-epoch-checkpoint` (replayed through the cache's
//! assign rules) and `partition.metadata`. Any panic or overflow is a bug.
//! Whatever reads must write back through the engine's writer to a file that
//! reads as the same value.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use strata_log::OffsetCheckpointFile;
use strata_log::codec::checkpoint::{decode_offset_checkpoint, encode_offset_checkpoint};
use strata_log::codec::leader_epoch;
use strata_log::format::{LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT};
use strata_log::LeaderEpochCache;
use strata_log::PartitionMetadata;
use strata_log::fs::{SharedFs, StdFs};
use strata_log::Offset;

/// One scratch directory per process; every input overwrites the same files.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("strata-fuzz-checkpoint")
            .tempdir()
            .expect("temp dir")
            .keep()
    })
}

fuzz_target!(|data: &[u8]| {
    let dir = dir();
    let fs: SharedFs = StdFs::shared();

    // The pure codecs the tools use: what decodes re-encodes to text that
    // decodes the same, and the engine's readers accept exactly that.
    let offsets = decode_offset_checkpoint(data);
    if let Ok(entries) = &offsets {
        let text = encode_offset_checkpoint(entries.iter().map(|(tp, o)| (tp, o)));
        assert_eq!(decode_offset_checkpoint(text.as_bytes()).as_ref(), Ok(entries));
    }
    let epochs = leader_epoch::decode(data);
    if let Ok(entries) = &epochs {
        let text = leader_epoch::encode(entries);
        assert_eq!(leader_epoch::decode(text.as_bytes()).as_ref(), Ok(entries));
    }

    let checkpoint = OffsetCheckpointFile::in_dir(&fs, dir, RECOVERY_POINT_CHECKPOINT);
    std::fs::write(checkpoint.path(), data).unwrap();
    let read = checkpoint.read();
    assert_eq!(read.is_ok(), offsets.is_ok());
    if let Ok(offsets) = read {
        checkpoint.write(&offsets).unwrap();
        assert_eq!(checkpoint.read().unwrap(), offsets);
    }

    let epoch_path = dir.join(LEADER_EPOCH_CHECKPOINT);
    std::fs::write(&epoch_path, data).unwrap();
    if let Ok(mut cache) = LeaderEpochCache::load(&fs, dir) {
        let entries = cache.entries().to_vec();
        let _ = (
            cache.latest_entry(),
            cache.earliest_entry(),
            cache.previous_epoch(),
        );
        for e in &entries {
            let _ = cache.end_offset_for(e.epoch, Offset(i64::MAX));
            let _ = cache.epoch_for_offset(e.start_offset);
        }
        cache.flush().unwrap();
        let again = LeaderEpochCache::load(&fs, dir).unwrap();
        assert_eq!(again.entries(), &entries[..]);
    }

    std::fs::write(dir.join(PARTITION_METADATA), data).unwrap();
    if let Ok(md) = PartitionMetadata::read(dir) {
        md.write(fs.as_ref(), dir).unwrap();
        assert_eq!(PartitionMetadata::read(dir).unwrap(), md);
    }
});
