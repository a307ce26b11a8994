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
use strata_log::checkpoint::OffsetCheckpointFile;
use strata_log::format::{LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT};
use strata_log::leader_epoch::LeaderEpochCache;
use strata_log::metadata::PartitionMetadata;
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

    let checkpoint = OffsetCheckpointFile::in_dir(dir, RECOVERY_POINT_CHECKPOINT);
    std::fs::write(checkpoint.path(), data).unwrap();
    if let Ok(offsets) = checkpoint.read() {
        checkpoint.write(&offsets).unwrap();
        assert_eq!(checkpoint.read().unwrap(), offsets);
    }

    let epoch_path = dir.join(LEADER_EPOCH_CHECKPOINT);
    std::fs::write(&epoch_path, data).unwrap();
    if let Ok(mut cache) = LeaderEpochCache::load(dir) {
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
        let again = LeaderEpochCache::load(dir).unwrap();
        assert_eq!(again.entries(), &entries[..]);
    }

    std::fs::write(dir.join(PARTITION_METADATA), data).unwrap();
    if let Ok(md) = PartitionMetadata::read(dir) {
        md.write(dir).unwrap();
        assert_eq!(PartitionMetadata::read(dir).unwrap(), md);
    }
});
