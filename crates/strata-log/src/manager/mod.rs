//! The log manager (Kafka `LogManager`): log directories, the partitions in
//! them, checkpoints, background flush/delete work and clean shutdown.
//!
//! # Locks
//!
//! - `logs` (`RwLock<BTreeMap<TopicPartition, Arc<Log>>>`): the live logs.
//!   Held only to look up, insert or remove; never across file work.
//! - `create` (`Mutex<()>`): serialises partition creation and deletion so
//!   two callers never create the same partition twice.
//! - `pending_dir_deletes`, `background`, `topic_config`: leaf locks.
//! - `moves`: the log-dir moves, see `log_dir_move` (its swap takes
//!   `create`, then the moved log's append lock).
//!
//! Each log dir has a [`DirHealth`] latch shared with its logs: the first
//! I/O error in that dir takes it offline; the other dirs keep working.

mod high_watermark;
mod log_dir_move;
mod retention;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::checkpoint::OffsetCheckpointFile;
use crate::cleaner::{CleanerOwner, LogCleaner};
use crate::clock::SharedClock;
use crate::config::LogConfig;
use crate::error::LogError;
use crate::format::{self, DirKind, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT};
use crate::fs::{OpenMode, SharedFs, StdFs};
use crate::handles::HandleCache;
use crate::loader::LoadParams;
use crate::log::{DirHealth, Log};
use crate::metadata;
use crate::progress::LoadProgress;
use crate::types::{Offset, TopicPartition};

pub use high_watermark::DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS;
pub use log_dir_move::{FutureLogInfo, LogDirMove, LogReplacedHook};
pub use retention::{RetentionRound, RetentionSchedule, DEFAULT_RETENTION_CHECK_INTERVAL_MS};

/// Broker-level settings of the log manager.
#[derive(Clone, Debug)]
pub struct LogManagerConfig {
    pub log_dirs: Vec<PathBuf>,
    pub default_config: LogConfig,
    /// `num.recovery.threads.per.data.dir` (default 1).
    pub recovery_threads_per_data_dir: usize,
    pub broker_id: i32,
    pub cluster_id: Option<String>,
    /// `log.flush.offset.checkpoint.interval.ms` (default 60 000).
    pub flush_offset_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms` (default 60 000).
    pub flush_start_offset_checkpoint_interval_ms: i64,
    /// `log.segment.delete.delay.ms` (default 60 000), for deleted partitions.
    pub file_delete_delay_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms` (default 5 000): how
    /// often `replication-offset-checkpoint` is written.
    pub replica_high_watermark_checkpoint_interval_ms: i64,
    /// `replica.alter.log.dirs.io.max.bytes.per.second` (default
    /// `i64::MAX`, unthrottled): the copy rate of all log-dir moves.
    pub alter_log_dirs_max_bytes_per_second: i64,
    /// The file-system seam every file mutation in these dirs goes through
    /// ([`StdFs`] in production; tests inject faults here).
    pub fs: SharedFs,
    /// The bound on open segment files and index mappings of every log
    /// here (`strata.log.max.open.files`; [`HandleCache::shared_default`]
    /// unless set).
    pub handles: Arc<HandleCache>,
}

impl LogManagerConfig {
    /// Kafka's defaults for `log_dirs`.
    pub fn new(log_dirs: Vec<PathBuf>) -> LogManagerConfig {
        LogManagerConfig {
            log_dirs,
            default_config: LogConfig::default(),
            recovery_threads_per_data_dir: 1,
            broker_id: 0,
            cluster_id: None,
            flush_offset_checkpoint_interval_ms: 60_000,
            flush_start_offset_checkpoint_interval_ms: 60_000,
            file_delete_delay_ms: 60_000,
            replica_high_watermark_checkpoint_interval_ms:
                DEFAULT_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
            alter_log_dirs_max_bytes_per_second: i64::MAX,
            fs: StdFs::shared(),
            handles: HandleCache::shared_default(),
        }
    }
}

/// Per-topic config lookup: topic name → its full config.
pub type TopicConfigProvider = Arc<dyn Fn(&str) -> LogConfig + Send + Sync>;

/// Asked for every live partition directory before it is opened
/// (directory, partition); `false` leaves it closed and untouched. The
/// broker refuses partitions whose `partition.metadata` disagrees with its
/// topic store this way.
pub type LoadFilter = Arc<dyn Fn(&Path, &TopicPartition) -> bool + Send + Sync>;

/// One log directory as DescribeLogDirs reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDirInfo {
    pub path: PathBuf,
    pub online: bool,
    pub partitions: Vec<TopicPartition>,
    pub total_bytes: u64,
    pub usable_bytes: u64,
}

/// A locked log directory.
struct LogDir {
    path: PathBuf,
    health: Arc<DirHealth>,
    /// Holds the `flock` on `.lock` for the manager's lifetime.
    _lock: Option<File>,
    /// The dir was clean at startup or all its logs loaded: the shutdown
    /// marker may be written.
    loaded_ok: AtomicBool,
}

/// What loading one log dir found.
struct LoadedDir {
    logs: Vec<Arc<Log>>,
    /// `-future` logs (log-dir moves in progress).
    futures: Vec<Arc<Log>>,
    /// Every live partition dir, loaded or left closed by the filter.
    live_on_disk: Vec<TopicPartition>,
    /// The dir may get its clean-shutdown marker at shutdown.
    may_mark_clean: bool,
}

struct PendingDirDelete {
    path: PathBuf,
    due_ms: i64,
}

/// Kafka `LogManager`. `Send + Sync`; share as `Arc<LogManager>`.
pub struct LogManager {
    config: LogManagerConfig,
    clock: SharedClock,
    dirs: Vec<LogDir>,
    logs: RwLock<BTreeMap<TopicPartition, Arc<Log>>>,
    create: Mutex<()>,
    topic_config: RwLock<Option<TopicConfigProvider>>,
    pending_dir_deletes: Mutex<Vec<PendingDirDelete>>,
    last_recovery_checkpoint_ms: AtomicI64,
    last_start_checkpoint_ms: AtomicI64,
    /// `replication-offset-checkpoint` timing, see `high_watermark`.
    high_watermarks: high_watermark::HighWatermarkSchedule,
    background: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    shut_down: AtomicBool,
    /// Retention timing (`log.retention.check.interval.ms`), see `retention`.
    pub(crate) retention: RetentionSchedule,
    /// The log cleaner (compaction), see `cleaner`.
    pub(crate) cleaner: LogCleaner,
    /// Future logs of partitions moving between dirs, see `log_dir_move`.
    moves: log_dir_move::LogDirMoves,
}

impl std::fmt::Debug for LogManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogManager")
            .field("dirs", &self.config.log_dirs)
            .finish()
    }
}

fn lock_dir(fs: &SharedFs, dir: &Path) -> Result<File, LogError> {
    let path = dir.join(format::LOCK_FILE);
    let file = fs
        .open(&path, OpenMode::Create)
        .map_err(|e| LogError::io(&path, "open lock file", e))?;
    // SAFETY: flock on a descriptor this function owns; no memory involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::WouldBlock {
            return Err(LogError::DirLocked {
                dir: dir.to_path_buf(),
            });
        }
        return Err(LogError::io(&path, "lock log dir", err));
    }
    Ok(file)
}

/// Write `meta.properties` in a new log dir (KRaft version 1 with a
/// cluster id, version 0 with `broker.id` otherwise); an existing one must
/// belong to the configured cluster.
fn ensure_meta_properties(dir: &Path, cfg: &LogManagerConfig) -> Result<(), LogError> {
    let path = metadata::meta_properties_path(dir);
    let meta_err = |e: metadata::MetadataError| LogError::Checkpoint {
        path: path.clone(),
        source: Box::new(e),
    };
    if let Some(existing) = metadata::MetaProperties::read(dir).map_err(meta_err)? {
        return match (&existing.cluster_id, &cfg.cluster_id) {
            (Some(a), Some(b)) if a != b => Err(LogError::InvalidDir {
                path: dir.to_path_buf(),
                reason: "meta.properties belongs to another cluster",
            }),
            _ => Ok(()),
        };
    }
    let meta = match &cfg.cluster_id {
        Some(cluster) => metadata::MetaProperties::kraft(
            cluster.clone(),
            cfg.broker_id,
            Some(uuid::Uuid::new_v4()),
        ),
        None => metadata::MetaProperties {
            version: metadata::MetaPropertiesVersion::V0,
            cluster_id: None,
            node_id: Some(cfg.broker_id),
            directory_id: None,
        },
    };
    meta.write(cfg.fs.as_ref(), dir).map_err(meta_err)
}

fn checkpoint_err(path: &Path, e: crate::checkpoint::CheckpointError) -> LogError {
    LogError::Checkpoint {
        path: path.to_path_buf(),
        source: Box::new(e),
    }
}

/// Directories of a log dir that hold partitions (live or `-delete`).
/// The bytes of a partition directory's `.log` files (for load progress;
/// an unreadable entry counts as 0, loading reports the real error).
fn segment_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(format::LOG_SUFFIX)
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn partition_dirs(dir: &Path) -> Result<Vec<(PathBuf, format::ParsedDir)>, LogError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, "list log dir", e))? {
        let entry = entry.map_err(|e| LogError::io(dir, "list log dir", e))?;
        if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "remote-log-index-cache" || name == "__cluster_metadata-0" {
            continue;
        }
        match format::parse_partition_dir_name(&name) {
            Ok(parsed) => out.push((entry.path(), parsed)),
            Err(_) => {
                tracing::warn!(dir = %entry.path().display(), "skipping a non-partition directory")
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

impl LogManager {
    /// Lock every dir, take its clean-shutdown marker, read its checkpoints
    /// and load every partition with `recovery_threads_per_data_dir`
    /// threads per dir. A dir that fails with an I/O error goes offline; the
    /// manager opens as long as one dir is online.
    ///
    /// # Errors
    /// [`LogError::DirLocked`] when another process holds a dir;
    /// [`LogError::NoOnlineDir`] when every dir failed.
    pub fn open(config: LogManagerConfig, clock: SharedClock) -> Result<Arc<LogManager>, LogError> {
        Self::open_filtered(config, clock, None)
    }

    /// [`Self::open`], opening only the partition directories `filter`
    /// accepts (all when `None`).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_filtered(
        config: LogManagerConfig,
        clock: SharedClock,
        filter: Option<LoadFilter>,
    ) -> Result<Arc<LogManager>, LogError> {
        Self::open_with(config, clock, filter, None)
    }

    /// [`Self::open_filtered`], loading each partition with its topic's
    /// config from `topic_configs` (Kafka's `LogManager.loadLogs` with the
    /// topic overrides) instead of the broker defaults, and keeping it as
    /// the provider [`Self::set_topic_config_provider`] sets.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_with(
        config: LogManagerConfig,
        clock: SharedClock,
        filter: Option<LoadFilter>,
        topic_configs: Option<TopicConfigProvider>,
    ) -> Result<Arc<LogManager>, LogError> {
        let mut dirs = Vec::new();
        let mut logs = BTreeMap::new();
        let mut futures = Vec::new();
        let mut live_on_disk = std::collections::BTreeSet::new();
        let mut pending = Vec::new();
        let progress = LoadProgress::new(clock.clone());
        for path in &config.log_dirs {
            let health = DirHealth::new(path);
            let prepared = (|| {
                config
                    .fs
                    .create_dir_all(path)
                    .map_err(|e| LogError::io(path, "create log dir", e))?;
                let lock = lock_dir(&config.fs, path)?;
                ensure_meta_properties(path, &config)?;
                Ok::<_, LogError>(lock)
            })();
            let lock = match prepared {
                Ok(l) => Some(l),
                Err(e @ LogError::DirLocked { .. }) => return Err(e),
                Err(e) => {
                    tracing::error!(dir = %path.display(), error = %crate::ErrorChain(&e), "log dir offline at startup");
                    health.mark_offline();
                    None
                }
            };
            let dir = LogDir {
                path: path.clone(),
                health,
                _lock: lock,
                loaded_ok: AtomicBool::new(false),
            };
            if dir.health.is_online() {
                match Self::load_dir(
                    &config,
                    &clock,
                    &dir,
                    &mut pending,
                    filter.as_ref(),
                    topic_configs.as_ref(),
                    &progress,
                ) {
                    Ok(loaded) => {
                        let may_mark_clean = loaded.may_mark_clean;
                        live_on_disk.extend(loaded.live_on_disk);
                        futures.extend(loaded.futures);
                        for log in loaded.logs {
                            logs.insert(log.topic_partition().clone(), log);
                        }
                        dir.loaded_ok.store(may_mark_clean, Ordering::Release);
                    }
                    Err(e) => {
                        tracing::error!(dir = %path.display(), error = %crate::ErrorChain(&e), "log dir offline: load failed");
                        dir.health.mark_offline();
                    }
                }
            }
            dirs.push(dir);
        }
        progress.finish();
        if !dirs.iter().any(|d| d.health.is_online()) {
            return Err(LogError::NoOnlineDir);
        }
        let now = clock.now_ms();
        let mgr = Arc::new(LogManager {
            config,
            cleaner: LogCleaner::new(Default::default(), clock.clone()),
            clock,
            dirs,
            logs: RwLock::new(logs),
            create: Mutex::new(()),
            topic_config: RwLock::new(topic_configs),
            pending_dir_deletes: Mutex::new(pending),
            last_recovery_checkpoint_ms: AtomicI64::new(now),
            last_start_checkpoint_ms: AtomicI64::new(now),
            high_watermarks: high_watermark::HighWatermarkSchedule::new(now),
            background: Mutex::new(None),
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            shut_down: AtomicBool::new(false),
            retention: RetentionSchedule::new(now),
            moves: Default::default(),
        });
        let online: Vec<&Path> = mgr
            .dirs
            .iter()
            .filter(|d| d.health.is_online())
            .map(|d| d.path.as_path())
            .collect();
        mgr.cleaner.load_history(mgr.config.fs.as_ref(), &online);
        mgr.adopt_future_logs(futures, &live_on_disk);
        Ok(mgr)
    }

    /// Start-up: a future log whose current log is loaded resumes its move;
    /// one whose current log is gone is promoted (the swap renamed the
    /// current dir `-delete` and crashed before renaming the future one,
    /// see `log_dir_move`) unless a dir is offline or the current dir was
    /// left unloaded, so the current may still exist; those are left alone.
    fn adopt_future_logs(
        &self,
        futures: Vec<Arc<Log>>,
        live_on_disk: &std::collections::BTreeSet<TopicPartition>,
    ) {
        let any_offline = self.dirs.iter().any(|d| !d.health.is_online());
        for future in futures {
            let tp = future.topic_partition().clone();
            if let Some(current) = self.get_log(&tp) {
                if Arc::ptr_eq(current.dir_health(), future.dir_health()) {
                    tracing::warn!(dir = %future.dir().display(), "a future log in its current log's dir: left alone");
                    future.close_abruptly();
                } else {
                    self.resume_move(future);
                }
                continue;
            }
            if any_offline || live_on_disk.contains(&tp) {
                tracing::warn!(dir = %future.dir().display(),
                    "a future log whose current log is not loaded: left alone");
                future.close_abruptly();
                continue;
            }
            if let Err(e) = self.promote_future_log(&future) {
                tracing::error!(dir = %future.dir().display(), error = %crate::ErrorChain(&e),
                    "cannot promote a future log whose current log is gone");
            }
        }
    }

    /// Rename a complete future log to its live name and serve it.
    fn promote_future_log(&self, future: &Arc<Log>) -> Result<(), LogError> {
        let tp = future.topic_partition().clone();
        let Some(dir) = self.dir_of(future) else {
            return Err(LogError::NoOnlineDir);
        };
        let (end, start, hw) = (
            future.log_end_offset(),
            future.log_start_offset_for_checkpoint(),
            future.high_watermark(),
        );
        let config = future.config();
        let r = (|| {
            future.close()?;
            let live = dir.path.join(format::partition_dir_name(&tp));
            self.config
                .fs
                .rename(&future.dir(), &live)
                .map_err(|e| LogError::io(future.dir(), "rename future log dir", e))?;
            crate::fs::fsync_dir(self.config.fs.as_ref(), &dir.path)
                .map_err(|e| LogError::io(&dir.path, "fsync log dir", e))?;
            let params = LoadParams {
                recovery_point: end,
                log_start_offset: start,
                had_clean_shutdown: true,
                fs: self.config.fs.clone(),
                handles: self.config.handles.clone(),
            };
            Log::open(
                &live,
                config,
                params,
                self.clock.clone(),
                dir.health.clone(),
            )
        })();
        match r {
            Ok(log) => {
                log.update_high_watermark(hw);
                tracing::warn!(%tp, dir = %log.dir().display(),
                    "promoted a future log: a log-dir move had renamed the current log away");
                self.logs
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tp, log);
                Ok(())
            }
            Err(e) => {
                if e.is_storage_failure() {
                    dir.health.mark_offline_by(&e);
                }
                Err(e)
            }
        }
    }

    /// Load every accepted partition (and future log) of one dir.
    fn load_dir(
        config: &LogManagerConfig,
        clock: &SharedClock,
        dir: &LogDir,
        pending: &mut Vec<PendingDirDelete>,
        filter: Option<&LoadFilter>,
        topic_configs: Option<&TopicConfigProvider>,
        progress: &LoadProgress,
    ) -> Result<LoadedDir, LogError> {
        let clean = metadata::take_clean_shutdown_marker(config.fs.as_ref(), &dir.path)
            .map_err(|e| LogError::io(&dir.path, "take clean shutdown marker", e))?;
        let rp_file =
            OffsetCheckpointFile::in_dir(&config.fs, &dir.path, RECOVERY_POINT_CHECKPOINT);
        let ls_file =
            OffsetCheckpointFile::in_dir(&config.fs, &dir.path, LOG_START_OFFSET_CHECKPOINT);
        let recovery_points = rp_file.read().unwrap_or_else(|e| {
            tracing::warn!(error = %crate::ErrorChain(&e), "unreadable recovery-point checkpoint; recovering everything");
            BTreeMap::new()
        });
        let log_starts = ls_file.read().unwrap_or_default();
        let high_watermarks = high_watermark::read_high_watermarks(&config.fs, &dir.path);
        let mut jobs = Vec::new();
        let mut skipped_unclean = false;
        let mut live_on_disk = Vec::new();
        let now = clock.now_ms();
        for (path, parsed) in partition_dirs(&dir.path)? {
            if parsed.kind == DirKind::Live {
                live_on_disk.push(parsed.tp.clone());
            }
            match parsed.kind {
                DirKind::Delete => pending.push(PendingDirDelete {
                    path,
                    due_ms: now.saturating_add(config.file_delete_delay_ms),
                }),
                DirKind::Live | DirKind::Future
                    if filter.is_some_and(|f| !f(&path, &parsed.tp)) =>
                {
                    // Left as found. After an unclean shutdown it was not
                    // recovered, so the dir must not be marked clean at the
                    // next shutdown either (it would then skip recovery).
                    skipped_unclean |= !clean;
                }
                DirKind::Live | DirKind::Future => {
                    let params = LoadParams {
                        recovery_point: recovery_points
                            .get(&parsed.tp)
                            .copied()
                            .unwrap_or(Offset(0)),
                        log_start_offset: log_starts.get(&parsed.tp).copied().unwrap_or(Offset(0)),
                        had_clean_shutdown: clean,
                        fs: config.fs.clone(),
                        handles: config.handles.clone(),
                    };
                    let hw = high_watermarks.get(&parsed.tp).copied();
                    let bytes = segment_bytes(&path);
                    jobs.push((path, params, hw, bytes));
                }
                DirKind::Stray => {
                    tracing::warn!(dir = %path.display(), "leaving a -stray directory alone")
                }
            }
        }
        progress.add_total(
            jobs.len() as u64,
            jobs.iter().map(|(_, _, _, bytes)| bytes).sum(),
        );
        let threads = config
            .recovery_threads_per_data_dir
            .max(1)
            .min(jobs.len().max(1));
        let queue = Mutex::new(jobs.into_iter());
        let results = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for i in 0..threads {
                let (queue, results) = (&queue, &results);
                std::thread::Builder::new()
                    .name(format!("strata-log-recovery-{i}"))
                    .spawn_scoped(s, move || loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((path, params, hw, bytes)) = next else {
                            break;
                        };
                        let topic = path
                            .file_name()
                            .and_then(|n| {
                                crate::format::parse_partition_dir_name(&n.to_string_lossy()).ok()
                            })
                            .map(|p| p.tp.topic);
                        let cfg = match (topic_configs, topic) {
                            (Some(f), Some(topic)) => f(&topic),
                            _ => config.default_config.clone(),
                        };
                        let r = Log::open(&path, cfg, params, clock.clone(), dir.health.clone());
                        // The checkpointed HW, clamped to [log start, LEO] (Kafka
                        // `Partition.createLog`).
                        if let (Ok(log), Some(hw)) = (&r, hw) {
                            log.update_high_watermark(hw);
                        }
                        let recovered = r
                            .as_ref()
                            .map_or(0, |log| log.recovery_stats().recovered_segments.len());
                        progress.partition_loaded(bytes, recovered as u64);
                        results.lock().unwrap_or_else(|e| e.into_inner()).push(r);
                    })
                    .expect("spawn recovery thread");
            }
        });
        let opened = results
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let (futures, logs) = opened.into_iter().partition(|l| {
            format::parse_partition_dir_name(
                &l.dir()
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            )
            .is_ok_and(|p| p.kind == DirKind::Future)
        });
        Ok(LoadedDir {
            logs,
            futures,
            live_on_disk,
            may_mark_clean: !skipped_unclean,
        })
    }

    /// Per-topic configs: applied to every loaded log now and kept for
    /// callers that look a topic's config up later.
    pub fn set_topic_config_provider(&self, f: TopicConfigProvider) {
        let logs = self.all_logs();
        for log in logs {
            log.update_config(f(&log.topic_partition().topic));
        }
        *self.topic_config.write().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The file-system seam of every log dir.
    pub fn fs(&self) -> &SharedFs {
        &self.config.fs
    }

    pub fn get_log(&self, tp: &TopicPartition) -> Option<Arc<Log>> {
        self.logs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .cloned()
    }

    pub fn all_logs(&self) -> Vec<Arc<Log>> {
        self.logs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    fn dir_of(&self, log: &Log) -> Option<&LogDir> {
        self.dirs
            .iter()
            .find(|d| Arc::ptr_eq(&d.health, log.dir_health()))
    }

    /// The existing log, or a new one in the online dir with the fewest
    /// partitions; writes `partition.metadata` when `topic_id` is given.
    ///
    /// # Errors
    /// [`LogError::NoOnlineDir`]; storage errors (that dir goes offline).
    pub fn get_or_create_log(
        &self,
        tp: &TopicPartition,
        config: LogConfig,
        topic_id: Option<uuid::Uuid>,
    ) -> Result<Arc<Log>, LogError> {
        if let Some(log) = self.get_log(tp) {
            return Ok(log);
        }
        let _g = self.create.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(log) = self.get_log(tp) {
            return Ok(log);
        }
        let logs = self.all_logs();
        let preferred = self
            .take_preferred_dir(tp)
            .and_then(|p| self.dirs.iter().find(|d| d.path == p))
            .filter(|d| d.health.is_online());
        let dir = preferred
            .or_else(|| {
                self.dirs
                    .iter()
                    .filter(|d| d.health.is_online())
                    .min_by_key(|d| {
                        logs.iter()
                            .filter(|l| Arc::ptr_eq(l.dir_health(), &d.health))
                            .count()
                    })
            })
            .ok_or(LogError::NoOnlineDir)?;
        let path = dir.path.join(format::partition_dir_name(tp));
        let r = (|| {
            self.config
                .fs
                .create_dir_all(&path)
                .map_err(|e| LogError::io(&path, "create partition dir", e))?;
            let params = LoadParams {
                had_clean_shutdown: true,
                fs: self.config.fs.clone(),
                handles: self.config.handles.clone(),
                ..LoadParams::default()
            };
            let log = Log::open(
                &path,
                config,
                params,
                self.clock.clone(),
                dir.health.clone(),
            )?;
            if let Some(id) = topic_id {
                metadata::PartitionMetadata::new(id)
                    .write(self.config.fs.as_ref(), &path)
                    .map_err(|e| LogError::Checkpoint {
                        path: path.clone(),
                        source: Box::new(e),
                    })?;
            }
            crate::fs::fsync_dir(self.config.fs.as_ref(), &dir.path)
                .map_err(|e| LogError::io(&dir.path, "fsync log dir", e))?;
            Ok::<_, LogError>(log)
        })();
        match r {
            Ok(log) => {
                self.logs
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tp.clone(), log.clone());
                Ok(log)
            }
            Err(e) => {
                if e.is_storage_failure() {
                    dir.health.mark_offline_by(&e);
                }
                Err(e)
            }
        }
    }

    /// Remove the partition: rename its dir to `<tp>.<uuid>-delete` now and
    /// delete it after `file_delete_delay_ms`.
    ///
    /// # Errors
    /// Storage errors renaming the directory.
    pub fn async_delete(&self, tp: &TopicPartition) -> Result<(), LogError> {
        let _g = self.create.lock().unwrap_or_else(|e| e.into_inner());
        // The future first: a future dir without its current one is taken
        // for a finished move at the next start (see `log_dir_move`).
        self.cancel_move(tp);
        let Some(log) = self
            .logs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp)
        else {
            return Ok(());
        };
        log.close_abruptly();
        let old = log.dir();
        let parent = old.parent().map(Path::to_path_buf).unwrap_or_default();
        let new = parent.join(format::delete_dir_name(tp));
        if let Err(e) = self.config.fs.rename(&old, &new) {
            let e = LogError::io(&old, "rename partition dir for deletion", e);
            log.dir_health().mark_offline_by(&e);
            return Err(e);
        }
        log.set_dir(new.clone());
        let _ = crate::fs::fsync_dir(self.config.fs.as_ref(), &parent);
        self.pending_dir_deletes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(PendingDirDelete {
                path: new,
                due_ms: self
                    .clock
                    .now_ms()
                    .saturating_add(self.config.file_delete_delay_ms),
            });
        Ok(())
    }

    /// The log dirs that are offline (failed at startup or since).
    pub fn offline_dirs(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter(|d| !d.health.is_online())
            .map(|d| d.path.clone())
            .collect()
    }

    /// Stop serving a loaded log without touching its directory: it leaves
    /// the live set (so no checkpoint, flush or retention pass sees it) and
    /// is closed without flushing. The broker uses this for a partition it
    /// refuses to serve (Kafka's `InconsistentTopicIdException`); the data
    /// stays on disk exactly as loaded.
    pub fn unload(&self, tp: &TopicPartition) -> Option<Arc<Log>> {
        let _g = self.create.lock().unwrap_or_else(|e| e.into_inner());
        let log = self
            .logs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tp)?;
        log.close_abruptly();
        Some(log)
    }

    /// The bound on open segment files every log here counts against.
    pub fn handles(&self) -> &Arc<HandleCache> {
        &self.config.handles
    }

    /// Every configured dir with its state and partitions.
    pub fn log_dirs(&self) -> Vec<LogDirInfo> {
        let logs = self.all_logs();
        self.dirs
            .iter()
            .map(|d| {
                let (total_bytes, usable_bytes) = disk_space(&d.path).unwrap_or((0, 0));
                LogDirInfo {
                    path: d.path.clone(),
                    online: d.health.is_online(),
                    partitions: logs
                        .iter()
                        .filter(|l| Arc::ptr_eq(l.dir_health(), &d.health))
                        .map(|l| l.topic_partition().clone())
                        .collect(),
                    total_bytes,
                    usable_bytes,
                }
            })
            .collect()
    }

    /// Write `recovery-point-offset-checkpoint` and
    /// `log-start-offset-checkpoint` in every online dir.
    ///
    /// # Errors
    /// The first checkpoint write error (its dir goes offline).
    pub fn checkpoint_all(&self) -> Result<(), LogError> {
        self.checkpoint(true, true)
    }

    /// The live and future logs (a future log is checkpointed in its own
    /// dir, as Kafka does, so a resumed or promoted one keeps its offsets).
    fn logs_with_futures(&self) -> Vec<Arc<Log>> {
        let mut logs = self.all_logs();
        logs.extend(self.future_log_list().into_iter().map(|(_, l)| l));
        logs
    }

    /// The recovery-point and log-start checkpoints of one dir.
    fn checkpoint_dir(&self, d: &LogDir) -> Result<(), LogError> {
        self.checkpoint_dirs(std::slice::from_ref(d), true, true)
    }

    fn checkpoint(&self, recovery: bool, start: bool) -> Result<(), LogError> {
        self.checkpoint_dirs(&self.dirs, recovery, start)
    }

    fn checkpoint_dirs(
        &self,
        dirs: &[LogDir],
        recovery: bool,
        start: bool,
    ) -> Result<(), LogError> {
        let logs = self.logs_with_futures();
        let mut first_err = None;
        for d in dirs.iter().filter(|d| d.health.is_online()) {
            let mine: Vec<_> = logs
                .iter()
                .filter(|l| Arc::ptr_eq(l.dir_health(), &d.health))
                .collect();
            let mut files = Vec::new();
            if recovery {
                let map = mine
                    .iter()
                    .map(|l| (l.topic_partition().clone(), l.recovery_point()))
                    .collect();
                files.push((RECOVERY_POINT_CHECKPOINT, map));
            }
            if start {
                let map = mine
                    .iter()
                    .map(|l| {
                        (
                            l.topic_partition().clone(),
                            l.log_start_offset_for_checkpoint(),
                        )
                    })
                    .collect();
                files.push((LOG_START_OFFSET_CHECKPOINT, map));
            }
            for (name, map) in files {
                let file = OffsetCheckpointFile::in_dir(&self.config.fs, &d.path, name);
                if let Err(e) = file.write(&map) {
                    let e = checkpoint_err(file.path(), e);
                    d.health.mark_offline_by(&e);
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// One round of background work: flushes due by `flush.ms`, expired
    /// `.deleted` segment files and `-delete` dirs, and checkpoints whose
    /// interval has passed. Errors take the failing dir offline and are
    /// logged; the round continues with the other dirs.
    pub fn run_background_once(&self) {
        let now = self.clock.now_ms();
        for log in self.all_logs() {
            if !log.dir_health().is_online() {
                continue;
            }
            if let Err(e) = log.maybe_flush_by_time() {
                tracing::error!(tp = %log.topic_partition(), error = %crate::ErrorChain(&e), "background flush failed");
            }
            if let Err(e) = log.delete_expired_files() {
                tracing::error!(tp = %log.topic_partition(), error = %crate::ErrorChain(&e), "segment file deletion failed");
            }
            if let Err(e) = log.maybe_remove_expired_producers() {
                tracing::error!(tp = %log.topic_partition(), error = %crate::ErrorChain(&e), "producer expiration failed");
            }
        }
        self.retention.run_if_due(self, now);
        self.maybe_checkpoint_high_watermarks(now);
        let due: Vec<PendingDirDelete> = {
            let mut pending = self
                .pending_dir_deletes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let (due, keep) = pending.drain(..).partition(|p| p.due_ms <= now);
            *pending = keep;
            due
        };
        for p in due {
            if let Err(e) = self.config.fs.remove_dir_all(&p.path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::error!(dir = %p.path.display(), error = %crate::ErrorChain(&e), "partition dir deletion failed");
                }
            }
        }
        let rp_due = now - self.last_recovery_checkpoint_ms.load(Ordering::Acquire)
            >= self.config.flush_offset_checkpoint_interval_ms;
        let ls_due = now - self.last_start_checkpoint_ms.load(Ordering::Acquire)
            >= self.config.flush_start_offset_checkpoint_interval_ms;
        if rp_due || ls_due {
            if let Err(e) = self.checkpoint(rp_due, ls_due) {
                tracing::error!(error = %crate::ErrorChain(&e), "checkpoint write failed");
            }
            if rp_due {
                self.last_recovery_checkpoint_ms
                    .store(now, Ordering::Release);
            }
            if ls_due {
                self.last_start_checkpoint_ms.store(now, Ordering::Release);
            }
        }
    }

    /// Start the named background thread (`strata-log-manager`) running
    /// [`Self::run_background_once`] once a second until shutdown.
    pub fn start_background(self: &Arc<Self>) {
        let mut slot = self.background.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return;
        }
        self.cleaner.start(self);
        self.start_mover();
        let me = Arc::downgrade(self);
        let stop = self.stop.clone();
        let handle = std::thread::Builder::new()
            .name("strata-log-manager".into())
            .spawn(move || loop {
                {
                    let (lock, cv) = &*stop;
                    let stopped = lock.lock().unwrap_or_else(|e| e.into_inner());
                    let (stopped, _) = cv
                        .wait_timeout_while(stopped, Duration::from_secs(1), |s| !*s)
                        .unwrap_or_else(|e| e.into_inner());
                    if *stopped {
                        return;
                    }
                }
                let Some(mgr) = me.upgrade() else { return };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    mgr.run_background_once()
                }));
                if r.is_err() {
                    tracing::error!("panic in the log manager's background round (contained)");
                }
            })
            .expect("spawn log manager thread");
        *slot = Some(handle);
    }

    /// Clean shutdown: stop the background thread, flush and close every
    /// log, write the recovery-point, log-start and high-watermark
    /// checkpoints, then `.kafka_cleanshutdown` in each dir
    /// whose logs all closed cleanly.
    ///
    /// A dir that is offline, or goes offline on a storage failure while
    /// closing, is left alone (its logs are closed without flushing, it gets
    /// no checkpoint and no marker, so the next start recovers it) and
    /// logged; as in Kafka, that is not a failure of the shutdown: the
    /// healthy dirs still close cleanly.
    ///
    /// # Errors
    /// The first error met that is not a storage failure (later dirs are
    /// still shut down).
    /// Close every log (flush, trim the indexes, the clean-shutdown
    /// producer snapshot) with `num.recovery.threads.per.data.dir` threads
    /// per log dir, as Kafka's shutdown does: a close is a handful of fsyncs,
    /// and thousands of partitions closed one after another made a clean
    /// stop take minutes. Logs of an offline dir are closed without I/O.
    /// Returns the logs whose close failed, with their errors.
    fn close_all(&self, logs: &[Arc<Log>]) -> Vec<(Arc<Log>, LogError)> {
        let threads = self.config.recovery_threads_per_data_dir.max(1);
        let mut by_dir: HashMap<PathBuf, Vec<Arc<Log>>> = HashMap::new();
        for log in logs {
            if !log.dir_health().is_online() {
                log.close_abruptly();
                continue;
            }
            let dir = log
                .dir()
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            by_dir.entry(dir).or_default().push(log.clone());
        }
        let failures = Mutex::new(Vec::new());
        let dirs: Vec<(&Vec<Arc<Log>>, AtomicUsize)> =
            by_dir.values().map(|l| (l, AtomicUsize::new(0))).collect();
        std::thread::scope(|s| {
            for (dir_logs, next) in &dirs {
                let failures = &failures;
                for _ in 0..threads.min(dir_logs.len()) {
                    s.spawn(move || loop {
                        let i = next.fetch_add(1, Ordering::AcqRel);
                        let Some(log) = dir_logs.get(i) else { break };
                        if let Err(e) = log.close() {
                            failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((log.clone(), e));
                        }
                    });
                }
            }
        });
        failures.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    pub fn shutdown(&self) -> Result<(), LogError> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        {
            let (lock, cv) = &*self.stop;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        self.cleaner.shutdown();
        self.stop_mover();
        if let Some(h) = self
            .background
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = h.join();
        }
        let logs = self.all_logs();
        let mut first_err: Option<LogError> = None;
        // A storage failure while closing takes its dir offline like any
        // other (Kafka's `LogDirFailureChannel`); the other dirs still close.
        let mut failed = |dir: Option<&LogDir>, e: LogError| match dir {
            Some(d) if e.is_storage_failure() || matches!(e, LogError::Checkpoint { .. }) => {
                d.health.mark_offline_by(&e);
                tracing::error!(dir = %d.path.display(), error = %crate::ErrorChain(&e),
                    "log directory failed during shutdown");
            }
            _ => {
                first_err.get_or_insert(e);
            }
        };
        for (log, e) in self.close_all(&logs) {
            failed(self.dir_of(&log), e);
        }
        // Marks a failing dir offline itself.
        if let Err(e) = self.checkpoint_all() {
            tracing::error!(error = %crate::ErrorChain(&e), "checkpoint write failed during shutdown");
        }
        if let Err(e) = self.checkpoint_high_watermarks() {
            tracing::error!(error = %crate::ErrorChain(&e), "high-watermark checkpoint write failed during shutdown");
        }
        for d in &self.dirs {
            if d.health.is_online() && d.loaded_ok.load(Ordering::Acquire) {
                if let Err(e) =
                    metadata::write_clean_shutdown_marker(self.config.fs.as_ref(), &d.path, -1)
                {
                    failed(
                        Some(d),
                        LogError::io(&d.path, "write clean shutdown marker", e),
                    );
                }
            }
        }
        for d in self.dirs.iter().filter(|d| !d.health.is_online()) {
            tracing::error!(
                dir = %d.path.display(),
                "log directory is offline: not flushed, no checkpoints or clean-shutdown marker; \
                 it will be recovered at the next start"
            );
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl LogManager {
    /// The manager's log cleaner.
    pub fn cleaner(&self) -> &LogCleaner {
        &self.cleaner
    }
}

impl CleanerOwner for LogManager {
    fn log_cleaner(&self) -> &LogCleaner {
        &self.cleaner
    }

    fn logs_to_clean(&self) -> Vec<Arc<Log>> {
        self.all_logs()
    }
}

/// (total, usable) bytes of the file system holding `path`.
fn disk_space(path: &Path) -> Option<(u64, u64)> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a zeroed struct
    // that statvfs fills; nothing is retained.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return None;
    }
    let frsize = st.f_frsize as u64;
    Some((st.f_blocks as u64 * frsize, st.f_bavail as u64 * frsize))
}
