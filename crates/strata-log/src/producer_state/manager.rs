//! The per-partition producer table and its snapshot files (Kafka
//! `ProducerStateManager`).
//!
//! Not thread-safe by itself: the partition's append lock guards the whole
//! manager (every method takes `&self`/`&mut self` under that lock).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::batch::BatchView;
use crate::format::{offset_from_file_name, snapshot_file, DELETED_SUFFIX, SNAPSHOT_SUFFIX};
use crate::fs::SharedFs;
use crate::types::{Offset, ProducerId, TopicPartition};

use super::append::{AppendOrigin, ProducerAppendInfo, ProducerUpdates};
use super::entry::{BatchMetadata, CompletedTxn, ProducerStateEntry, TxnMetadata};
use super::error::ProducerStateError;
use super::hash::ProducerIdHasher;
use super::snapshot::{read_snapshot, write_snapshot};
use crate::codec::snapshot::ProducerSnapshotEntry;

/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// Producer state of one partition plus the list of its `.snapshot` files.
#[derive(Debug)]
pub struct ProducerStateManager {
    /// The seam snapshot writes, renames and deletions go through.
    fs: SharedFs,
    dir: PathBuf,
    tp: TopicPartition,
    producer_id_expiration_ms: i64,
    producers: HashMap<ProducerId, ProducerStateEntry, ProducerIdHasher>,
    /// Open transactions by first offset.
    ongoing_txns: BTreeMap<Offset, TxnMetadata>,
    /// Completed transactions whose marker is not yet below the high watermark.
    unreplicated_txns: BTreeMap<Offset, TxnMetadata>,
    snapshots: BTreeMap<Offset, PathBuf>,
    /// The state reflects every offset below this one.
    last_map_offset: Offset,
    last_snap_offset: Offset,
}

impl ProducerStateManager {
    /// An empty manager for the partition directory `dir`; lists the
    /// `*.snapshot` files already there (loading happens in
    /// [`Self::truncate_and_reload`]).
    ///
    /// # Errors
    /// [`ProducerStateError::Io`] when the directory exists but cannot be listed.
    pub fn new(
        fs: &SharedFs,
        dir: &Path,
        tp: TopicPartition,
        producer_id_expiration_ms: i64,
    ) -> Result<Self, ProducerStateError> {
        Ok(ProducerStateManager {
            fs: fs.clone(),
            dir: dir.to_path_buf(),
            tp,
            producer_id_expiration_ms,
            producers: HashMap::with_hasher(ProducerIdHasher::new()),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
            snapshots: list_snapshot_files(dir)?,
            last_map_offset: Offset(0),
            last_snap_offset: Offset(0),
        })
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Follow a rename of the partition directory (Kafka `updateParentDir`).
    pub fn update_dir(&mut self, dir: &Path) {
        for path in self.snapshots.values_mut() {
            if let Some(name) = path.file_name() {
                *path = dir.join(name);
            }
        }
        self.dir = dir.to_path_buf();
    }

    pub fn producer_id_expiration_ms(&self) -> i64 {
        self.producer_id_expiration_ms
    }

    pub fn set_producer_id_expiration_ms(&mut self, ms: i64) {
        self.producer_id_expiration_ms = ms;
    }

    // ---- the append path -------------------------------------------------

    /// The committed state of `producer_id`.
    pub fn last_entry(&self, producer_id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Duplicate check for a client batch, before offsets are assigned: the
    /// retained batch (original offsets and timestamp) when `batch` has the
    /// producer's current epoch and exactly the sequence range of one of its
    /// last five batches (Kafka `ProducerStateEntry.findDuplicateBatch`).
    /// O(5), no allocation.
    pub fn find_duplicate_batch(&self, batch: &BatchView<'_>) -> Option<BatchMetadata> {
        self.producers.get(&batch.producer_id())?.find_duplicate(
            batch.producer_epoch(),
            batch.base_sequence(),
            batch.last_sequence(),
        )
    }

    /// A pending update for `producer_id`, starting from its committed state.
    /// Nothing changes until [`Self::update`].
    pub fn prepare_update(
        &self,
        producer_id: ProducerId,
        origin: AppendOrigin,
    ) -> ProducerAppendInfo {
        match self.producers.get(&producer_id) {
            Some(current) => ProducerAppendInfo::new(producer_id, current, origin),
            None => ProducerAppendInfo::new(
                producer_id,
                &ProducerStateEntry::empty(producer_id),
                origin,
            ),
        }
    }

    /// Validate one batch of an append into `updates` (Kafka
    /// `UnifiedLog.updateProducers`). Batches without a producer id are
    /// ignored. A marker completing a transaction adds it to
    /// [`ProducerUpdates::completed_txns`].
    ///
    /// # Errors
    /// As [`ProducerAppendInfo::append_batch`]; `updates` must then be dropped.
    pub fn validate_batch(
        &self,
        updates: &mut ProducerUpdates,
        batch: &BatchView<'_>,
        origin: AppendOrigin,
    ) -> Result<(), ProducerStateError> {
        let producer_id = batch.producer_id();
        if producer_id.0 < 0 {
            return Ok(());
        }
        let info = updates.info_for(producer_id, || self.prepare_update(producer_id, origin));
        if let Some(txn) = info.append_batch(batch)? {
            updates.push_completed(txn);
        }
        Ok(())
    }

    /// Apply validated updates after the records were written. Returns the
    /// completed transactions: for each, the caller writes the transaction
    /// index entry with [`Self::last_stable_offset`] and then calls
    /// [`Self::complete_txn`]. The caller also sets the map end offset.
    pub fn apply_updates(&mut self, updates: ProducerUpdates) -> Vec<CompletedTxn> {
        let (infos, completed) = updates.into_parts();
        for info in infos {
            self.update(info);
        }
        completed
    }

    /// Commit a pending update (Kafka `update`).
    pub fn update(&mut self, info: ProducerAppendInfo) {
        let (producer_id, updated, started) = info.into_parts();
        if producer_id.0 < 0 {
            tracing::warn!(tp = %self.tp, producer_id = producer_id.0, "ignoring update for an invalid producer id");
            return;
        }
        match self.producers.get_mut(&producer_id) {
            Some(current) => current.merge(&updated),
            None => {
                self.producers.insert(producer_id, updated);
            }
        }
        for txn in started {
            self.ongoing_txns.insert(txn.first_offset, txn);
        }
    }

    /// Apply one batch read from the log with REPLICATION origin (segment
    /// recovery, Kafka `LogSegment.recover`), and advance the map end past
    /// it. A returned completed transaction still needs the transaction
    /// index entry and [`Self::complete_txn`].
    ///
    /// # Errors
    /// [`ProducerStateError::InvalidTxnState`] or
    /// [`ProducerStateError::InvalidControlBatch`] for a log that breaks
    /// transaction rules.
    pub fn apply_replicated_batch(
        &mut self,
        batch: &BatchView<'_>,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        let mut completed = None;
        if batch.producer_id().0 >= 0 {
            let mut info = self.prepare_update(batch.producer_id(), AppendOrigin::Replication);
            completed = info.append_batch(batch)?;
            self.update(info);
        }
        self.update_map_end_offset(batch.next_offset());
        Ok(completed)
    }

    pub fn update_map_end_offset(&mut self, offset: Offset) {
        self.last_map_offset = offset;
    }

    /// The state reflects every offset below this one.
    pub fn map_end_offset(&self) -> Offset {
        self.last_map_offset
    }

    // ---- transactions ------------------------------------------------------

    /// The LSO to store with a completed transaction in the transaction
    /// index: the first offset of the oldest other open transaction, or the
    /// marker's offset + 1 (Kafka `lastStableOffset(CompletedTxn)`).
    pub fn last_stable_offset(&self, txn: &CompletedTxn) -> Offset {
        self.ongoing_txns
            .values()
            .find(|t| t.producer_id != txn.producer_id)
            .map_or(txn.last_offset.plus(1), |t| t.first_offset)
    }

    /// Mark a transaction completed; it stays unstable until the high
    /// watermark passes its marker.
    ///
    /// # Panics
    /// If no transaction started at `txn.first_offset` (Kafka throws
    /// IllegalArgumentException: a bug in the caller).
    pub fn complete_txn(&mut self, txn: &CompletedTxn) {
        let mut meta = self
            .ongoing_txns
            .remove(&txn.first_offset)
            .unwrap_or_else(|| {
                panic!(
                    "{}: completing transaction {txn:?} that was not started",
                    self.tp
                )
            });
        meta.last_offset = Some(txn.last_offset);
        self.unreplicated_txns.insert(txn.first_offset, meta);
    }

    /// Forget completed transactions whose marker is below `high_watermark`.
    pub fn on_high_watermark_updated(&mut self, high_watermark: Offset) {
        self.remove_unreplicated_txns(high_watermark);
    }

    fn remove_unreplicated_txns(&mut self, offset: Offset) {
        self.unreplicated_txns
            .retain(|_, t| t.last_offset.is_none_or(|last| last >= offset));
    }

    /// The first offset of an undecided transaction or of a decided one whose
    /// marker is not yet replicated; the LSO cannot pass it.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        let unreplicated = self
            .unreplicated_txns
            .values()
            .next()
            .map(|t| t.first_offset);
        let undecided = self.first_undecided_offset();
        match (undecided, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first offset of the oldest open transaction.
    pub fn first_undecided_offset(&self) -> Option<Offset> {
        self.ongoing_txns.values().next().map(|t| t.first_offset)
    }

    /// Producers with state, in no particular order.
    pub fn active_producers(&self) -> impl Iterator<Item = (ProducerId, &ProducerStateEntry)> + '_ {
        self.producers.iter().map(|(id, e)| (*id, e))
    }

    pub fn producer_id_count(&self) -> usize {
        self.producers.len()
    }

    /// No producers and no unreplicated transactions.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty() && self.unreplicated_txns.is_empty()
    }

    /// Put a restored entry into the table (Kafka `loadProducerEntry`).
    pub fn load_producer_entry(&mut self, entry: ProducerStateEntry) {
        let producer_id = entry.producer_id();
        if let Some(first) = entry.current_txn_first_offset() {
            self.ongoing_txns
                .insert(first, TxnMetadata::new(producer_id, first));
        }
        self.producers.insert(producer_id, entry);
    }

    // ---- expiration and log start ------------------------------------------

    /// Drop producers without an open transaction whose last timestamp is
    /// `producer.id.expiration.ms` or more in the past.
    pub fn remove_expired_producers(&mut self, now_ms: i64) {
        let expiration = self.producer_id_expiration_ms;
        self.producers
            .retain(|_, e| !is_expired(expiration, now_ms, e));
    }

    /// The log start moved up (retention, DeleteRecords): forget completed
    /// transactions below it and move the map end up to it. Like Kafka 3.9,
    /// producers are *not* dropped here; they leave by expiration only.
    pub fn on_log_start_offset_incremented(&mut self, log_start: Offset) {
        self.remove_unreplicated_txns(log_start);
        if self.last_map_offset < log_start {
            self.last_map_offset = log_start;
        }
        self.last_snap_offset = self.latest_snapshot_offset().unwrap_or(log_start);
    }

    // ---- snapshots -----------------------------------------------------------

    /// Write `<mapEndOffset>.snapshot` unless the map end has not moved past
    /// the last snapshot. Returns the path written.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`].
    pub fn take_snapshot(&mut self, sync: bool) -> Result<Option<PathBuf>, ProducerStateError> {
        if self.last_map_offset <= self.last_snap_offset {
            return Ok(None);
        }
        let path = snapshot_file(&self.dir, self.last_map_offset, "");
        let mut entries: Vec<ProducerSnapshotEntry> = self
            .producers
            .values()
            .map(ProducerSnapshotEntry::from_entry)
            .collect();
        entries.sort_unstable_by_key(|e| e.producer_id);
        write_snapshot(self.fs.as_ref(), &path, &entries, sync)?;
        tracing::debug!(tp = %self.tp, offset = self.last_map_offset.0, producers = entries.len(), "wrote producer snapshot");
        self.snapshots.insert(self.last_map_offset, path.clone());
        self.last_snap_offset = self.last_map_offset;
        Ok(Some(path))
    }

    pub fn latest_snapshot_offset(&self) -> Option<Offset> {
        self.snapshots.keys().next_back().copied()
    }

    pub fn oldest_snapshot_offset(&self) -> Option<Offset> {
        self.snapshots.keys().next().copied()
    }

    /// Offsets of the known snapshot files, ascending.
    pub fn snapshot_offsets(&self) -> impl Iterator<Item = Offset> + '_ {
        self.snapshots.keys().copied()
    }

    /// The snapshot file at exactly `offset`.
    pub fn fetch_snapshot(&self, offset: Offset) -> Option<&Path> {
        self.snapshots.get(&offset).map(PathBuf::as_path)
    }

    /// Clear the state, then load the newest snapshot that reads; corrupt
    /// ones are deleted on the way (Kafka `loadFromSnapshot`).
    fn load_from_snapshot(
        &mut self,
        log_start: Offset,
        now_ms: i64,
    ) -> Result<(), ProducerStateError> {
        while let Some((&offset, path)) = self.snapshots.iter().next_back() {
            let path = path.clone();
            match read_snapshot(&path) {
                Ok(entries) => {
                    for e in entries.iter().map(ProducerSnapshotEntry::to_entry) {
                        if !is_expired(self.producer_id_expiration_ms, now_ms, &e) {
                            self.load_producer_entry(e);
                        }
                    }
                    self.last_snap_offset = offset;
                    self.last_map_offset = offset;
                    return Ok(());
                }
                Err(ProducerStateError::CorruptSnapshot { path, reason }) => {
                    tracing::warn!(tp = %self.tp, path = %path.display(), %reason, "deleting corrupt producer snapshot");
                    self.remove_and_delete_snapshot(offset)?;
                }
                Err(ProducerStateError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    self.snapshots.remove(&offset);
                }
                Err(e) => return Err(e),
            }
        }
        self.last_snap_offset = log_start;
        self.last_map_offset = log_start;
        Ok(())
    }

    /// Delete snapshots above `log_end` or at/below `log_start`; unless the
    /// map end already equals `log_end`, drop all state and reload from the
    /// newest remaining snapshot (dropping producers expired at `now_ms`).
    /// A corrupt snapshot is deleted and the next older one tried; with none
    /// left the map end becomes `log_start`. Never fails on corruption.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`] when a file cannot be read or deleted.
    pub fn truncate_and_reload(
        &mut self,
        log_start: Offset,
        log_end: Offset,
        now_ms: i64,
    ) -> Result<(), ProducerStateError> {
        let out_of_range: Vec<Offset> = self
            .snapshots
            .keys()
            .copied()
            .filter(|&o| o > log_end || o <= log_start)
            .collect();
        for offset in out_of_range {
            self.remove_and_delete_snapshot(offset)?;
        }
        if log_end != self.last_map_offset {
            self.producers.clear();
            self.ongoing_txns.clear();
            // The log end is at or below the high watermark here, so no
            // completed transaction can still be unreplicated.
            self.unreplicated_txns.clear();
            self.load_from_snapshot(log_start, now_ms)
        } else {
            self.on_log_start_offset_incremented(log_start);
            Ok(())
        }
    }

    /// Delete the snapshots above `offset` (a truncation to `offset` makes
    /// them describe batches that are gone); the state is left as it is.
    /// Returns whether any was deleted. A truncation calls this before it
    /// fsyncs the directory, so that a power loss cannot bring back a
    /// snapshot of the old tail once new batches fill the same offsets.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`] when a snapshot cannot be deleted.
    pub fn delete_snapshots_above(&mut self, offset: Offset) -> Result<bool, ProducerStateError> {
        let above: Vec<Offset> = self
            .snapshots
            .range(Offset(offset.0.saturating_add(1))..)
            .map(|(o, _)| *o)
            .collect();
        for snapshot in &above {
            self.remove_and_delete_snapshot(*snapshot)?;
        }
        Ok(!above.is_empty())
    }

    /// Drop all state and snapshots; the map starts at `offset`.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`] when a snapshot cannot be deleted.
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: Offset,
    ) -> Result<(), ProducerStateError> {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        let all: Vec<Offset> = self.snapshots.keys().copied().collect();
        for snapshot in all {
            self.remove_and_delete_snapshot(snapshot)?;
        }
        self.last_snap_offset = Offset(0);
        self.last_map_offset = offset;
        Ok(())
    }

    /// [`Self::truncate_fully_and_start_at`]`(0)`, then list the directory's
    /// snapshot files again.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`].
    pub fn truncate_fully_and_reload_snapshots(&mut self) -> Result<(), ProducerStateError> {
        self.truncate_fully_and_start_at(Offset(0))?;
        self.snapshots = list_snapshot_files(&self.dir)?;
        Ok(())
    }

    /// Delete the snapshots below `offset`.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`].
    pub fn delete_snapshots_before(&mut self, offset: Offset) -> Result<(), ProducerStateError> {
        let below: Vec<Offset> = self.snapshots.range(..offset).map(|(o, _)| *o).collect();
        for snapshot in below {
            self.remove_and_delete_snapshot(snapshot)?;
        }
        Ok(())
    }

    /// At load: re-list the snapshot files and delete every one whose offset
    /// is not a segment base, except the largest such "stray" one when it is
    /// above every segment base (the clean-shutdown snapshot at the LEO).
    ///
    /// # Errors
    /// [`ProducerStateError::Io`].
    pub fn remove_stray_snapshots(
        &mut self,
        segment_bases: &[Offset],
    ) -> Result<(), ProducerStateError> {
        let bases: HashSet<Offset> = segment_bases.iter().copied().collect();
        let max_base = segment_bases.iter().max().copied();
        self.snapshots = list_snapshot_files(&self.dir)?;
        let strays: Vec<Offset> = self
            .snapshots
            .keys()
            .copied()
            .filter(|o| !bases.contains(o))
            .collect();
        let Some((&largest, older)) = strays.split_last() else {
            return Ok(());
        };
        for &offset in older {
            self.remove_and_delete_snapshot(offset)?;
        }
        if max_base.is_some_and(|max| largest < max) {
            self.remove_and_delete_snapshot(largest)?;
        }
        Ok(())
    }

    /// Forget the snapshot at `offset` and rename its file to
    /// `<offset>.snapshot.deleted` for a delayed delete (segment deletion).
    /// `None` if there is none or it was already gone.
    ///
    /// # Errors
    /// [`ProducerStateError::Io`] for a failed rename.
    pub fn remove_and_mark_snapshot_for_deletion(
        &mut self,
        offset: Offset,
    ) -> Result<Option<PathBuf>, ProducerStateError> {
        let Some(path) = self.snapshots.remove(&offset) else {
            return Ok(None);
        };
        let mut deleted = path.clone().into_os_string();
        deleted.push(DELETED_SUFFIX);
        let deleted = PathBuf::from(deleted);
        match self.fs.rename(&path, &deleted) {
            Ok(()) => Ok(Some(deleted)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ProducerStateError::io(
                path,
                "rename producer snapshot for deletion",
                e,
            )),
        }
    }

    fn remove_and_delete_snapshot(&mut self, offset: Offset) -> Result<(), ProducerStateError> {
        if let Some(path) = self.snapshots.remove(&offset) {
            match self.fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(ProducerStateError::io(path, "delete producer snapshot", e)),
            }
        }
        Ok(())
    }
}

/// Kafka `isProducerExpired`: no open transaction and idle for at least
/// `expiration_ms` (by the producer's own last timestamp).
fn is_expired(expiration_ms: i64, now_ms: i64, entry: &ProducerStateEntry) -> bool {
    entry.current_txn_first_offset().is_none()
        && now_ms.saturating_sub(entry.last_timestamp().0) >= expiration_ms
}

/// The `*.snapshot` regular files of `dir` by offset (Kafka
/// `listSnapshotFiles`); names without a numeric offset are skipped. A
/// missing directory has none.
///
/// # Errors
/// [`ProducerStateError::Io`] when the directory cannot be read.
pub fn list_snapshot_files(dir: &Path) -> Result<BTreeMap<Offset, PathBuf>, ProducerStateError> {
    let io_err = |e| ProducerStateError::io(dir, "list producer snapshots", e);
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(io_err(e)),
    };
    let mut out = BTreeMap::new();
    for entry in read {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.ends_with(SNAPSHOT_SUFFIX) || !entry.file_type().map_err(io_err)?.is_file() {
            continue;
        }
        if let Some(offset) = offset_from_file_name(name) {
            out.insert(offset, entry.path());
        }
    }
    Ok(out)
}
