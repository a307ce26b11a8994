//! Dump of a `.log` segment (or KRaft `.checkpoint` snapshot): Kafka's
//! `dumpLog` and `printBatchLevel`.

use std::path::Path;

use strata_log::batch::{BatchView, ControlRecordType, EndTransactionMarker, LegacyEntry, Record};

use super::lines::{BatchLine, ControlLine, RecordLine};
use super::offsets_log::OffsetsLogRecord;
use super::txn_log::TxnLogRecord;
use super::{file_offset, Emitter, Options, Problems};
use crate::read::records::{scan, Scanned};
use crate::read::{read_prefix, ReadError};

/// Header line(s) before the batches: the segment's base offset, or the
/// KRaft snapshot id.
fn print_header(path: &Path, em: &mut Emitter) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.ends_with(".log") {
        em.field("kind", "log");
        let start = file_offset(path)?;
        em.field("log_starting_offset", start);
        em.line(&format!("Log starting offset: {start}"));
    } else if name == "bootstrap.checkpoint" {
        em.field("kind", "kraft_bootstrap_snapshot");
        em.line("KRaft bootstrap snapshot");
    } else {
        em.field("kind", "kraft_snapshot");
        // <20-digit end offset>-<10-digit epoch>.checkpoint
        let stem = name.trim_end_matches(".checkpoint");
        let parsed = stem
            .split_once('-')
            .and_then(|(o, e)| Some((o.parse::<i64>().ok()?, e.parse::<i32>().ok()?)));
        let (offset, epoch) =
            parsed.ok_or_else(|| format!("{}: not a KRaft snapshot file name", path.display()))?;
        em.field("snapshot_end_offset", offset);
        em.field("snapshot_epoch", epoch);
        em.line(&format!("Snapshot end offset: {offset}, epoch: {epoch}"));
    }
    Ok(())
}

/// Tracks record offsets across a file for the "Non-consecutive offsets" report.
struct OffsetTrail {
    last: Option<i64>,
    pairs: Vec<(i64, i64)>,
}

impl OffsetTrail {
    fn see(&mut self, offset: i64) {
        if let Some(last) = self.last {
            if offset != last + 1 {
                self.pairs.push((last, offset));
            }
        }
        self.last = Some(offset);
    }
}

/// Dump one log file.
pub fn dump_log(path: &Path, opts: &Options, em: &mut Emitter, problems: &mut Problems) {
    if let Err(msg) = print_header(path, em) {
        em.error(&msg);
        problems.io = true;
        return;
    }
    let bytes = match read_prefix(path, u64::from(opts.max_bytes)) {
        Ok(b) => b,
        Err(e) => return io_error(e, em, problems),
    };
    let (items, valid_end) = scan(&bytes);
    let mut trail = OffsetTrail {
        last: None,
        pairs: Vec::new(),
    };
    let mut batches = 0usize;
    for item in &items {
        match item {
            Scanned::V2 { position, batch } => {
                let mut line = v2_line(*position, batch);
                if !line.is_valid {
                    problems.corrupt = true;
                }
                if opts.deep {
                    let records = v2_records(path, *position, batch, opts, em, problems);
                    records.iter().for_each(|r| trail.see(r.offset));
                    line.records = Some(records);
                }
                emit_batch(line, opts, em);
            }
            Scanned::Legacy { position, entry } => {
                let mut line = legacy_line(*position, entry);
                if !line.is_valid {
                    problems.corrupt = true;
                }
                if opts.deep {
                    let records = legacy_records(path, *position, entry, opts, em, problems);
                    records.iter().for_each(|r| trail.see(r.offset));
                    line.records = Some(records);
                }
                emit_batch(line, opts, em);
            }
            Scanned::Corrupt {
                position, error, ..
            } => {
                problems.corrupt = true;
                em.error(&format!(
                    "{}: corrupt batch at position {position}: {error}",
                    path.display()
                ));
            }
        }
        batches += 1;
    }
    em.field("batch_count", batches);
    em.field("valid_bytes", valid_end);
    let trailing = bytes.len() - valid_end;
    em.field("trailing_invalid_bytes", trailing);
    if trailing > 0 && opts.max_bytes == i32::MAX as u32 {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        em.line(&format!(
            "Found {trailing} invalid bytes at the end of {name}"
        ));
    }
    em.field("non_consecutive_offsets", &trail.pairs);
    super::add(&mut problems.non_consecutive, path, trail.pairs);
}

fn io_error(e: ReadError, em: &mut Emitter, problems: &mut Problems) {
    problems.io = true;
    em.error(&e.to_string());
}

fn emit_batch(line: BatchLine, opts: &Options, em: &mut Emitter) {
    if em.is_json() {
        em.push("batches", &line);
        return;
    }
    em.line(&line.text());
    for r in line.records.iter().flatten() {
        em.line(&r.text(line.timestamp_type, opts.skip_record_metadata));
    }
}

fn v2_line(position: usize, b: &BatchView<'_>) -> BatchLine {
    BatchLine {
        position: position as u64,
        magic: b.magic(),
        base_offset: Some(b.base_offset().get()),
        last_offset: b.last_offset().get(),
        count: Some(b.records_count()),
        base_sequence: Some(b.base_sequence()),
        last_sequence: Some(b.last_sequence()),
        producer_id: Some(b.producer_id().0),
        producer_epoch: Some(b.producer_epoch().0),
        partition_leader_epoch: Some(b.partition_leader_epoch().0),
        is_transactional: Some(b.is_transactional()),
        is_control: Some(b.is_control()),
        delete_horizon_ms: Some(b.delete_horizon().map(|t| t.0)),
        timestamp_type: b.timestamp_type().name(),
        max_timestamp: b.max_timestamp().0,
        size: b.size() as u64,
        compresscodec: codec_name(b.compression().map(|c| c.name()), b.compression_id()),
        crc: b.crc(),
        // Kafka's DefaultRecordBatch.isValid: big enough and the CRC matches.
        is_valid: b.is_crc_valid(),
        records: None,
    }
}

fn codec_name(name: Option<&'static str>, id: u8) -> String {
    name.map_or_else(|| format!("unknown({id})"), str::to_owned)
}

/// UTF-8 text of a key or value, as Kafka's `StringDecoder` (invalid bytes replaced).
fn text_of(bytes: Option<&[u8]>) -> Option<String> {
    bytes.map(|b| String::from_utf8_lossy(b).into_owned())
}

/// What a record line prints after its metadata: with `--print-data-log`
/// the key and value as UTF-8, with `--transaction-log-decoder` the
/// `__transaction_state` texts, with `--offsets-decoder` the
/// `__consumer_offsets` texts (an undecodable record is reported on
/// stderr and printed with whatever could be decoded).
struct Data {
    key: Option<String>,
    payload: Option<String>,
    transaction_log: Option<TxnLogRecord>,
    consumer_offsets: Option<OffsetsLogRecord>,
}

/// Where a record sits, for error messages.
struct RecordAt<'p> {
    path: &'p Path,
    position: usize,
    offset: i64,
}

impl Data {
    fn none() -> Self {
        Data {
            key: None,
            payload: None,
            transaction_log: None,
            consumer_offsets: None,
        }
    }
}

fn data_of(
    at: &RecordAt<'_>,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    opts: &Options,
    em: &mut Emitter,
    problems: &mut Problems,
) -> Data {
    if !opts.print_data {
        return Data::none();
    }
    if opts.offsets {
        return offsets_data_of(at, key, value, em, problems);
    }
    if !opts.transaction_log {
        return Data {
            key: text_of(key),
            payload: text_of(value),
            transaction_log: None,
            consumer_offsets: None,
        };
    }
    match super::txn_log::decode(key, value) {
        Ok(record) => {
            let (key, payload) = record.texts();
            Data {
                key: Some(key),
                payload,
                transaction_log: Some(record),
                consumer_offsets: None,
            }
        }
        Err(e) => undecodable(at, "__transaction_state", &e, e.key_text(), em, problems),
    }
}

/// [`data_of`] with `--offsets-decoder`.
fn offsets_data_of(
    at: &RecordAt<'_>,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    em: &mut Emitter,
    problems: &mut Problems,
) -> Data {
    match super::offsets_log::decode(at.offset, key, value) {
        Ok(record) => {
            let (key, payload) = record.texts();
            Data {
                key: Some(key),
                payload,
                transaction_log: None,
                consumer_offsets: Some(record),
            }
        }
        Err(e) => undecodable(at, "__consumer_offsets", &e, e.key_text(), em, problems),
    }
}

/// Why a control record could not be described.
#[derive(Debug, thiserror::Error)]
enum ControlError {
    #[error(transparent)]
    Batch(#[from] strata_log::batch::BatchError),
    #[error(transparent)]
    Kraft(super::kraft::KraftError),
}

fn control_of(record: &Record<'_>) -> Result<ControlLine, ControlError> {
    let ty = ControlRecordType::parse_key(record.key)?;
    Ok(match ty {
        ControlRecordType::Abort | ControlRecordType::Commit => {
            let marker = EndTransactionMarker::parse_value(ty, record.value)?;
            ControlLine::EndTxnMarker {
                marker: marker.control_type.name(),
                coordinator_epoch: marker.coordinator_epoch,
            }
        }
        other => match super::kraft::describe(other, record.value) {
            Some(Ok((name, message))) => ControlLine::Kraft { name, message },
            Some(Err(e)) => return Err(ControlError::Kraft(e)),
            None => ControlLine::Other {
                name: other.name(),
                id: other.id(),
            },
        },
    })
}

fn v2_records(
    path: &Path,
    position: usize,
    b: &BatchView<'_>,
    opts: &Options,
    em: &mut Emitter,
    problems: &mut Problems,
) -> Vec<RecordLine> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let at = |offset| RecordAt {
        path,
        position,
        offset,
    };
    let iter = match b.record_iter(&mut scratch) {
        Ok(it) => it,
        Err(e) => {
            problems.corrupt = true;
            em.error(&format!(
                "{}: cannot read the records of the batch at position {position}: {e}",
                path.display()
            ));
            return out;
        }
    };
    for rec in iter {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                problems.corrupt = true;
                em.error(&format!(
                    "{}: batch at position {position}: {e}",
                    path.display()
                ));
                break;
            }
        };
        let control = if b.is_control() {
            match control_of(&rec) {
                Ok(c) => Some(c),
                Err(e) => {
                    problems.corrupt = true;
                    em.error(&format!(
                        "{}: control record at offset {} (batch at position {position}): {e}",
                        path.display(),
                        rec.offset
                    ));
                    None
                }
            }
        } else {
            None
        };
        let data = if b.is_control() {
            Data::none()
        } else {
            data_of(
                &at(rec.offset.get()),
                rec.key,
                rec.value,
                opts,
                em,
                problems,
            )
        };
        out.push(RecordLine {
            offset: rec.offset.get(),
            timestamp: rec.timestamp.0,
            key_size: rec.key.map_or(-1, |k| k.len() as i32),
            value_size: rec.value.map_or(-1, |v| v.len() as i32),
            sequence: Some(rec.sequence),
            header_keys: Some(rec.headers.map(|h| h.key_str().into_owned()).collect()),
            is_valid: None,
            crc: None,
            control,
            key: data.key,
            payload: data.payload,
            transaction_log: data.transaction_log,
            consumer_offsets: data.consumer_offsets,
        });
    }
    out
}

fn legacy_line(position: usize, e: &LegacyEntry<'_>) -> BatchLine {
    BatchLine {
        position: position as u64,
        magic: e.magic,
        base_offset: None,
        last_offset: e.offset.get(),
        count: None,
        base_sequence: None,
        last_sequence: None,
        producer_id: None,
        producer_epoch: None,
        partition_leader_epoch: None,
        is_transactional: None,
        is_control: None,
        delete_horizon_ms: None,
        timestamp_type: e.timestamp_type().map_or("NoTimestampType", |t| t.name()),
        max_timestamp: e.timestamp.0,
        size: e.size() as u64,
        compresscodec: codec_name(
            e.compression().ok().map(|c| c.name()),
            e.attributes as u8 & 0x07,
        ),
        crc: e.crc,
        is_valid: e.is_crc_valid(),
        records: None,
    }
}

fn legacy_records(
    path: &Path,
    position: usize,
    e: &LegacyEntry<'_>,
    opts: &Options,
    em: &mut Emitter,
    problems: &mut Problems,
) -> Vec<RecordLine> {
    match e.records() {
        Ok(records) => records
            .into_iter()
            .map(|r| {
                let at = RecordAt {
                    path,
                    position,
                    offset: r.offset.get(),
                };
                let data = data_of(
                    &at,
                    r.key.as_deref(),
                    r.value.as_deref(),
                    opts,
                    em,
                    problems,
                );
                RecordLine {
                    offset: r.offset.get(),
                    timestamp: r.timestamp.0,
                    key_size: r.key.as_ref().map_or(-1, |k| k.len() as i32),
                    value_size: r.value.as_ref().map_or(-1, |v| v.len() as i32),
                    sequence: None,
                    header_keys: None,
                    is_valid: Some(r.crc_valid),
                    crc: Some(r.crc),
                    control: None,
                    key: data.key,
                    payload: data.payload,
                    transaction_log: data.transaction_log,
                    consumer_offsets: data.consumer_offsets,
                }
            })
            .collect(),
        Err(err) => {
            problems.corrupt = true;
            em.error(&format!(
                "{}: cannot read the records of the legacy entry at position {position}: {err}",
                path.display()
            ));
            Vec::new()
        }
    }
}

/// A record the `--*-decoder` could not decode: reported (the dump goes on
/// and exits non-zero) and printed with only the key text Kafka prints.
fn undecodable(
    at: &RecordAt<'_>,
    topic: &str,
    error: &dyn std::fmt::Display,
    key: Option<String>,
    em: &mut Emitter,
    problems: &mut Problems,
) -> Data {
    problems.corrupt = true;
    em.error(&format!(
        "{}: {topic} record at offset {} (batch at position {}): {error}",
        at.path.display(),
        at.offset,
        at.position
    ));
    Data {
        key,
        payload: None,
        transaction_log: None,
        consumer_offsets: None,
    }
}
