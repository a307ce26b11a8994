//! "Retention does not fire": what the next retention pass would delete
//! (the library's own [`strata_log::retention::decide`] on the segments as
//! read from disk) and, when it deletes nothing, why the oldest data stays
//! and until when.

use strata_log::retention::{
    decide, DeletionReason, LogSnapshot, RetentionPolicy, SegmentSnapshot, TimestampSource,
};
use strata_log::{LogConfig, Timestamp};

use super::diagnosis::{human_bytes, human_ms, Cause, DoctorSettings, Finding, Severity, Symptom};
use super::scan::PartitionFacts;

/// The partition as retention sees it; the high watermark is the
/// `replication-offset-checkpoint` entry, or the log end when there is none
/// (a single broker's leader raises it to the log end at once).
pub fn snapshot(facts: &PartitionFacts) -> LogSnapshot {
    LogSnapshot {
        segments: facts
            .segments
            .iter()
            .map(|s| SegmentSnapshot {
                base_offset: s.base_offset,
                size: s.size,
                largest_timestamp: s.largest_timestamp(),
                timestamp_source: if s.max_timestamp.0 >= 0 {
                    TimestampSource::Record
                } else {
                    TimestampSource::FileMtime
                },
            })
            .collect(),
        log_start_offset: facts.log_start_offset,
        high_watermark: facts.high_watermark.unwrap_or(facts.log_end_offset),
        log_end_offset: facts.log_end_offset,
    }
}

const S: Symptom = Symptom::RetentionDoesNotFire;

pub fn diagnose(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    now: i64,
    out: &mut Vec<Finding>,
) {
    let snap = snapshot(facts);
    let policy = RetentionPolicy::from_config(cfg);
    let decision = decide(&snap, &policy, now);
    let check = settings.retention_check_interval_ms;
    if !decision.is_empty() {
        let reasons: Vec<&str> = decision
            .deletions
            .iter()
            .map(|d| match d.reason {
                DeletionReason::LogStartOffsetBreach => "below the log start offset",
                DeletionReason::RetentionSize => "retention.bytes",
                DeletionReason::RetentionMs => "retention.ms",
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let oldest_age = decision.deletions.iter().filter_map(|d| d.age_ms).max();
        let overdue = oldest_age
            .map(|a| a - cfg.retention_ms.max(0))
            .filter(|o| *o > check.saturating_mul(2));
        let mut msg = format!(
            "{} segment(s), {}, are deletable now ({}); a running broker deletes them at its next \
             retention pass, within log.retention.check.interval.ms ({}).",
            decision.deletions.len(),
            human_bytes(decision.bytes()),
            reasons.join(", "),
            human_ms(check)
        );
        if let Some(o) = overdue {
            msg.push_str(&format!(
                " They expired {} ago: retention is not running for this log (broker down, \
                 log dir offline, or a very long log.retention.check.interval.ms).",
                human_ms(o)
            ));
        }
        out.push(
            Finding::new(
                S,
                Cause::RetentionDueNow,
                if overdue.is_some() {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                msg,
            )
            .settings(&[
                "log.retention.check.interval.ms",
                "retention.ms",
                "retention.bytes",
            ])
            .num("segments", decision.deletions.len())
            .num("bytes", decision.bytes())
            .num(
                "new_log_start_offset",
                decision.new_log_start_offset.map(|o| o.0),
            ),
        );
        return;
    }
    if !policy.delete {
        out.push(
            Finding::new(
                S,
                Cause::CompactOnlyPolicy,
                Severity::Info,
                format!(
                    "cleanup.policy={}: retention.ms and retention.bytes do not apply; only \
                     compaction and DeleteRecords (log start {}) remove data.",
                    cfg.get_as_string("cleanup.policy").unwrap_or_default(),
                    facts.log_start_offset
                ),
            )
            .settings(&["cleanup.policy"]),
        );
        return;
    }
    if policy.retention_ms < 0 && policy.retention_bytes < 0 {
        out.push(
            Finding::new(
                S,
                Cause::RetentionUnlimited,
                Severity::Warning,
                "retention.ms=-1 and retention.bytes=-1: nothing is ever deleted by retention."
                    .to_owned(),
            )
            .settings(&["retention.ms", "retention.bytes"]),
        );
        return;
    }
    explain_oldest(facts, cfg, &snap, settings, now, out);
}

/// Why the oldest segment is still there and when it goes.
fn explain_oldest(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    snap: &LogSnapshot,
    settings: &DoctorSettings,
    now: i64,
    out: &mut Vec<Finding>,
) {
    let seg = &facts.segments[0];
    let largest = seg.largest_timestamp();
    let ret = cfg.retention_ms;
    let only_active = facts.segments.iter().filter(|s| s.size > 0).count() <= 1
        && facts.segments.last().is_some_and(|s| s.size > 0)
        && facts.segments.len() == 1;
    if ret >= 0 {
        let expires_at = largest.0.saturating_add(ret).saturating_add(1);
        let hw = snap.high_watermark;
        let upper = snap.upper_bound(0);
        if largest.0 > now {
            out.push(
                Finding::new(
                    S,
                    Cause::FutureTimestamp,
                    Severity::Warning,
                    format!(
                        "segment {} has largest timestamp {} ({} in the future, set by a \
                         producer's clock or CreateTime); it cannot expire before {} ({} from \
                         now), and every later segment waits behind it.",
                        seg.base_offset,
                        largest.0,
                        human_ms(largest.0 - now),
                        expires_at,
                        human_ms(expires_at - now)
                    ),
                )
                .settings(&["message.timestamp.after.max.ms", "message.timestamp.type"])
                .num("largest_timestamp", largest.0)
                .num("expires_at_ms", expires_at),
            );
        } else if now - largest.0 > ret && hw < upper {
            out.push(
                Finding::new(
                    S,
                    Cause::HighWatermarkBelow,
                    Severity::Warning,
                    format!(
                        "segment {} expired {} ago but ends at offset {}, above the high \
                         watermark {} (replication-offset-checkpoint): nothing at or above the \
                         high watermark is deleted. Followers are not catching up.",
                        seg.base_offset,
                        human_ms(now - largest.0 - ret),
                        upper,
                        hw
                    ),
                )
                .settings(&["min.insync.replicas", "replica.lag.time.max.ms"])
                .num("high_watermark", hw.0)
                .num("segment_upper_bound", upper.0),
            );
        } else if only_active {
            active_holds_all(facts, cfg, now, expires_at, out);
        } else {
            out.push(
                Finding::new(
                    S,
                    Cause::OldestSegmentExpiry,
                    Severity::Info,
                    format!(
                        "the oldest segment {} ({}) expires when its newest record ({}) is older \
                         than retention.ms ({}): at {} ({} from now), then goes at the next \
                         retention pass (within {}).",
                        seg.base_offset,
                        human_bytes(seg.size),
                        largest.0,
                        human_ms(ret),
                        expires_at,
                        human_ms(expires_at - now),
                        human_ms(settings.retention_check_interval_ms)
                    ),
                )
                .settings(&["retention.ms"])
                .num("expires_at_ms", expires_at)
                .num("segment", seg.base_offset.0),
            );
        }
        overshoot(facts, cfg, now, out);
    }
    if cfg.retention_bytes >= 0 {
        let total = facts.size();
        let need = cfg.retention_bytes as u64 + seg.size;
        if total < need {
            out.push(
                Finding::new(
                    S,
                    Cause::BelowRetentionBytes,
                    Severity::Info,
                    format!(
                        "the log holds {} against retention.bytes {}; size retention removes \
                         the oldest segment ({}) only once the log reaches {} ({} more).",
                        human_bytes(total),
                        human_bytes(cfg.retention_bytes as u64),
                        human_bytes(seg.size),
                        human_bytes(need),
                        human_bytes(need - total)
                    ),
                )
                .settings(&["retention.bytes", "segment.bytes"])
                .num("log_bytes", total)
                .num("bytes_until_deletion", need - total),
            );
        }
    }
}

fn active_holds_all(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    now: i64,
    expires_at: i64,
    out: &mut Vec<Finding>,
) {
    let seg = &facts.segments[0];
    let first = seg.first_batch_timestamp.unwrap_or(Timestamp::NONE);
    let roll_at = (first.0 >= 0).then(|| first.0.saturating_add(cfg.max_segment_ms()));
    let oldest_age = (first.0 >= 0).then(|| now - first.0);
    let outlived = oldest_age.is_some_and(|a| a > cfg.retention_ms);
    let mut msg = format!(
        "all {} of data is in the active segment {}; a segment is deleted only as a whole, when \
         its newest record ({}) is older than retention.ms ({}): not before {} ({} from now), and \
         every new record pushes that later.",
        human_bytes(seg.size),
        seg.base_offset,
        seg.largest_timestamp().0,
        human_ms(cfg.retention_ms),
        expires_at,
        human_ms(expires_at - now)
    );
    if let Some(r) = roll_at {
        msg.push_str(&format!(
            " It rolls on the first append after {} (first record {} + segment.ms {}); after \
             that it expires retention.ms after its last record.",
            r,
            first.0,
            human_ms(cfg.max_segment_ms())
        ));
    }
    if let Some(a) = oldest_age.filter(|_| outlived) {
        msg.push_str(&format!(
            " Its oldest record is already {} old, {} past retention.ms.",
            human_ms(a),
            human_ms(a - cfg.retention_ms)
        ));
    }
    out.push(
        Finding::new(
            S,
            Cause::ActiveSegmentHoldsAllData,
            if outlived {
                Severity::Warning
            } else {
                Severity::Info
            },
            msg,
        )
        .settings(&["segment.ms", "segment.bytes", "retention.ms"])
        .num("active_segment", seg.base_offset.0)
        .num("roll_at_ms", roll_at)
        .num("expires_at_ms", expires_at),
    );
}

/// Records at the start of a segment live `retention.ms` plus the
/// segment's time span (bounded by `segment.ms`).
fn overshoot(facts: &PartitionFacts, cfg: &LogConfig, now: i64, out: &mut Vec<Finding>) {
    let seg = &facts.segments[0];
    let (Some(first), true) = (seg.first_batch_timestamp, seg.max_timestamp.0 >= 0) else {
        return;
    };
    let span = seg.max_timestamp.0 - first.0;
    // Worth saying when the span is a noticeable share of retention.
    if first.0 < 0 || span <= 0 || span.saturating_mul(10) < cfg.retention_ms {
        return;
    }
    let dies_at = seg.max_timestamp.0 + cfg.retention_ms + 1;
    let outlived = now - first.0 > cfg.retention_ms;
    out.push(
        Finding::new(
            S,
            Cause::RetentionPlusSegmentOvershoot,
            if outlived {
                Severity::Warning
            } else {
                Severity::Info
            },
            format!(
                "segment {} spans {} of record time (first {} to last {}): its oldest record is \
                 deleted at {}, {} after its own retention.ms ({}). Records can outlive \
                 retention.ms by up to segment.ms ({}).",
                seg.base_offset,
                human_ms(span),
                first.0,
                seg.max_timestamp.0,
                dies_at,
                human_ms(span),
                human_ms(cfg.retention_ms),
                human_ms(cfg.max_segment_ms())
            ),
        )
        .settings(&["segment.ms", "retention.ms"])
        .num("span_ms", span)
        .num("oldest_record_deleted_at_ms", dies_at),
    );
}
