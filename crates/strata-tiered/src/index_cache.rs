//! Remote index cache (Kafka `RemoteIndexCache`, reference §8.4): the
//! offset, time and transaction indexes of remote segments, downloaded once, kept on
//! local disk in `<first log dir>/remote-log-index-cache/` and in memory,
//! bounded by `remote.log.index.file.cache.total.size.bytes` (least
//! recently used entry evicted first, its files removed).
//!
//! File names: `<startOffset>_<segmentId22>.index` / `.timeindex` /
//! `.txnindex` (plain decimal offset, as Kafka; a segment uploaded without
//! a transaction index gets an empty `.txnindex`, as Kafka does); downloads land in `<name>.tmp` and are renamed,
//! so a crash never leaves a half file under the final name. A restart
//! reuses files already present.
//!
//! Lock: `inner` guards the map and LRU order; it is never held across a
//! download (two readers of one cold segment may both download it; the
//! second insert wins — both files are identical).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use strata_log::codec::index::{
    slots, slots_in_use, IndexCorruption, IndexSlot, OffsetSlot, TimeSlot,
};
use strata_log::codec::txn::{decode_records, ABORTED_TXN_SIZE};
use strata_log::{Offset, Position, Timestamp, TxnIndexSearchResult};
use uuid::Uuid;

use crate::error::RemoteStorageError;
use crate::metadata::{uuid_base64, RemoteLogSegmentMetadata};
use crate::rsm::{IndexType, RemoteStorageManager};

/// Name of the cache directory under the first log dir.
pub const CACHE_DIR: &str = "remote-log-index-cache";

/// The indexes of one remote segment.
#[derive(Clone, Debug)]
pub struct RemoteIndexes {
    pub base_offset: Offset,
    pub offset_index: Bytes,
    pub time_index: Bytes,
    /// The `.txnindex` bytes (empty when the segment had none).
    pub txn_index: Bytes,
}

impl RemoteIndexes {
    /// Byte position of the largest offset-index entry at or below
    /// `target` (0 when none), before a zero-filled untrimmed tail.
    pub fn position_for(&self, target: Offset) -> Position {
        let used = slots_in_use(slots::<OffsetSlot>(&self.offset_index).map(|s| s.relative));
        slots::<OffsetSlot>(&self.offset_index)
            .take(used)
            .take_while(|s| s.offset(self.base_offset) <= target)
            .last()
            .map_or(Position(0), |s| Position(s.position as u32))
    }

    /// Offset of the largest time-index entry with timestamp <= `ts`
    /// (the segment base when none), before a zero-filled untrimmed tail.
    pub fn offset_for_timestamp(&self, ts: Timestamp) -> Offset {
        let used = slots_in_use(slots::<TimeSlot>(&self.time_index).map(|s| s.relative));
        slots::<TimeSlot>(&self.time_index)
            .take(used)
            .take_while(|s| s.timestamp <= ts)
            .last()
            .map_or(self.base_offset, |s| s.offset(self.base_offset))
    }

    /// Kafka `OffsetIndex.fetchUpperBoundOffset`: the offset of the first
    /// offset-index entry whose position is `>= position + fetch_size`.
    pub fn fetch_upper_bound_offset(&self, position: u64, fetch_size: u64) -> Option<Offset> {
        let target = position.saturating_add(fetch_size);
        let used = slots_in_use(slots::<OffsetSlot>(&self.offset_index).map(|s| s.relative));
        slots::<OffsetSlot>(&self.offset_index)
            .take(used)
            .find(|s| u64::try_from(s.position).is_ok_and(|p| p >= target))
            .map(|s| s.offset(self.base_offset))
    }

    /// Kafka `TransactionIndex.collectAbortedTxns` over this segment's
    /// remote `.txnindex`: entries with `last_offset >= fetch_offset` and
    /// `first_offset < upper_bound`, complete at the first entry whose LSO
    /// is `>= upper_bound`. A trailing partial record is ignored.
    ///
    /// # Errors
    /// A record with an unsupported version.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: Offset,
        upper_bound: Offset,
    ) -> Result<TxnIndexSearchResult, IndexCorruption> {
        let whole = self.txn_index.len() / ABORTED_TXN_SIZE * ABORTED_TXN_SIZE;
        let mut aborted = Vec::new();
        for txn in decode_records(&self.txn_index[..whole])? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound {
                aborted.push(txn);
            }
            if txn.last_stable_offset >= upper_bound {
                return Ok(TxnIndexSearchResult {
                    aborted,
                    is_complete: true,
                });
            }
        }
        Ok(TxnIndexSearchResult {
            aborted,
            is_complete: false,
        })
    }

    fn weight(&self) -> u64 {
        (self.offset_index.len() + self.time_index.len() + self.txn_index.len()) as u64
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<Uuid, Arc<RemoteIndexes>>,
    lru: VecDeque<Uuid>,
    total: u64,
}

/// The cache. Share as `Arc`.
#[derive(Debug)]
pub struct RemoteIndexCache {
    dir: PathBuf,
    max_bytes: u64,
    inner: Mutex<Inner>,
}

impl RemoteIndexCache {
    /// Open the cache directory (created if missing; stale `.tmp` files removed).
    ///
    /// # Errors
    /// The directory cannot be created or listed.
    pub fn open(first_log_dir: &Path, max_bytes: u64) -> std::io::Result<RemoteIndexCache> {
        let dir = first_log_dir.join(CACHE_DIR);
        std::fs::create_dir_all(&dir)?;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path
                .extension()
                .is_some_and(|e| e == "tmp" || e == "deleted")
            {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(RemoteIndexCache {
            dir,
            max_bytes,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn file(&self, md: &RemoteLogSegmentMetadata, suffix: &str) -> PathBuf {
        self.dir.join(format!(
            "{}_{}{}",
            md.start_offset.0,
            uuid_base64(md.segment_id.id),
            suffix
        ))
    }

    /// Bytes the in-memory entries weigh.
    pub fn total_bytes(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// The indexes of `md`, from memory, disk, or the remote store.
    ///
    /// # Errors
    /// Download failures.
    pub fn get(
        &self,
        md: &RemoteLogSegmentMetadata,
        rsm: &dyn RemoteStorageManager,
    ) -> Result<Arc<RemoteIndexes>, RemoteStorageError> {
        let id = md.segment_id.id;
        {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(found) = inner.entries.get(&id).cloned() {
                inner.lru.retain(|x| *x != id);
                inner.lru.push_back(id);
                return Ok(found);
            }
        }
        let offset_index = self.load(md, rsm, IndexType::Offset, ".index")?;
        let time_index = self.load(md, rsm, IndexType::Timestamp, ".timeindex")?;
        // Kafka: a missing remote transaction index is an empty one.
        let txn_index = match self.load(md, rsm, IndexType::Transaction, ".txnindex") {
            Err(e) if e.is_not_found() => {
                self.store(md, ".txnindex", &Bytes::new());
                Bytes::new()
            }
            r => r?,
        };
        let entry = Arc::new(RemoteIndexes {
            base_offset: md.start_offset,
            offset_index,
            time_index,
            txn_index,
        });
        let mut evicted = Vec::new();
        {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if inner.entries.insert(id, Arc::clone(&entry)).is_none() {
                inner.total += entry.weight();
                inner.lru.push_back(id);
            }
            while inner.total > self.max_bytes && inner.lru.len() > 1 {
                let Some(victim) = inner.lru.pop_front() else {
                    break;
                };
                if let Some(e) = inner.entries.remove(&victim) {
                    inner.total -= e.weight();
                    evicted.push((victim, e.base_offset));
                }
            }
        }
        for (victim, base) in evicted {
            for suffix in [".index", ".timeindex", ".txnindex"] {
                let path = self
                    .dir
                    .join(format!("{}_{}{}", base.0, uuid_base64(victim), suffix));
                let _ = std::fs::remove_file(path);
            }
        }
        Ok(entry)
    }

    /// Forget a deleted segment (memory and disk).
    pub fn remove(&self, md: &RemoteLogSegmentMetadata) {
        let id = md.segment_id.id;
        {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(e) = inner.entries.remove(&id) {
                inner.total -= e.weight();
                inner.lru.retain(|x| *x != id);
            }
        }
        for suffix in [".index", ".timeindex", ".txnindex"] {
            let _ = std::fs::remove_file(self.file(md, suffix));
        }
    }

    fn load(
        &self,
        md: &RemoteLogSegmentMetadata,
        rsm: &dyn RemoteStorageManager,
        kind: IndexType,
        suffix: &str,
    ) -> Result<Bytes, RemoteStorageError> {
        let path = self.file(md, suffix);
        if let Ok(data) = std::fs::read(&path) {
            return Ok(Bytes::from(data));
        }
        let data = rsm.fetch_index(md, kind)?;
        self.store(md, suffix, &data);
        Ok(data)
    }

    /// Keep a downloaded index on disk (`<name>.tmp`, then renamed). The
    /// disk copy is an optimisation: failing to write it only costs a
    /// download after restart.
    fn store(&self, md: &RemoteLogSegmentMetadata, suffix: &str, data: &[u8]) {
        let path = self.file(md, suffix);
        let tmp = path.with_extension(format!("{}.tmp", &suffix[1..]));
        if std::fs::write(&tmp, data).is_ok() && std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}
