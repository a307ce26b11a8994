//! The cleaner service (Kafka `LogCleaner` + `LogCleanerManager`): the
//! `log.cleaner.threads` named threads, which log each cleans next, and the
//! per-partition state operators see.
//!
//! Beyond Kafka: a failed cleaning does not mark the partition uncleanable
//! until restart; it is retried after `strata.log.cleaner.retry.backoff.ms`,
//! doubling per consecutive failure up to
//! `strata.log.cleaner.retry.backoff.max.ms`, and the failure is visible in
//! [`PartitionCleanerState`].
//!
//! After every successful cleaning a [`CleaningRecord`] goes to the history
//! (`history.rs`): logged as Kafka's summary at INFO (target `log_cleaner`)
//! and written to the log dir's `cleaner-statistics.json`.
//!
//! # Locks
//! `in_progress` then `states` are held together only while choosing a log
//! (which reads segment facts, taking segment state locks after them);
//! `threads`, `config`, `history` and `hooks` are leaf locks. None is held across a
//! cleaning or a log's append lock.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use super::clean::{CleanOutcome, Cleaner};
use super::history::{
    thread_cpu_ns, CleanerSettingsInForce, CleanerTotals, CleaningRecord, History,
};
use super::policy::{choose_filthiest, cleanable, Cleanable, CompactionSettings};
use super::snapshot::cleaner_snapshot;
use super::{AbortReason, CleanerConfig, CleanerError};
use crate::checkpoint::CleanerCheckpoints;
use crate::clock::SharedClock;
use crate::log::Log;
use crate::types::TopicPartition;

/// The last failed cleaning of a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanerFailure {
    pub at_ms: i64,
    /// The error, rendered for operators (never matched on).
    pub error: String,
    /// The log dir was offline after it (restart required).
    pub storage_failure: bool,
    /// Failures in a row (reset by a successful cleaning).
    pub consecutive: u32,
    /// Not retried before this time.
    pub retry_at_ms: i64,
}

/// What the cleaner remembers about one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionCleanerState {
    pub last_clean_ms: Option<i64>,
    pub last_outcome: Option<CleanOutcome>,
    pub cleanings: u64,
    pub bytes_reclaimed_total: u64,
    pub failure: Option<CleanerFailure>,
}

/// One partition's compaction health, for the doctor and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionStatus {
    pub tp: TopicPartition,
    /// `cleanup.policy` contains `compact`.
    pub compacted: bool,
    pub cleanable: Cleanable,
    /// Would the cleaner pick this log now (ratio or max lag)?
    pub eligible: bool,
    pub time_since_last_clean_ms: Option<i64>,
    /// Age of the oldest record not yet cleaned (first batch timestamp of
    /// the dirty section).
    pub oldest_uncleaned_record_age_ms: Option<i64>,
    pub bytes_reclaimed_total: u64,
    pub in_progress: bool,
    pub failure: Option<CleanerFailure>,
}

/// Compaction status of `log` at `now_ms`, from its files and (when the
/// cleaner has seen it) the cleaner's state.
///
/// # Errors
/// Reading the checkpoint or segment facts.
pub fn compaction_status(
    log: &Log,
    state: Option<&PartitionCleanerState>,
    in_progress: bool,
    now_ms: i64,
) -> Result<CompactionStatus, CleanerError> {
    let tp = log.topic_partition().clone();
    let cfg = log.config();
    let checkpoint = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir()).get(&tp)?;
    let snap = cleaner_snapshot(log, checkpoint).map_err(|e| CleanerError::log(&tp, e))?;
    let settings = CompactionSettings::of(&cfg);
    let c = cleanable(&snap, &settings, now_ms);
    let from = snap
        .segments
        .iter()
        .rposition(|s| s.base_offset <= c.first_dirty_offset)
        .unwrap_or(0);
    let oldest = snap.segments[from..]
        .iter()
        .filter(|s| s.size > 0)
        .map(|s| s.first_batch_timestamp.0)
        .filter(|t| *t > 0)
        .min();
    Ok(CompactionStatus {
        tp,
        compacted: cfg.cleanup_policy.compact,
        eligible: cfg.cleanup_policy.compact && c.is_eligible(&settings),
        cleanable: c,
        time_since_last_clean_ms: state.and_then(|s| s.last_clean_ms).map(|t| now_ms - t),
        oldest_uncleaned_record_age_ms: oldest.map(|t| (now_ms - t).max(0)),
        bytes_reclaimed_total: state.map_or(0, |s| s.bytes_reclaimed_total),
        in_progress,
        failure: state.and_then(|s| s.failure.clone()),
    })
}

struct Shared {
    states: Mutex<HashMap<TopicPartition, PartitionCleanerState>>,
    in_progress: Mutex<HashSet<TopicPartition>>,
    stop: Arc<AtomicBool>,
    wake: (Mutex<bool>, Condvar),
    history: Mutex<History>,
}

/// What the cleaner threads need from the owner of a [`LogCleaner`] (the
/// [`crate::LogManager`]): the cleaner itself and the logs to choose from.
/// The threads hold the owner weakly and stop once it is dropped.
pub trait CleanerOwner: Send + Sync + 'static {
    /// The owner's cleaner.
    fn log_cleaner(&self) -> &LogCleaner;
    /// Every log the cleaner may choose from, online or not.
    fn logs_to_clean(&self) -> Vec<Arc<Log>>;
}

/// The cleaner of one log manager. Share as part of the manager.
pub struct LogCleaner {
    config: RwLock<CleanerConfig>,
    clock: SharedClock,
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for LogCleaner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogCleaner")
            .field(
                "config",
                &*self.config.read().unwrap_or_else(|e| e.into_inner()),
            )
            .finish()
    }
}

/// Retry delay after `consecutive` failures.
fn backoff_ms(cfg: &CleanerConfig, consecutive: u32) -> i64 {
    let shift = consecutive.saturating_sub(1).min(30);
    cfg.retry_backoff_ms
        .saturating_mul(1i64 << shift)
        .min(cfg.retry_backoff_max_ms.max(cfg.retry_backoff_ms))
}

impl LogCleaner {
    pub fn new(config: CleanerConfig, clock: SharedClock) -> LogCleaner {
        LogCleaner {
            config: RwLock::new(config),
            clock,
            shared: Arc::new(Shared {
                states: Mutex::new(HashMap::new()),
                in_progress: Mutex::new(HashSet::new()),
                stop: Arc::new(AtomicBool::new(false)),
                wake: (Mutex::new(false), Condvar::new()),
                history: Mutex::new(History::default()),
            }),
            threads: Mutex::new(Vec::new()),
        }
    }

    pub fn config(&self) -> CleanerConfig {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the broker-level settings (before [`Self::start`]).
    pub fn configure(&self, config: CleanerConfig) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// A worker with this cleaner's settings and stop flag.
    ///
    /// # Errors
    /// [`CleanerError::MapTooSmall`].
    pub fn worker(&self) -> Result<Cleaner, CleanerError> {
        let cfg = self.config();
        Ok(Cleaner::new(&cfg, self.clock.clone())?.with_stop_flag(self.shared.stop.clone()))
    }

    /// The cleaner's state of `tp`.
    pub fn state(&self, tp: &TopicPartition) -> Option<PartitionCleanerState> {
        self.shared
            .states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tp)
            .cloned()
    }

    /// [`compaction_status`] with this cleaner's state of the log.
    ///
    /// # Errors
    /// As [`compaction_status`].
    pub fn status(&self, log: &Log) -> Result<CompactionStatus, CleanerError> {
        let tp = log.topic_partition();
        let in_progress = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(tp);
        compaction_status(
            log,
            self.state(tp).as_ref(),
            in_progress,
            self.clock.now_ms(),
        )
    }

    /// One round of a cleaner thread (Kafka `cleanFilthiestLog`): pick the
    /// filthiest eligible log among `logs`, clean it, record the result,
    /// then run retention on the compacted logs. `None` when nothing was
    /// eligible.
    pub fn clean_filthiest(
        &self,
        worker: &mut Cleaner,
        logs: &[Arc<Log>],
    ) -> Option<Result<CleanOutcome, CleanerError>> {
        let now = self.clock.now_ms();
        let (log, range) = self.grab_filthiest(logs, now)?;
        let tp = log.topic_partition().clone();
        let before = Measure::start(&log, &range, worker, now);
        let r = (|| {
            if range.checkpoint_reset {
                CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir())
                    .update(&tp, Some(range.first_dirty_offset))?;
            }
            worker.clean_range(
                &log,
                range.first_dirty_offset,
                range.first_uncleanable_offset,
            )
        })();
        self.record(&tp, &r, !log.dir_health().is_online());
        if let Ok(outcome) = &r {
            let rec = before.finish(
                &log,
                &range,
                worker,
                outcome,
                &self.config(),
                self.clock.now_ms(),
            );
            self.remember(&log, rec);
        }
        self.shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&tp);
        // Kafka: retention for every compacted log not being cleaned.
        let busy = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for l in logs.iter().filter(|l| l.config().cleanup_policy.compact) {
            if l.dir_health().is_online() && !busy.contains(l.topic_partition()) {
                if let Err(e) = l.delete_old_segments() {
                    tracing::warn!(tp = %l.topic_partition(), error = %crate::ErrorChain(&e), "retention after cleaning failed");
                }
            }
        }
        Some(r)
    }

    fn grab_filthiest(&self, logs: &[Arc<Log>], now: i64) -> Option<(Arc<Log>, Cleanable)> {
        let mut in_progress = self
            .shared
            .in_progress
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let states = self.shared.states.lock().unwrap_or_else(|e| e.into_inner());
        let mut picked = Vec::new();
        let mut candidates = Vec::new();
        for log in logs {
            let tp = log.topic_partition();
            let cfg = log.config();
            if !cfg.cleanup_policy.compact
                || !log.dir_health().is_online()
                || in_progress.contains(tp)
                || states
                    .get(tp)
                    .and_then(|s| s.failure.as_ref())
                    .is_some_and(|f| f.retry_at_ms > now)
            {
                continue;
            }
            let checkpoint = CleanerCheckpoints::for_partition_dir(log.fs(), &log.dir())
                .get(tp)
                .unwrap_or_else(|e| {
                    tracing::warn!(%tp, error = %crate::ErrorChain(&e), "unreadable cleaner checkpoint; cleaning from the log start");
                    None
                });
            let snap = match cleaner_snapshot(log, checkpoint) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%tp, error = %crate::ErrorChain(&e), "cannot inspect log for cleaning");
                    continue;
                }
            };
            let settings = CompactionSettings::of(&cfg);
            picked.push(log.clone());
            candidates.push((cleanable(&snap, &settings, now), settings));
        }
        let i = choose_filthiest(&candidates)?;
        self.lock_history()
            .set_max_dirty_ratio(candidates[i].0.ratio);
        let log = picked.swap_remove(i);
        in_progress.insert(log.topic_partition().clone());
        Some((log, candidates.swap_remove(i).0))
    }

    fn record(
        &self,
        tp: &TopicPartition,
        r: &Result<CleanOutcome, CleanerError>,
        dir_offline: bool,
    ) {
        let now = self.clock.now_ms();
        let cfg = self.config();
        let mut states = self.shared.states.lock().unwrap_or_else(|e| e.into_inner());
        let st = states.entry(tp.clone()).or_default();
        match r {
            Ok(o) => {
                st.last_clean_ms = Some(now);
                st.cleanings += 1;
                st.bytes_reclaimed_total += o.bytes_reclaimed();
                st.last_outcome = Some(o.clone());
                st.failure = None;
                tracing::info!(%tp, reclaimed = o.bytes_reclaimed(), passes = o.stats.passes,
                    end = %o.end_offset, "log cleaned");
            }
            Err(CleanerError::Aborted { reason, .. }) => {
                // Not a failure: retried at the next round without backoff.
                if *reason != AbortReason::Shutdown {
                    tracing::info!(%tp, ?reason, "cleaning aborted; will retry");
                }
            }
            Err(e) => {
                let consecutive = st.failure.as_ref().map_or(0, |f| f.consecutive) + 1;
                let retry_at_ms = now.saturating_add(backoff_ms(&cfg, consecutive));
                tracing::error!(%tp, error = %crate::ErrorChain(&e), consecutive, retry_at_ms, "cleaning failed");
                st.failure = Some(CleanerFailure {
                    at_ms: now,
                    error: e.to_string(),
                    storage_failure: dir_offline,
                    consecutive,
                    retry_at_ms,
                });
            }
        }
    }

    fn lock_history(&self) -> std::sync::MutexGuard<'_, History> {
        self.shared
            .history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Add `rec` to the history, log Kafka's summary and persist the log
    /// dir's `cleaner-statistics.json` (a failed write is a WARN: the file
    /// is advisory and the cleaning itself succeeded).
    fn remember(&self, log: &Log, rec: CleaningRecord) {
        tracing::info!(target: "log_cleaner", "{}", rec.summary());
        let dir = log.dir();
        let Some(log_dir) = dir.parent() else { return };
        let mut h = self.lock_history();
        h.ensure_loaded(log.fs().as_ref(), log_dir);
        let records = h.push(log_dir, rec);
        if let Err(e) = super::history::write_history(log.fs().as_ref(), log_dir, &records) {
            tracing::warn!(dir = %log_dir.display(), error = %e, "cannot write the cleaner statistics");
        }
    }

    /// Load `cleaner-statistics.json` of each of `log_dirs` (start-up). A
    /// corrupt file is a WARN and an empty history for that dir.
    pub fn load_history(&self, fs: &dyn crate::fs::FileSystem, log_dirs: &[&Path]) {
        let mut h = self.lock_history();
        for d in log_dirs {
            h.ensure_loaded(fs, d);
        }
    }

    /// The broker's last [`super::HISTORY_LIMIT`] cleanings, oldest first
    /// (including those loaded from the log dirs at start-up).
    pub fn history(&self) -> Vec<CleaningRecord> {
        self.lock_history().records()
    }

    /// Cumulative and latest figures, for the `kafka.log:type=LogCleaner`
    /// and `type=LogCleanerManager` metrics.
    pub fn totals(&self) -> CleanerTotals {
        let mut t = self.lock_history().totals();
        t.uncleanable_partitions = self
            .shared
            .states
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|s| s.failure.is_some())
            .count();
        if !self.shared.stop.load(Ordering::Acquire) {
            t.dead_threads = self
                .threads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|h| h.is_finished())
                .count();
        }
        t
    }

    /// Start `log.cleaner.threads` threads named `strata-log-cleaner-<i>`
    /// cleaning `owner`'s logs until [`Self::shutdown`]. A no-op when
    /// disabled, already started, or a worker cannot be built.
    pub fn start<O: CleanerOwner>(&self, owner: &Arc<O>) {
        let cfg = self.config();
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if !cfg.enable || !threads.is_empty() {
            return;
        }
        for i in 0..cfg.threads {
            let mut worker = match self.worker() {
                Ok(w) => w.with_thread(i),
                Err(e) => {
                    tracing::error!(error = %crate::ErrorChain(&e), "log cleaner not started");
                    return;
                }
            };
            let owner: Weak<O> = Arc::downgrade(owner);
            let shared = self.shared.clone();
            let backoff = Duration::from_millis(cfg.backoff_ms.max(0) as u64);
            let handle = std::thread::Builder::new()
                .name(format!("strata-log-cleaner-{i}"))
                .spawn(move || loop {
                    if shared.stop.load(Ordering::Acquire) {
                        return;
                    }
                    let Some(m) = owner.upgrade() else { return };
                    let logs = m.logs_to_clean();
                    let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        m.log_cleaner().clean_filthiest(&mut worker, &logs)
                    }));
                    drop(m);
                    let idle = match round {
                        Ok(r) => r.is_none(),
                        Err(_) => {
                            tracing::error!("panic in a log cleaner thread (contained)");
                            true
                        }
                    };
                    if idle {
                        let (lock, cv) = &shared.wake;
                        let g = lock.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = cv
                            .wait_timeout_while(g, backoff, |woken| {
                                !*woken && !shared.stop.load(Ordering::Acquire)
                            })
                            .map(|(mut g, _)| *g = false);
                    }
                })
                .expect("spawn log cleaner thread");
            threads.push(handle);
        }
    }

    /// Wake idle threads (e.g. after a config change).
    pub fn wake(&self) {
        let (lock, cv) = &self.shared.wake;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
    }

    /// Stop the threads: cleanings in progress abort (their `.cleaned`
    /// files are removed), then the threads are joined.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.wake();
        let handles: Vec<JoinHandle<()>> = self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for h in handles {
            let _ = h.join();
        }
    }
}

/// What is measured before a cleaning, for its [`CleaningRecord`].
struct Measure {
    start_ms: i64,
    start_ns: u64,
    cpu_ns: Option<u64>,
    slept: Duration,
    segments_before: usize,
    segments_cleaned: usize,
}

impl Measure {
    fn start(log: &Log, range: &Cleanable, worker: &Cleaner, now_ms: i64) -> Measure {
        let segs = log.snapshot();
        Measure {
            start_ms: now_ms,
            start_ns: worker_clock_ns(worker),
            cpu_ns: thread_cpu_ns(),
            slept: worker.throttler().total_slept(),
            segments_before: segs.len(),
            segments_cleaned: segs[..segs.len().saturating_sub(1)]
                .iter()
                .filter(|s| s.base_offset() < range.first_uncleanable_offset)
                .count(),
        }
    }

    fn finish(
        self,
        log: &Log,
        range: &Cleanable,
        worker: &Cleaner,
        o: &CleanOutcome,
        cfg: &CleanerConfig,
        end_ms: i64,
    ) -> CleaningRecord {
        let tp = log.topic_partition();
        let log_cfg = log.config();
        let st = &o.stats;
        let elapsed_ns = worker_clock_ns(worker).saturating_sub(self.start_ns);
        let cpu_ms = match (self.cpu_ns, thread_cpu_ns()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) / 1_000_000),
            _ => None,
        };
        CleaningRecord {
            topic: tp.topic.clone(),
            partition: tp.partition,
            thread: worker.thread(),
            start_ms: self.start_ms,
            end_ms,
            elapsed_ms: elapsed_ns / 1_000_000,
            cpu_ms,
            map_elapsed_ms: st.map_elapsed_ns / 1_000_000,
            first_dirty_offset: o.first_dirty_offset.0,
            end_offset: o.end_offset.0,
            first_uncleanable_offset: o.first_uncleanable_offset.0,
            dirty_ratio: range.ratio,
            dirty_bytes: range.cleanable_bytes,
            clean_bytes: range.clean_bytes,
            compaction_delay_ms: range.compaction_delay_ms,
            map_messages_read: st.map_messages_read,
            map_bytes_read: st.map_bytes_read,
            messages_read: st.messages_read,
            bytes_read: st.bytes_read,
            messages_written: st.messages_written,
            bytes_written: st.bytes_written,
            passes: st.passes,
            groups: st.groups,
            buffer_utilization: st.map_utilization,
            segments_cleaned: self.segments_cleaned,
            segments_before: self.segments_before,
            segments_after: log.snapshot().len(),
            size_before: o.size_before,
            size_after: o.size_after,
            throttle_ms: worker
                .throttler()
                .total_slept()
                .saturating_sub(self.slept)
                .as_millis() as u64,
            config: CleanerSettingsInForce {
                threads: cfg.threads,
                io_max_bytes_per_second: Some(cfg.io_max_bytes_per_second)
                    .filter(|r| r.is_finite() && *r > 0.0),
                dedupe_buffer_size: cfg.dedupe_buffer_size,
                io_buffer_load_factor: cfg.io_buffer_load_factor,
                map_capacity: worker.map_capacity() as u64,
                min_cleanable_dirty_ratio: log_cfg.min_cleanable_dirty_ratio,
                segment_bytes: i64::from(log_cfg.segment_bytes),
                available_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            },
        }
    }
}

/// The worker's monotonic clock (the injected clock, so tests are exact).
fn worker_clock_ns(worker: &Cleaner) -> u64 {
    worker.clock_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_backoff_doubles_up_to_the_cap() {
        let cfg = CleanerConfig {
            retry_backoff_ms: 1_000,
            retry_backoff_max_ms: 5_000,
            ..CleanerConfig::default()
        };
        let got: Vec<i64> = (1..=5).map(|n| backoff_ms(&cfg, n)).collect();
        assert_eq!(got, vec![1_000, 2_000, 4_000, 5_000, 5_000]);
    }
}
