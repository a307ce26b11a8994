//! Moving a partition between the log dirs of one broker (Kafka
//! `ReplicaManager.alterReplicaLogDirs`, `ReplicaAlterLogDirsThread`,
//! `LogManager.maybeUpdatePreferredLogDir` / `replaceCurrentWithFutureLog`).
//!
//! A move creates a *future log* `<topic>-<partition>.<uuid32>-future` in the
//! destination dir. The mover thread (`strata-alter-log-dirs`) copies the
//! current log's batches into it with the follower append path
//! ([`Log::append_as_follower`]: batches byte-identical, leader epochs and
//! producer state rebuilt as on a follower), keeps its log start with the
//! current one and truncates it by leader epoch when the current log was
//! truncated (KIP-101, as Kafka's alter-log-dirs fetcher does). Once the
//! future log has caught up, the swap runs with the current log's append
//! lock held, so no append can land in the old log after the copy's last
//! read: a writer waiting for the lock finds the old log closed
//! ([`LogError::Closed`], retriable) and retries against the new one.
//!
//! # The swap, in crash-safety order
//!
//! 1. (appends blocked) copy what is left, start the latest leader epoch at
//!    the end if no batch carries it yet, take the high watermark, close the
//!    future log cleanly (segments, indexes, epoch checkpoint, producer
//!    snapshot fsynced) and write the destination dir's checkpoints, which
//!    list future logs too. *Crash here:* the current log is still the
//!    live one; the future dir is found at start-up and the move resumes.
//! 2. Rename the current dir to `<tp>.<uuid32>-delete`, fsync its log dir.
//!    *Crash here:* the only directory of the partition is the complete
//!    future one; start-up promotes a future dir whose current log is gone
//!    (when every dir loaded, so the current is not just unreadable).
//! 3. Rename the future dir to `<topic>-<partition>`, fsync its log dir.
//!    *Crash here:* the move is done; the `-delete` dir goes at start-up.
//! 4. Reopen the log from its new place, put it in the manager's map, close
//!    the old log (then release its append lock), queue the `-delete` dir
//!    for deletion after `file.delete.delay.ms`, write both dirs'
//!    checkpoints and tell the broker ([`LogReplacedHook`]).
//!
//! Kafka renames the future dir first and the current one second; a crash
//! between leaves two live dirs and Kafka refuses to start ("Duplicate log
//! directories"). Renaming the current one first never leaves two.
//!
//! # Locks
//! `moves` and `preferred` are leaf mutexes; the swap takes the manager's
//! `create` lock, then the current log's append lock; `wake` only pairs
//! with its condvar.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{LogManager, PendingDirDelete};
use crate::error::LogError;
use crate::format;
use crate::loader::LoadParams;
use crate::log::{Log, ReadBound};
use crate::metadata;
use crate::types::{Offset, TopicPartition};

/// Bytes copied from the current log per step of one move.
const COPY_CHUNK_BYTES: usize = 1 << 20;

/// Called after a swap with the partition's new log (the broker's replica
/// manager points its partition at it).
pub type LogReplacedHook = Arc<dyn Fn(&TopicPartition, &Arc<Log>) + Send + Sync>;

/// What [`LogManager::alter_log_dir`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogDirMove {
    /// A future log was created; the mover copies into it.
    Started,
    /// A move to this dir was already under way.
    InProgress,
    /// The partition already lives in that dir (a move elsewhere, if any,
    /// was cancelled).
    AlreadyThere,
    /// The partition is not hosted here; it is created in that dir later.
    Remembered,
}

/// One move's progress, as DescribeLogDirs reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FutureLogInfo {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    pub size: u64,
    /// Current log end − future log end (Kafka's `offset_lag` of a future
    /// replica).
    pub offset_lag: i64,
}

/// State of the log-dir moves of a [`LogManager`].
#[derive(Default)]
pub(super) struct LogDirMoves {
    /// The future log of each partition being moved.
    moves: Mutex<BTreeMap<TopicPartition, Arc<Log>>>,
    /// Where a partition not hosted yet is to be created.
    preferred: Mutex<BTreeMap<TopicPartition, PathBuf>>,
    hook: Mutex<Option<LogReplacedHook>>,
    /// A counter bumped to wake the mover (new move, shutdown), shared with
    /// the mover thread so it waits without holding the manager.
    wake: Arc<(Mutex<u64>, Condvar)>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// The base offset of the batch of `log` holding `offset` (`offset` itself
/// when no batch does: the log is empty there).
fn first_batch_base(log: &Log, offset: Offset) -> Result<Offset, LogError> {
    let data = match log.read(offset, 1, ReadBound::LogEnd, true) {
        Ok(d) => d,
        Err(LogError::OffsetOutOfRange { .. }) => return Ok(offset),
        Err(e) => return Err(e),
    };
    Ok(if data.slices.is_empty() {
        offset
    } else {
        data.first_offset_in_slice.min(offset)
    })
}

/// One step of one move.
enum Step {
    /// This many bytes were copied.
    Copied(usize),
    CaughtUp,
    /// The current log is gone or unusable; try again later.
    Idle,
}

impl LogManager {
    /// Move `tp`'s replica to the log dir `dest` (AlterReplicaLogDirs).
    ///
    /// # Errors
    /// [`LogError::UnknownLogDir`] when `dest` is not a configured log dir;
    /// [`LogError::DirOffline`] when it, or any other dir, is offline (as
    /// Kafka: no future log while a dir is offline, so a partition never
    /// has future logs in two dirs); storage errors creating the future dir.
    pub fn alter_log_dir(&self, tp: &TopicPartition, dest: &Path) -> Result<LogDirMove, LogError> {
        let dir = self.find_dir(dest).ok_or_else(|| LogError::UnknownLogDir {
            dir: dest.to_path_buf(),
        })?;
        if let Some(off) = self.dirs.iter().find(|d| !d.health.is_online()) {
            return Err(LogError::DirOffline {
                dir: off.path.clone(),
            });
        }
        let _g = self.create.lock().unwrap_or_else(|e| e.into_inner());
        let Some(current) = self.get_log(tp) else {
            self.moves
                .preferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(tp.clone(), dir.path.clone());
            return Ok(LogDirMove::Remembered);
        };
        if let Some(future) = self.future_log(tp) {
            if Arc::ptr_eq(future.dir_health(), &dir.health) {
                return Ok(LogDirMove::InProgress);
            }
            self.cancel_move(tp);
        }
        if Arc::ptr_eq(current.dir_health(), &dir.health) {
            return Ok(LogDirMove::AlreadyThere);
        }
        let path = dir.path.join(format::future_dir_name(tp));
        let r = (|| {
            self.config
                .fs
                .create_dir_all(&path)
                .map_err(|e| LogError::io(&path, "create future log dir", e))?;
            if let Ok(meta) = metadata::PartitionMetadata::read(&current.dir()) {
                meta.write(self.config.fs.as_ref(), &path)
                    .map_err(|e| LogError::Checkpoint {
                        path: path.clone(),
                        source: Box::new(e),
                    })?;
            }
            let params = LoadParams {
                had_clean_shutdown: true,
                fs: self.config.fs.clone(),
                handles: self.config.handles.clone(),
                ..LoadParams::default()
            };
            let log = Log::open(
                &path,
                current.config(),
                params,
                self.clock.clone(),
                dir.health.clone(),
            )?;
            crate::fs::fsync_dir(self.config.fs.as_ref(), &dir.path)
                .map_err(|e| LogError::io(&dir.path, "fsync log dir", e))?;
            Ok::<_, LogError>(log)
        })();
        let log = match r {
            Ok(log) => log,
            Err(e) => {
                if e.is_storage_failure() {
                    dir.health.mark_offline_by(&e);
                }
                return Err(e);
            }
        };
        tracing::info!(%tp, from = %current.dir().display(), to = %path.display(), "moving replica to another log dir");
        self.moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tp.clone(), log);
        self.wake_mover();
        Ok(LogDirMove::Started)
    }

    /// The future log of `tp`, while it is being moved.
    pub fn future_log(&self, tp: &TopicPartition) -> Option<Arc<Log>> {
        self.moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .cloned()
    }

    /// Every move under way with its progress.
    pub fn future_logs(&self) -> Vec<FutureLogInfo> {
        self.future_log_list()
            .into_iter()
            .map(|(tp, future)| {
                let current_end = self.get_log(&tp).map(|l| l.log_end_offset());
                FutureLogInfo {
                    dir: future.dir_health().dir().to_path_buf(),
                    size: future.size_in_bytes(),
                    offset_lag: current_end
                        .map(|c| (c.0 - future.log_end_offset().0).max(0))
                        .unwrap_or(0),
                    tp,
                }
            })
            .collect()
    }

    /// Call `hook` after every swap with the partition's new log.
    pub fn set_log_replaced_hook(&self, hook: Option<LogReplacedHook>) {
        *self.moves.hook.lock().unwrap_or_else(|e| e.into_inner()) = hook;
    }

    /// The dir a partition not hosted yet was asked to live in; taken (the
    /// remembered choice is used once, by the creation).
    pub(super) fn take_preferred_dir(&self, tp: &TopicPartition) -> Option<PathBuf> {
        self.moves
            .preferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp)
    }

    pub(super) fn future_log_list(&self) -> Vec<(TopicPartition, Arc<Log>)> {
        self.moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(tp, l)| (tp.clone(), l.clone()))
            .collect()
    }

    /// Register a future log found at start-up (the move resumes).
    pub(super) fn resume_move(&self, log: Arc<Log>) {
        tracing::info!(tp = %log.topic_partition(), dir = %log.dir().display(), "resuming a log-dir move");
        self.moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(log.topic_partition().clone(), log);
    }

    /// The configured dir `path` names (as configured, or the same
    /// directory by canonical path).
    fn find_dir(&self, path: &Path) -> Option<&super::LogDir> {
        self.dirs.iter().find(|d| d.path == path).or_else(|| {
            let want = std::fs::canonicalize(path).ok()?;
            self.dirs
                .iter()
                .find(|d| std::fs::canonicalize(&d.path).ok().as_deref() == Some(want.as_path()))
        })
    }

    /// Stop moving `tp`: its future dir is renamed `-delete` and deleted
    /// later (a partition deletion, or a move to another dir).
    pub(super) fn cancel_move(&self, tp: &TopicPartition) {
        let Some(future) = self
            .moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp)
        else {
            return;
        };
        let blocked = future.block_appends();
        match blocked {
            Ok(block) => {
                let old = future.dir();
                let parent = old.parent().map(Path::to_path_buf).unwrap_or_default();
                let new = parent.join(format::delete_dir_name(tp));
                match self.config.fs.rename(&old, &new) {
                    Ok(()) => {
                        let _ = crate::fs::fsync_dir(self.config.fs.as_ref(), &parent);
                        block.retire(Some(new.clone()));
                        self.queue_dir_delete(new);
                    }
                    Err(e) => {
                        let e = LogError::io(&old, "rename future log dir for deletion", e);
                        future.dir_health().mark_offline_by(&e);
                        block.retire(None);
                    }
                }
            }
            Err(_) => future.close_abruptly(),
        };
    }

    fn queue_dir_delete(&self, path: PathBuf) {
        self.pending_dir_deletes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(PendingDirDelete {
                path,
                due_ms: self
                    .clock
                    .now_ms()
                    .saturating_add(self.config.file_delete_delay_ms),
            });
    }

    fn wake_mover(&self) {
        let (n, cv) = &*self.moves.wake;
        *n.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        cv.notify_all();
    }

    /// One round of every move: copy up to one chunk each, swap the ones
    /// that caught up. Returns whether any made progress. The mover thread
    /// runs this; tests call it directly.
    pub fn run_log_dir_moves_once(&self) -> bool {
        self.run_moves_round(COPY_CHUNK_BYTES).0
    }

    /// [`Self::run_log_dir_moves_once`] copying at most `chunk` bytes per
    /// move; also returns the bytes copied (for the throttle).
    fn run_moves_round(&self, chunk: usize) -> (bool, usize) {
        let mut progressed = false;
        let mut copied = 0;
        for (tp, future) in self.future_log_list() {
            match self.copy_step(&tp, &future, chunk) {
                Ok(Step::Copied(n)) => {
                    progressed = true;
                    copied += n;
                }
                Ok(Step::CaughtUp) => match self.complete_move(&tp, &future) {
                    Ok(()) => progressed = true,
                    Err(e) => {
                        tracing::error!(%tp, error = %crate::ErrorChain(&e), "log-dir move: swap failed");
                    }
                },
                Ok(Step::Idle) => {}
                Err(e) => {
                    tracing::error!(%tp, error = %crate::ErrorChain(&e), "log-dir move: copy failed");
                    if !future.dir_health().is_online() {
                        // The future's dir failed: the move cannot finish.
                        self.moves
                            .moves
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&tp);
                        future.close_abruptly();
                    }
                }
            }
        }
        (progressed, copied)
    }

    /// Copy one chunk of `current` into `future` (or align them). The
    /// caller may hold `current`'s append lock (the swap) or not (the
    /// mover); only `future` is written.
    fn sync_future(current: &Log, future: &Log, max_bytes: usize) -> Result<Step, LogError> {
        let local_start = current.local_log_start_offset();
        // Truncation of the current log (a follower's, by leader epoch):
        // cut the future where the two may differ.
        let cur_end = current.log_end_offset();
        let fut_end = future.log_end_offset();
        let mut target = fut_end.min(cur_end);
        if let Some(epoch) = future.latest_epoch() {
            match current.end_offset_for_epoch(epoch) {
                Some((_, end)) => target = target.min(end),
                None => target = Offset(0),
            }
        }
        if target < fut_end {
            if target < local_start {
                future.truncate_fully_and_start_at(first_batch_base(current, local_start)?)?;
            } else {
                future.truncate_to(target)?;
            }
        }
        // Retention or DeleteRecords moved the current start past the
        // future's end: restart it at the batch holding the current start
        // (a log start inside a batch keeps that whole batch, as on disk).
        let from = future.log_end_offset();
        if from < local_start {
            let base = first_batch_base(current, local_start)?;
            if from != base {
                future.truncate_fully_and_start_at(base)?;
            }
        }
        // The log start follows the current one.
        let start = current.log_start_offset();
        if start > future.log_start_offset() {
            let hw = future.update_high_watermark(current.high_watermark());
            if start <= hw {
                future.maybe_increment_log_start_offset(start)?;
            }
        }
        let from = future.log_end_offset();
        if from >= current.log_end_offset() {
            future.update_high_watermark(current.high_watermark());
            return Ok(Step::CaughtUp);
        }
        // `from` is a batch boundary of the current log (the future holds
        // the same batches); below the local start it is the base of the
        // batch that holds it.
        let at = from.max(local_start);
        let data = match current.read(at, max_bytes, ReadBound::LogEnd, true) {
            Ok(d) => d,
            // Retention moved the start past `from` meanwhile: next round.
            Err(LogError::OffsetOutOfRange { .. }) => return Ok(Step::Idle),
            Err(e) => return Err(e),
        };
        let bytes = data
            .read_to_vec()
            .map_err(|e| LogError::io(current.dir(), "read for log-dir move", e))?;
        if bytes.is_empty() {
            return Ok(Step::Idle);
        }
        future.append_as_follower(&bytes)?;
        future.update_high_watermark(current.high_watermark());
        Ok(Step::Copied(bytes.len()))
    }

    fn copy_step(
        &self,
        tp: &TopicPartition,
        future: &Arc<Log>,
        max_bytes: usize,
    ) -> Result<Step, LogError> {
        let Some(current) = self.get_log(tp) else {
            return Ok(Step::Idle);
        };
        if !current.dir_health().is_online() {
            return Ok(Step::Idle);
        }
        match Self::sync_future(&current, future, max_bytes) {
            // The current log was swapped or deleted meanwhile.
            Err(LogError::Closed { tp: closed }) if closed == *tp && !future.is_closed() => {
                Ok(Step::Idle)
            }
            r => r,
        }
    }

    /// The swap (see the module docs for its order and crash cases).
    fn complete_move(&self, tp: &TopicPartition, future: &Arc<Log>) -> Result<(), LogError> {
        let _g = self.create.lock().unwrap_or_else(|e| e.into_inner());
        let Some(current) = self.get_log(tp) else {
            return Ok(());
        };
        if !self.future_log(tp).is_some_and(|f| Arc::ptr_eq(&f, future)) {
            return Ok(()); // cancelled meanwhile
        }
        let block = current.block_appends()?;
        // Step 1: appends are blocked; copy what is left.
        loop {
            match Self::sync_future(&current, future, COPY_CHUNK_BYTES)? {
                Step::CaughtUp => break,
                Step::Copied(_) => {}
                Step::Idle => {
                    return Err(LogError::InvalidDir {
                        path: future.dir(),
                        reason: "future log cannot catch up with the current log",
                    })
                }
            }
        }
        if let Some(epoch) = current.latest_epoch() {
            if future.latest_epoch().is_none_or(|f| f < epoch) {
                future.assign_epoch_at_end(epoch)?;
            }
        }
        let hw = current.high_watermark();
        future.update_high_watermark(hw);
        let log_start = future.log_start_offset_for_checkpoint();
        let end = future.log_end_offset();
        future.close()?;
        let dest = self.dir_of(future).ok_or(LogError::NoOnlineDir)?;
        self.checkpoint_dir(dest)?;
        // Step 2: the current dir becomes `-delete`.
        let old = current.dir();
        let src_parent = old.parent().map(Path::to_path_buf).unwrap_or_default();
        let deleted = src_parent.join(format::delete_dir_name(tp));
        if let Err(e) = self.config.fs.rename(&old, &deleted) {
            let e = LogError::io(&old, "rename current log dir for deletion", e);
            current.dir_health().mark_offline_by(&e);
            return Err(e);
        }
        block.retire(Some(deleted.clone()));
        if let Err(e) = crate::fs::fsync_dir(self.config.fs.as_ref(), &src_parent) {
            let e = LogError::io(&src_parent, "fsync log dir", e);
            current.dir_health().mark_offline_by(&e);
        }
        // Step 3: the future dir takes the live name.
        let future_dir = future.dir();
        let live = dest.path.join(format::partition_dir_name(tp));
        let renamed = self
            .config
            .fs
            .rename(&future_dir, &live)
            .map_err(|e| LogError::io(&future_dir, "rename future log dir", e))
            .and_then(|()| {
                crate::fs::fsync_dir(self.config.fs.as_ref(), &dest.path)
                    .map_err(|e| LogError::io(&dest.path, "fsync log dir", e))
            });
        self.moves
            .moves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp);
        self.queue_dir_delete(deleted);
        if let Err(e) = renamed {
            // The partition is offline until a restart promotes the future.
            self.logs
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .remove(tp);
            dest.health.mark_offline_by(&e);
            return Err(e);
        }
        // Step 4: serve it from its new place.
        let params = LoadParams {
            recovery_point: end,
            log_start_offset: log_start,
            had_clean_shutdown: true,
            fs: self.config.fs.clone(),
            handles: self.config.handles.clone(),
        };
        let new = match Log::open(
            &live,
            current.config(),
            params,
            self.clock.clone(),
            dest.health.clone(),
        ) {
            Ok(l) => l,
            Err(e) => {
                self.logs
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(tp);
                dest.health.mark_offline_by(&e);
                return Err(e);
            }
        };
        new.update_high_watermark(hw);
        new.set_append_hook(current.append_hook());
        new.set_retention_gate(current.retention_gate());
        self.logs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tp.clone(), new.clone());
        drop(_g);
        if let Err(e) = self.checkpoint(true, true) {
            tracing::error!(error = %crate::ErrorChain(&e), "checkpoint after a log-dir move failed");
        }
        if let Err(e) = self.checkpoint_high_watermarks() {
            tracing::error!(error = %crate::ErrorChain(&e), "high-watermark checkpoint after a log-dir move failed");
        }
        tracing::info!(%tp, dir = %live.display(), log_end_offset = end.0, "log-dir move complete");
        let hook = self
            .moves
            .hook
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(tp, &new);
        }
        Ok(())
    }

    /// Start the mover thread (`strata-alter-log-dirs`): rounds of
    /// [`Self::run_log_dir_moves_once`] while a round makes progress, a
    /// short wait otherwise, until shutdown. With
    /// `replica.alter.log.dirs.io.max.bytes.per.second` set, a round copies
    /// at most that many bytes per move and is followed by a pause that
    /// keeps the copy at the rate (Kafka throttles the same config).
    pub(super) fn start_mover(self: &Arc<Self>) {
        let mut slot = self.moves.worker.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return;
        }
        let me = Arc::downgrade(self);
        let wake = self.moves.wake.clone();
        let rate = self.config.alter_log_dirs_max_bytes_per_second.max(1);
        let chunk = COPY_CHUNK_BYTES.min(usize::try_from(rate).unwrap_or(usize::MAX));
        let handle = std::thread::Builder::new()
            .name("strata-alter-log-dirs".into())
            .spawn(move || loop {
                let (lock, cv) = &*wake;
                let seen = *lock.lock().unwrap_or_else(|e| e.into_inner());
                let (progressed, copied, idle) = {
                    let Some(mgr) = me.upgrade() else { return };
                    if mgr.shut_down.load(std::sync::atomic::Ordering::Acquire) {
                        return;
                    }
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        mgr.run_moves_round(chunk)
                    }));
                    let (progressed, copied) = r.unwrap_or_else(|_| {
                        tracing::error!("panic in the log-dir mover (contained)");
                        (false, 0)
                    });
                    (progressed, copied, mgr.future_log_list().is_empty())
                };
                let throttle_ms = if rate == i64::MAX {
                    0
                } else {
                    (copied as u128 * 1000 / rate as u128) as u64
                };
                if !progressed || throttle_ms > 0 {
                    let wait = if throttle_ms > 0 {
                        throttle_ms
                    } else if idle {
                        1_000
                    } else {
                        20
                    };
                    let g = lock.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = cv
                        .wait_timeout_while(g, Duration::from_millis(wait), |n| *n == seen)
                        .unwrap_or_else(|e| e.into_inner());
                }
            })
            .expect("spawn log-dir mover thread");
        *slot = Some(handle);
    }

    /// Stop the mover thread and close the future logs cleanly (their
    /// recovery points go into the checkpoints; the moves resume at the
    /// next start).
    pub(super) fn stop_mover(&self) {
        self.wake_mover();
        if let Some(h) = self
            .moves
            .worker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = h.join();
        }
        for (tp, future) in self.future_log_list() {
            if !future.dir_health().is_online() {
                future.close_abruptly();
            } else if let Err(e) = future.close() {
                tracing::error!(%tp, error = %crate::ErrorChain(&e), "closing a future log failed");
            }
        }
    }
}
