//! Dump of `.index` and `.timeindex` files with Kafka's consistency checks
//! against the segment (`dumpIndex`, `dumpTimeIndex`).

use std::path::{Path, PathBuf};

use strata_log::Offset;

use super::lines::{IndexLine, TimeIndexLine};
use super::{add, file_offset, read_or_report, Emitter, Options, Problems};
use strata_log::codec::index::{
    kafka_sanity_check, slot_at, IndexCorruption, IndexSlot, OffsetSlot, TimeSlot,
};

use crate::read::index::{
    lookup_position, offset_slots_in_use, parse_offset_index, parse_time_index, time_slots_in_use,
};
use crate::read::read_all;
use crate::read::records::{last_offset, scan, Scanned};

/// `<dir>/<prefix><suffix>` for the sibling of an index file.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = name.split('.').next().unwrap_or_default();
    path.with_file_name(format!("{prefix}{suffix}"))
}

fn base_or_report(path: &Path, em: &mut Emitter, problems: &mut Problems) -> Option<Offset> {
    match file_offset(path) {
        Ok(o) => Some(Offset(o)),
        Err(msg) => {
            problems.io = true;
            em.error(&msg);
            None
        }
    }
}

/// Kafka's `sanityCheck` (the codec's rules) on an index file's bytes, with
/// the message Kafka's `DumpLogSegments --index-sanity-check` prints.
fn kafka_sanity<S: IndexSlot>(path: &Path, bytes: &[u8], base: Offset) -> Option<String> {
    let abs = super::absolute(path);
    let entries = bytes.len() / S::SIZE;
    let slot = |n| slot_at::<S>(bytes, n);
    let time = S::SIZE == TimeSlot::SIZE;
    let failure = kafka_sanity_check(bytes.len() as u64, entries, base, slot).err()?;
    Some(match failure {
        IndexCorruption::LengthNotMultiple { length, entry_size } => format!(
            "{} file {} is corrupt, found {length} bytes which is neither positive nor a multiple of {entry_size}",
            if time { "Time index" } else { "Index" },
            abs.display()
        ),
        IndexCorruption::LastOffsetBelowBase { last_offset, .. } if time => format!(
            "Corrupt time index found, time index file ({}) has non-zero size but the last offset is {last_offset} which is less than the first offset {base}",
            abs.display()
        ),
        IndexCorruption::LastOffsetBelowBase { last_offset, .. } => format!(
            "Corrupt index found, index file ({}) has non-zero size but the last offset is {last_offset} which is less than the base offset {base}.",
            abs.display()
        ),
        IndexCorruption::LastTimestampBelowFirst { first, last } => format!(
            "Corrupt time index found, time index file ({}) has non-zero size but the last timestamp is {} which is less than the first timestamp {}",
            abs.display(), last.0, first.0
        ),
        other => other.to_string(),
    })
}

/// Print the outcome of `--index-sanity-check`.
fn report_sanity(path: &Path, failure: Option<String>, em: &mut Emitter, problems: &mut Problems) {
    match failure {
        None => {
            em.field("sanity_check", "passed");
            em.line(&format!("{} passed sanity check.", path.display()));
        }
        Some(msg) => {
            problems.corrupt = true;
            em.field("sanity_check", "failed");
            em.error(&msg);
        }
    }
}

/// Dump an offset index.
pub fn dump_index(path: &Path, opts: &Options, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "index");
    let Some(base) = base_or_report(path, em, problems) else {
        return;
    };
    em.field("base_offset", base.get());
    let Some(bytes) = read_or_report(path, em, problems) else {
        return;
    };
    let index = parse_offset_index(&bytes, base);
    if index.entries.is_empty() {
        em.field("empty", true);
        em.line(&format!("{} is empty.", path.display()));
        return;
    }
    if opts.sanity_only {
        report_sanity(
            path,
            kafka_sanity::<OffsetSlot>(path, &bytes, base),
            em,
            problems,
        );
        return;
    }
    let log_path = sibling(path, ".log");
    let Some(log) = read_or_report(&log_path, em, problems) else {
        return;
    };
    let mut mismatches = Vec::new();
    for entry in &index.entries[..offset_slots_in_use(&index.entries)] {
        let found = batch_last_offset_at(&log, entry.position, opts.max_message_size);
        match found {
            Some(last) if last == entry.offset => {}
            Some(last) => mismatches.push((entry.offset.get(), last.get())),
            None => {
                problems.corrupt = true;
                em.error(&format!(
                    "{}: index entry for offset {} points at position {}, where {} has no batch",
                    path.display(),
                    entry.offset,
                    entry.position,
                    log_path.display()
                ));
            }
        }
        let line = IndexLine {
            offset: entry.offset.get(),
            position: entry.position,
        };
        if !opts.verify_only {
            em.line(&line.text());
            em.push("entries", line);
        }
    }
    let json: Vec<_> = mismatches
        .iter()
        .map(|(i, l)| serde_json::json!({"index_offset": i, "log_offset": l}))
        .collect();
    em.field("mismatches", json);
    add(&mut problems.index_mismatches, path, mismatches);
}

/// The last offset of the batch that starts at `position`, reading at most
/// `max_message_size` bytes (Kafka's `fileRecords.slice(position, maxMessageSize)`).
fn batch_last_offset_at(log: &[u8], position: i32, max_message_size: u32) -> Option<Offset> {
    let start = usize::try_from(position).ok()?;
    let end = log
        .len()
        .min(start.saturating_add(max_message_size as usize));
    let slice = log.get(start..end)?;
    let (items, _) = scan(slice);
    items.first().and_then(last_offset)
}

/// Dump a time index.
pub fn dump_time_index(path: &Path, opts: &Options, em: &mut Emitter, problems: &mut Problems) {
    em.field("kind", "timeindex");
    let Some(base) = base_or_report(path, em, problems) else {
        return;
    };
    em.field("base_offset", base.get());
    let Some(bytes) = read_or_report(path, em, problems) else {
        return;
    };
    let index = parse_time_index(&bytes, base);
    if opts.sanity_only {
        report_sanity(
            path,
            kafka_sanity::<TimeSlot>(path, &bytes, base),
            em,
            problems,
        );
        return;
    }
    let Some(log) = read_or_report(&sibling(path, ".log"), em, problems) else {
        return;
    };
    // A missing offset index is an empty one (Kafka's tool would create it).
    let offset_entries = match read_all(&sibling(path, ".index")) {
        Ok(b) => {
            let idx = parse_offset_index(&b, base);
            let used = offset_slots_in_use(&idx.entries);
            idx.entries[..used].to_vec()
        }
        Err(_) => Vec::new(),
    };
    let (mut mismatch, mut out_of_order, mut not_found) = (Vec::new(), Vec::new(), Vec::new());
    let mut prev_ts = -1i64;
    for entry in &index.entries[..time_slots_in_use(&index.entries)] {
        let position = lookup_position(&offset_entries, entry.offset).max(0) as usize;
        let slice = log.get(position..).unwrap_or_default();
        let (items, _) = scan(slice);
        let found = items
            .iter()
            .find(|it| last_offset(it).is_some_and(|l| l >= entry.offset));
        match found {
            None => not_found.push((entry.offset.get(), -1)),
            Some(it) if last_offset(it) != Some(entry.offset) => {
                not_found.push((entry.offset.get(), last_offset(it).map_or(-1, |o| o.get())))
            }
            Some(it) => {
                let max_ts = max_record_timestamp(it);
                if max_ts != entry.timestamp.0 {
                    mismatch.push((entry.timestamp.0, max_ts));
                }
                if prev_ts >= entry.timestamp.0 {
                    out_of_order.push((entry.timestamp.0, prev_ts));
                }
            }
        }
        let line = TimeIndexLine {
            timestamp: entry.timestamp.0,
            offset: entry.offset.get(),
        };
        if !opts.verify_only {
            em.line(&line.text());
            em.push("entries", line);
        }
        prev_ts = entry.timestamp.0;
    }
    let pairs = |v: &[(i64, i64)], a: &str, b: &str| -> Vec<serde_json::Value> {
        v.iter()
            .map(|(x, y)| serde_json::json!({a: x, b: y}))
            .collect()
    };
    em.field(
        "timestamp_mismatches",
        pairs(&mismatch, "index_timestamp", "log_timestamp"),
    );
    em.field(
        "out_of_order_timestamps",
        pairs(&out_of_order, "index_timestamp", "previous_index_timestamp"),
    );
    em.field(
        "offsets_not_found",
        pairs(&not_found, "index_offset", "log_offset"),
    );
    add(&mut problems.time_mismatches, path, mismatch);
    add(&mut problems.time_out_of_order, path, out_of_order);
    add(&mut problems.time_not_found, path, not_found);
}

/// The largest record timestamp of a batch (Kafka iterates the records), or
/// -1 when the records cannot be read.
fn max_record_timestamp(item: &Scanned<'_>) -> i64 {
    match item {
        Scanned::V2 { batch, .. } => {
            let mut scratch = Vec::new();
            match batch.record_iter(&mut scratch) {
                Ok(iter) => iter
                    .filter_map(Result::ok)
                    .map(|r| r.timestamp.0)
                    .fold(-1, i64::max),
                Err(_) => -1,
            }
        }
        Scanned::Legacy { entry, .. } => entry
            .records()
            .map(|rs| rs.iter().map(|r| r.timestamp.0).fold(-1, i64::max))
            .unwrap_or(entry.timestamp.0),
        Scanned::Corrupt { .. } => -1,
    }
}
