//! "Segments roll too small", the next expected roll, index fill levels and
//! "broker restart very slow" (bytes to recover after the recovery point,
//! segments to open).

use strata_log::LogConfig;

use super::diagnosis::{human_bytes, human_ms, Cause, DoctorSettings, Finding, Severity, Symptom};
use super::scan::{PartitionFacts, SegmentFacts};

/// Offset- and time-index capacity of a segment under `cfg`.
fn max_entries(cfg: &LogConfig) -> (usize, usize) {
    let b = cfg.segment_index_bytes.max(0) as usize;
    (b / 8, b / 12)
}

/// Kafka's `isFull` for a rolled segment's (trimmed) indexes.
fn rolled_by_index(seg: &SegmentFacts, cfg: &LogConfig) -> Option<Cause> {
    let (om, tm) = max_entries(cfg);
    if seg
        .time_index
        .is_some_and(|t| tm > 0 && t.entries + 1 >= tm)
    {
        Some(Cause::TimeIndexFilledFirst)
    } else if seg.offset_index.is_some_and(|o| om > 0 && o.entries >= om) {
        Some(Cause::OffsetIndexFilledFirst)
    } else {
        None
    }
}

pub fn diagnose(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    now: i64,
    out: &mut Vec<Finding>,
) {
    small_segments(facts, cfg, out);
    next_roll(facts, cfg, now, out);
    index_fill(facts, cfg, out);
    restart(facts, cfg, settings, out);
}

fn small_segments(facts: &PartitionFacts, cfg: &LogConfig, out: &mut Vec<Finding>) {
    let rolled = &facts.segments[..facts.segments.len() - 1];
    let (om, tm) = max_entries(cfg);
    for cause in [Cause::TimeIndexFilledFirst, Cause::OffsetIndexFilledFirst] {
        let hit: Vec<&SegmentFacts> = rolled
            .iter()
            .filter(|s| rolled_by_index(s, cfg) == Some(cause))
            .collect();
        if hit.is_empty() {
            continue;
        }
        let avg = hit.iter().map(|s| s.size).sum::<u64>() / hit.len() as u64;
        let (what, cap, per) = if cause == Cause::TimeIndexFilledFirst {
            ("time index", tm, 12)
        } else {
            ("offset index", om, 8)
        };
        out.push(
            Finding::new(
                Symptom::SegmentsRollTooSmall,
                cause,
                Severity::Warning,
                format!(
                    "{} segment(s) rolled because the {what} filled ({cap} entries of {per} \
                     bytes in segment.index.bytes {}) before segment.bytes ({}); they average {}. \
                     One entry is added per index.interval.bytes ({}) or per append when batches \
                     are larger: raise segment.index.bytes or index.interval.bytes.",
                    hit.len(),
                    cfg.segment_index_bytes,
                    human_bytes(cfg.segment_bytes as u64),
                    human_bytes(avg),
                    cfg.index_interval_bytes
                ),
            )
            .settings(&["segment.index.bytes", "index.interval.bytes"])
            .num("segments", hit.len())
            .num("average_bytes", avg)
            .num("max_entries", cap),
        );
    }
    let by_time: Vec<&SegmentFacts> = rolled
        .iter()
        .filter(|s| rolled_by_index(s, cfg).is_none())
        .filter(|s| s.size.saturating_mul(2) < cfg.segment_bytes as u64)
        .filter(|s| {
            s.first_batch_timestamp.is_some_and(|f| {
                f.0 >= 0
                    && s.max_timestamp.0 - f.0
                        >= cfg.max_segment_ms() - cfg.max_roll_jitter_ms() - 1
            })
        })
        .collect();
    if !by_time.is_empty() {
        let avg = by_time.iter().map(|s| s.size).sum::<u64>() / by_time.len() as u64;
        out.push(
            Finding::new(
                Symptom::SegmentsRollTooSmall,
                Cause::RolledBySegmentMs,
                Severity::Warning,
                format!(
                    "{} segment(s) rolled by segment.ms ({}) at an average of {}, far below \
                     segment.bytes ({}): the topic writes too slowly to fill segments in \
                     segment.ms. Raise segment.ms (or, on compacted topics, \
                     max.compaction.lag.ms, which caps it).",
                    by_time.len(),
                    human_ms(cfg.max_segment_ms()),
                    human_bytes(avg),
                    human_bytes(cfg.segment_bytes as u64)
                ),
            )
            .settings(&["segment.ms", "max.compaction.lag.ms"])
            .num("segments", by_time.len())
            .num("average_bytes", avg),
        );
    }
}

fn next_roll(facts: &PartitionFacts, cfg: &LogConfig, now: i64, out: &mut Vec<Finding>) {
    let a = facts.segments.last().expect("non-empty");
    if a.size == 0 {
        out.push(
            Finding::new(
                Symptom::NextRoll,
                Cause::NextRoll,
                Severity::Info,
                format!(
                    "the active segment {} is empty; it never rolls on time, only once data \
                     arrives.",
                    a.base_offset
                ),
            )
            .settings(&["segment.ms", "segment.bytes"]),
        );
        return;
    }
    let left = (cfg.segment_bytes as u64).saturating_sub(a.size);
    let first = a.first_batch_timestamp.filter(|t| t.0 >= 0);
    let roll_at = first.map(|f| f.0.saturating_add(cfg.max_segment_ms()));
    let jitter = cfg.max_roll_jitter_ms();
    let time_part = match roll_at {
        Some(r) => format!(
            "on the first append with a timestamp after {r} ({} from now{}; first record {} + \
             segment.ms {})",
            human_ms(r - now),
            if jitter > 0 {
                format!(", up to {} earlier by segment.jitter.ms", human_ms(jitter))
            } else {
                String::new()
            },
            first.map_or(0, |f| f.0),
            human_ms(cfg.max_segment_ms())
        ),
        None => format!(
            "segment.ms ({}) after the broker created or loaded it (no record timestamps)",
            human_ms(cfg.max_segment_ms())
        ),
    };
    out.push(
        Finding::new(
            Symptom::NextRoll,
            Cause::NextRoll,
            Severity::Info,
            format!(
                "the active segment {} ({} of segment.bytes {}) rolls after {} more bytes, or \
                 {time_part}, or when an index fills. Rolls happen only on an append.",
                a.base_offset,
                human_bytes(a.size),
                human_bytes(cfg.segment_bytes as u64),
                human_bytes(left)
            ),
        )
        .settings(&["segment.bytes", "segment.ms", "segment.jitter.ms"])
        .num("bytes_until_roll", left)
        .num("roll_at_ms", roll_at),
    );
}

fn index_fill(facts: &PartitionFacts, cfg: &LogConfig, out: &mut Vec<Finding>) {
    let a = facts.segments.last().expect("non-empty");
    let (om, tm) = max_entries(cfg);
    let oe = a.offset_index.map_or(0, |i| i.entries);
    let te = a.time_index.map_or(0, |i| i.entries);
    let pct = |e: usize, m: usize| {
        if m == 0 {
            0.0
        } else {
            e as f64 * 100.0 / m as f64
        }
    };
    let (op, tp) = (pct(oe, om), pct(te, tm));
    // Projected entries at segment.bytes: one per index.interval.bytes, or
    // per batch when batches are larger.
    let avg_batch = a.size.checked_div(a.batches).unwrap_or(0);
    let per_entry = (cfg.index_interval_bytes.max(1) as u64)
        .max(avg_batch)
        .max(1);
    let projected = cfg.segment_bytes as u64 / per_entry;
    let will_fill = tm > 0 && projected + 1 >= tm as u64;
    out.push(
        Finding::new(
            Symptom::IndexFill,
            Cause::IndexFill,
            if will_fill || op >= 90.0 || tp >= 90.0 {
                Severity::Warning
            } else {
                Severity::Info
            },
            format!(
                "active segment {}: offset index {oe}/{om} entries ({op:.1}%), time index \
                 {te}/{tm} ({tp:.1}%). At about one entry per {} a full segment needs ~{} \
                 entries{}.",
                a.base_offset,
                human_bytes(per_entry),
                projected,
                if will_fill {
                    ": the time index fills before segment.bytes, so segments roll small \
                     (raise segment.index.bytes or index.interval.bytes)"
                } else {
                    ""
                }
            ),
        )
        .settings(&["segment.index.bytes", "index.interval.bytes"])
        .num("offset_index_entries", oe)
        .num("offset_index_max_entries", om)
        .num("time_index_entries", te)
        .num("time_index_max_entries", tm)
        .num("projected_entries_per_segment", projected),
    );
}

fn restart(
    facts: &PartitionFacts,
    cfg: &LogConfig,
    settings: &DoctorSettings,
    out: &mut Vec<Finding>,
) {
    let rp = facts.recovery_point.unwrap_or(facts.log_start_offset);
    // Recovery re-reads whole segments from the one holding the recovery point.
    let from = facts
        .segments
        .iter()
        .rposition(|s| s.base_offset <= rp)
        .unwrap_or(0);
    let bytes: u64 = facts.segments[from..].iter().map(|s| s.size).sum();
    let rate = settings.read_bytes_per_sec.max(1);
    let est_ms = (bytes as u128 * 1000 / rate as u128) as i64;
    let n = facts.segments.len();
    if facts.clean_shutdown_marker {
        out.push(
            Finding::new(
                Symptom::BrokerRestartVerySlow,
                Cause::RecoveryAfterUncleanShutdown,
                Severity::Info,
                format!(
                    "the log dir has .kafka_cleanshutdown: the next start skips recovery and \
                     only opens {n} segment(s). After a crash it would re-read {} from offset \
                     {rp} (recovery-point-offset-checkpoint), about {} at {}/s.",
                    human_bytes(bytes),
                    human_ms(est_ms),
                    human_bytes(rate)
                ),
            )
            .settings(&[
                "num.recovery.threads.per.data.dir",
                "flush.ms",
                "segment.bytes",
            ])
            .num("recovery_bytes", bytes)
            .num("estimated_recovery_ms", est_ms),
        );
    } else {
        out.push(
            Finding::new(
                Symptom::BrokerRestartVerySlow,
                Cause::RecoveryAfterUncleanShutdown,
                if est_ms > 60_000 {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                format!(
                    "no clean-shutdown marker: the next start recovers {} segment(s), {} from \
                     offset {rp}{} to the end, about {} at {}/s on {} recovery thread(s). Each \
                     roll flushes and moves the recovery point, so a smaller segment.bytes or a \
                     flush.ms bounds this.",
                    n - from,
                    human_bytes(bytes),
                    if facts.recovery_point.is_none() {
                        " (no recovery-point checkpoint entry: everything)"
                    } else {
                        ""
                    },
                    human_ms(est_ms),
                    human_bytes(rate),
                    settings.recovery_threads
                ),
            )
            .settings(&[
                "num.recovery.threads.per.data.dir",
                "segment.bytes",
                "flush.ms",
            ])
            .num("recovery_bytes", bytes)
            .num("estimated_recovery_ms", est_ms),
        );
    }
    if n > 1_000 {
        out.push(
            Finding::new(
                Symptom::BrokerRestartVerySlow,
                Cause::ManySegments,
                Severity::Warning,
                format!(
                    "{n} segments: each is listed, opened and index-checked at startup, and \
                     each open segment costs file descriptors and memory maps. Average segment \
                     {} vs segment.bytes {}.",
                    human_bytes(facts.size() / n as u64),
                    human_bytes(cfg.segment_bytes as u64)
                ),
            )
            .settings(&["segment.bytes", "segment.ms"])
            .num("segments", n),
        );
    }
}
