//! "Compact topic not shrinking", "tombstones linger", "consumer cache keeps
//! deleted keys" and "disk doubles during compaction": the cleaner's own
//! choice (docs/kafka-behaviour.md §11.2) recomputed from disk, with the
//! setting behind each obstacle.

use strata_log::{LogConfig, Offset};

use super::diagnosis::{human_bytes, human_ms, Cause, DoctorSettings, Finding, Severity, Symptom};
use super::scan::PartitionFacts;

/// The cleaner's view of one log (Kafka `LogCleanerManager.cleanableOffsets`
/// and `LogToClean`).
#[derive(Clone, Debug, PartialEq)]
pub struct Cleanability {
    pub first_dirty: Offset,
    pub first_uncleanable: Offset,
    /// Why `first_uncleanable` is where it is.
    pub limited_by_lag: bool,
    pub clean_bytes: u64,
    pub cleanable_bytes: u64,
    /// Dirty bytes in the active segment (never cleanable).
    pub active_dirty_bytes: u64,
    pub ratio: f64,
    /// `max.compaction.lag.ms` forces a cleaning now.
    pub need_compaction_now: bool,
}

/// §11.2 on the facts; the LSO is the high watermark (no open
/// transactions are tracked offline).
pub fn cleanability(facts: &PartitionFacts, cfg: &LogConfig, now: i64) -> Cleanability {
    let segs = &facts.segments;
    let leo = facts.log_end_offset;
    let start = facts.log_start_offset;
    let first_dirty = facts
        .cleaner_offset
        .filter(|o| *o >= start && *o <= leo)
        .unwrap_or(start);
    let active = segs.last().expect("non-empty").base_offset;
    let hw = facts.high_watermark.unwrap_or(leo);
    let mut uncleanable = hw.min(active);
    let mut limited_by_lag = false;
    if cfg.min_compaction_lag_ms > 0 {
        let lag_bound = segs[..segs.len() - 1]
            .iter()
            .filter(|s| s.next_offset > first_dirty)
            .find(|s| s.largest_timestamp().0 > now - cfg.min_compaction_lag_ms)
            .map(|s| s.base_offset);
        if let Some(b) = lag_bound.filter(|b| *b < uncleanable) {
            uncleanable = b;
            limited_by_lag = true;
        }
    }
    let uncleanable = uncleanable.max(first_dirty);
    // Align down to the base of the segment holding it.
    let uncleanable = segs
        .iter()
        .rev()
        .find(|s| s.base_offset <= uncleanable)
        .map_or(uncleanable, |s| s.base_offset);
    let floor_dirty = segs
        .iter()
        .rev()
        .find(|s| s.base_offset <= first_dirty)
        .map_or(first_dirty, |s| s.base_offset);
    let clean_bytes = segs
        .iter()
        .filter(|s| s.next_offset <= first_dirty)
        .map(|s| s.size)
        .sum();
    let cleanable_bytes: u64 = segs
        .iter()
        .filter(|s| s.base_offset >= floor_dirty && s.base_offset < uncleanable)
        .map(|s| s.size)
        .sum();
    let total = clean_bytes + cleanable_bytes;
    let ratio = if total == 0 {
        0.0
    } else {
        cleanable_bytes as f64 / total as f64
    };
    let need_compaction_now = cfg.max_compaction_lag_ms < i64::MAX
        && segs[..segs.len() - 1]
            .iter()
            .filter(|s| s.next_offset > first_dirty)
            .filter_map(|s| s.first_batch_timestamp)
            .filter(|t| t.0 > 0)
            .map(|t| t.0)
            .min()
            .is_some_and(|t| t < now - cfg.max_compaction_lag_ms);
    let last = segs.last().expect("non-empty");
    Cleanability {
        first_dirty,
        first_uncleanable: uncleanable,
        limited_by_lag,
        clean_bytes,
        cleanable_bytes,
        active_dirty_bytes: if last.next_offset > first_dirty {
            last.size
        } else {
            0
        },
        ratio,
        need_compaction_now,
    }
}

pub fn diagnose(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    now: i64,
    out: &mut Vec<Finding>,
) {
    let c = cleanability(facts, cfg, now);
    let s = Symptom::CompactTopicNotShrinking;
    let active = facts.segments.last().expect("non-empty");
    let eligible =
        (c.need_compaction_now && c.cleanable_bytes > 0) || c.ratio > cfg.min_cleanable_dirty_ratio;
    if c.cleanable_bytes == 0 && c.active_dirty_bytes > 0 && !c.limited_by_lag {
        let roll = active
            .first_batch_timestamp
            .filter(|t| t.0 >= 0)
            .map(|t| t.0.saturating_add(cfg.max_segment_ms()));
        out.push(
            Finding::new(
                s,
                Cause::DirtyDataOnlyInActiveSegment,
                Severity::Warning,
                format!(
                    "all dirty data ({}) is in the active segment {}, which the cleaner never \
                     cleans. It becomes cleanable when the segment rolls: at segment.bytes ({} \
                     more) or on the first append after {} (segment.ms {}, capped by \
                     max.compaction.lag.ms).",
                    human_bytes(c.active_dirty_bytes),
                    active.base_offset,
                    human_bytes((cfg.segment_bytes as u64).saturating_sub(active.size)),
                    roll.map_or("the segment's creation + segment.ms".to_owned(), |r| r
                        .to_string()),
                    human_ms(cfg.max_segment_ms())
                ),
            )
            .settings(&["segment.ms", "segment.bytes", "max.compaction.lag.ms"])
            .num("active_dirty_bytes", c.active_dirty_bytes)
            .num("roll_at_ms", roll),
        );
    }
    if c.limited_by_lag {
        out.push(
            Finding::new(
                s,
                Cause::MinCompactionLagHoldsSegments,
                Severity::Warning,
                format!(
                    "min.compaction.lag.ms ({}) keeps everything from offset {} on out of \
                     cleaning: those segments hold records newer than now - lag.",
                    human_ms(cfg.min_compaction_lag_ms),
                    c.first_uncleanable
                ),
            )
            .settings(&["min.compaction.lag.ms"])
            .num("first_uncleanable_offset", c.first_uncleanable.0),
        );
    }
    if c.cleanable_bytes > 0 && !eligible {
        // dirty / (clean + dirty) > r  <=>  dirty > r * clean / (1 - r)
        let r = cfg.min_cleanable_dirty_ratio;
        let needed = if r < 1.0 {
            (r * c.clean_bytes as f64 / (1.0 - r)).floor() as u64 + 1
        } else {
            u64::MAX
        };
        out.push(
            Finding::new(
                s,
                Cause::DirtyRatioBelowMinimum,
                Severity::Warning,
                format!(
                    "dirty ratio {:.3} ({} cleanable of {} clean + cleanable) is not above \
                     min.cleanable.dirty.ratio {}; the cleaner picks this log once {} more dirty \
                     bytes are cleanable, or when the oldest dirty record is older than \
                     max.compaction.lag.ms ({}).",
                    c.ratio,
                    human_bytes(c.cleanable_bytes),
                    human_bytes(c.clean_bytes + c.cleanable_bytes),
                    r,
                    human_bytes(needed.saturating_sub(c.cleanable_bytes)),
                    human_ms(cfg.max_compaction_lag_ms)
                ),
            )
            .settings(&["min.cleanable.dirty.ratio", "max.compaction.lag.ms"])
            .num("dirty_ratio", c.ratio)
            .num("cleanable_bytes", c.cleanable_bytes)
            .num("clean_bytes", c.clean_bytes),
        );
    } else if eligible {
        out.push(
            Finding::new(
                s,
                Cause::CompactionDueNow,
                Severity::Info,
                format!(
                    "dirty ratio {:.3} (min.cleanable.dirty.ratio {}){}: the cleaner would clean \
                     offsets {}..{} ({}) now; if it does not shrink, check that \
                     log.cleaner.enable=true and the cleaner thread is alive.",
                    c.ratio,
                    cfg.min_cleanable_dirty_ratio,
                    if c.need_compaction_now {
                        ", and max.compaction.lag.ms has passed"
                    } else {
                        ""
                    },
                    c.first_dirty,
                    c.first_uncleanable,
                    human_bytes(c.cleanable_bytes)
                ),
            )
            .settings(&["log.cleaner.enable", "log.cleaner.threads"])
            .num("dirty_ratio", c.ratio),
        );
    }
    tombstones(facts, cfg, settings, now, eligible, out);
    headroom(facts, cfg, settings, &c, out);
}

fn tombstones(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    now: i64,
    eligible: bool,
    out: &mut Vec<Finding>,
) {
    let total: u64 = facts.segments.iter().map(|s| s.tombstones).sum();
    if total == 0 {
        return;
    }
    let horizons: Vec<_> = facts
        .segments
        .iter()
        .flat_map(|s| s.horizon_batches.iter())
        .collect();
    let stamped: u64 = horizons.iter().map(|h| h.tombstones).sum();
    let waiting: Vec<_> = horizons
        .iter()
        .filter(|h| h.delete_horizon.0 > now)
        .collect();
    let s = Symptom::TombstonesLinger;
    if let Some(latest) = waiting.iter().map(|h| h.delete_horizon.0).max() {
        let n: u64 = waiting.iter().map(|h| h.tombstones).sum();
        out.push(
            Finding::new(
                s,
                Cause::TombstonesAwaitDeleteHorizon,
                Severity::Info,
                format!(
                    "{n} tombstone(s) were cleaned once and carry a delete horizon; they are \
                     removed by the first cleaning after it (latest horizon {latest}, {} from \
                     now). The horizon is the first cleaning time + delete.retention.ms ({}).",
                    human_ms(latest - now),
                    human_ms(cfg.delete_retention_ms)
                ),
            )
            .settings(&["delete.retention.ms"])
            .num("tombstones", n)
            .num("latest_horizon_ms", latest),
        );
    }
    let past: u64 = stamped - waiting.iter().map(|h| h.tombstones).sum::<u64>();
    if past > 0 {
        out.push(
            Finding::new(
                s,
                Cause::TombstonesAwaitDeleteHorizon,
                if eligible {
                    Severity::Info
                } else {
                    Severity::Warning
                },
                format!(
                    "{past} tombstone(s) are past their delete horizon but stay until the next \
                     cleaning of this log{}.",
                    if eligible {
                        ", which is due now"
                    } else {
                        ", which waits for the dirty ratio to pass min.cleanable.dirty.ratio"
                    }
                ),
            )
            .settings(&["min.cleanable.dirty.ratio", "max.compaction.lag.ms"])
            .num("tombstones", past),
        );
    }
    let unstamped = total - stamped;
    if unstamped > 0 {
        out.push(
            Finding::new(
                s,
                Cause::TombstonesNotYetCleaned,
                Severity::Info,
                format!(
                    "{unstamped} tombstone(s) have never been cleaned: the first cleaning keeps \
                     them and stamps a horizon of that time + delete.retention.ms ({}); a later \
                     cleaning after the horizon removes them.",
                    human_ms(cfg.delete_retention_ms)
                ),
            )
            .settings(&["delete.retention.ms", "min.cleanable.dirty.ratio"])
            .num("tombstones", unstamped),
        );
    }
    // A consumer rebuilding a cache from the start must reach each
    // tombstone before its horizon passes.
    let bytes = facts.size();
    let read_ms = (bytes as u128 * 1000 / settings.read_bytes_per_sec.max(1) as u128) as i64;
    let short = read_ms >= cfg.delete_retention_ms || cfg.delete_retention_ms < 3_600_000;
    out.push(
        Finding::new(
            Symptom::ConsumerCacheKeepsDeletedKeys,
            Cause::ConsumersMustCatchUpWithinDeleteRetention,
            if short {
                Severity::Warning
            } else {
                Severity::Info
            },
            format!(
                "a consumer that builds a key cache must read from offset {} to the end within \
                 delete.retention.ms ({}) of a tombstone's first cleaning, or the tombstone is \
                 gone and the consumer keeps the deleted key. Reading this partition ({}) at {}/s \
                 takes about {}; consumers paused longer than delete.retention.ms must rebuild \
                 from scratch.",
                facts.log_start_offset,
                human_ms(cfg.delete_retention_ms),
                human_bytes(bytes),
                human_bytes(settings.read_bytes_per_sec),
                human_ms(read_ms)
            ),
        )
        .settings(&["delete.retention.ms"])
        .num("delete_retention_ms", cfg.delete_retention_ms)
        .num("full_read_ms", read_ms),
    );
}

fn headroom(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    c: &Cleanability,
    out: &mut Vec<Finding>,
) {
    // A cleaning rewrites every segment below the first uncleanable offset
    // (clean ones too) into `.cleaned` copies, swapped in group by group;
    // the replaced files stay `.deleted` for file.delete.delay.ms, so a pass
    // shorter than that delay holds both copies at its end.
    let rewritten: u64 = facts
        .segments
        .iter()
        .filter(|s| s.base_offset < c.first_uncleanable)
        .map(|s| s.size)
        .sum();
    if rewritten == 0 && facts.deleted_files_bytes == 0 {
        return;
    }
    let peak = rewritten * settings.cleaner_threads.max(1) as u64;
    let free = facts.free_bytes;
    let tight = free.is_some_and(|f| f < peak.saturating_mul(2));
    out.push(
        Finding::new(
            Symptom::DiskDoublesDuringCompaction,
            Cause::CompactionHeadroom,
            if tight {
                Severity::Warning
            } else {
                Severity::Info
            },
            format!(
                "a cleaning rewrites every segment below offset {} ({}) into new files, at most \
                 segment.bytes ({}) per group; the old files stay as .deleted for \
                 file.delete.delay.ms ({}), so at peak this partition needs up to {} extra{}. \
                 {} of .deleted files are waiting now.",
                c.first_uncleanable,
                human_bytes(rewritten),
                human_bytes(cfg.segment_bytes as u64),
                human_ms(cfg.file_delete_delay_ms),
                human_bytes(peak),
                free.map_or(String::new(), |f| format!(" (free: {})", human_bytes(f))),
                human_bytes(facts.deleted_files_bytes)
            ),
        )
        .settings(&[
            "file.delete.delay.ms",
            "segment.bytes",
            "log.cleaner.threads",
        ])
        .num("peak_extra_bytes", peak)
        .num("free_bytes", free)
        .num("deleted_files_bytes", facts.deleted_files_bytes),
    );
}
