//! Read-only readers for every file of a Kafka log directory.
//!
//! `dump`, `verify` (and later `doctor`) share these. Nothing here opens a
//! file for writing, resizes, locks or renames anything: the tools must be
//! safe to run against the directory of a live broker.
//!
//! # Layout
//!
//! - [`index`]: raw `.index` / `.timeindex` entries, all slots as stored.
//! - [`checkpoint`]: offset checkpoints and `leader-epoch-checkpoint`, in file order.
//! - [`topics`]: the broker's topic store `strata-topics.json` (ids, topic configs).
//! - [`records`]: batches of a `.log` file and the records inside them.
//!
//! Every format is decoded by `strata_log::codec` (index slots, `.txnindex`
//! records, checkpoint text) or the library's other pure decoders (producer
//! snapshots: `strata_log::codec::snapshot::decode_snapshot`;
//! `partition.metadata`: `strata_log::PartitionMetadata::parse`),
//! the same code the engine runs. These readers only read bytes, with plain
//! reads: a live broker may truncate a file, which a mapping would turn into
//! a SIGBUS.

pub mod checkpoint;
pub mod index;
pub mod records;
pub mod topics;

use std::io::Read;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// A file could not be read.
#[derive(Debug, Error)]
#[error("{op} {path}: {source}")]
pub struct ReadError {
    pub path: PathBuf,
    pub op: &'static str,
    #[source]
    pub source: std::io::Error,
}

/// Read a whole file, read-only.
///
/// # Errors
/// Any I/O error, with the path.
pub fn read_all(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_prefix(path, u64::MAX)
}

/// Read at most `limit` bytes from the start of a file, read-only.
///
/// # Errors
/// Any I/O error, with the path.
pub fn read_prefix(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let err = |op, source| ReadError {
        path: path.to_path_buf(),
        op,
        source,
    };
    let file = std::fs::File::open(path).map_err(|e| err("open", e))?;
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| err("read", e))?;
    Ok(bytes)
}
