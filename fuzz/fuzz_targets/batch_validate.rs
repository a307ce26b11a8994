//! Arbitrary bytes through every record-batch parser: the segment scanner,
//! `validate_batch`, `validate_batch_deep`, record iteration (with
//! decompression), the leader's client-append validation and the legacy
//! magic 0/1 reader. Any panic, overflow or unbounded allocation is a bug.
//!
//! Every codec's decoder (gzip, snappy, lz4, zstd) is reached on every input,
//! whatever the fuzzer has found so far, in two more ways:
//!
//! - the input itself as a compressed stream of each codec; a stream that
//!   decodes must also survive Strata's own encoder (compress, decompress,
//!   same bytes);
//! - a valid v2 batch of each codec built from the input (first byte: how
//!   many 3-byte `position, xor` edits follow; the rest: record keys and
//!   values), damaged by those edits inside its compressed section, through
//!   record iteration and deep validation. Undamaged, it must validate as a
//!   client append and give back every record it was built from.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_log::batch::compression::{compress, decompress};
use strata_log::batch::{
    read_legacy_entry, validate_batch, validate_batch_deep_with, validate_client_records_with,
    AppendValidation, BatchBuilder, BatchScanner, BatchView, Compression, RecordHeader,
    TimestampType, MAGIC_V2,
};
use strata_log::{Offset, Timestamp};

/// Decompressed-size cap, small enough that libFuzzer's RSS limit never trips.
const LIMIT: usize = 4 << 20;

const CODECS: [Compression; 4] = [
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// Header bytes before a v2 batch's records section.
const RECORDS_AT: usize = 61;

const NOW: Timestamp = Timestamp(1_700_000_000_000);

fn client_validation(compacted: bool, timestamp_type: TimestampType) -> AppendValidation {
    AppendValidation {
        max_message_bytes: 1 << 20,
        compacted,
        timestamp_type,
        timestamp_before_max_ms: 1 << 40,
        timestamp_after_max_ms: 3_600_000,
        now: NOW,
    }
}

/// The input as a compressed stream of every codec.
fn raw_streams(data: &[u8]) {
    for codec in CODECS {
        if let Ok(plain) = decompress(codec, data, LIMIT) {
            let again = decompress(codec, &compress(codec, &plain), LIMIT)
                .unwrap_or_else(|e| panic!("{codec:?}: Strata's own stream fails: {e}"));
            assert_eq!(again, plain, "{codec:?} round trip");
        }
    }
}

/// A valid batch of every codec built from the input, then damaged.
fn damaged_batches(data: &[u8], scratch: &mut Vec<u8>) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let edits_len = (usize::from(n % 8) * 3).min(rest.len());
    let (edits, payload) = rest.split_at(edits_len);
    // Records of up to 64 payload bytes each: key = first half, value = rest;
    // every third record has a header, every fifth a null value.
    let chunks: Vec<&[u8]> = payload.chunks(64).take(64).collect();
    if chunks.is_empty() {
        return;
    }
    for codec in CODECS {
        let mut builder = BatchBuilder::new(Offset(0)).compression(codec);
        for (i, chunk) in chunks.iter().enumerate() {
            let (key, value) = chunk.split_at(chunk.len() / 2);
            let headers = if i % 3 == 0 {
                vec![RecordHeader::new("h", Some(key))]
            } else {
                Vec::new()
            };
            let value = (i % 5 != 4).then_some(value);
            builder.append(NOW, Some(key), value, &headers);
        }
        let mut batch = builder.build();
        if edits.is_empty() {
            let view = BatchView::parse(&batch).expect("a built batch parses");
            validate_batch_deep_with(&view, scratch, LIMIT)
                .unwrap_or_else(|e| panic!("{codec:?}: a built batch fails deep validation: {e}"));
            let records: Vec<_> = view
                .record_iter_with_limit(scratch, LIMIT)
                .expect("a built batch decompresses")
                .map(|r| r.expect("a built record decodes").to_owned_record())
                .collect();
            assert_eq!(records.len(), chunks.len(), "{codec:?} record count");
            for (i, (record, chunk)) in records.iter().zip(&chunks).enumerate() {
                let (key, value) = chunk.split_at(chunk.len() / 2);
                assert_eq!(record.key.as_deref(), Some(key), "{codec:?} key {i}");
                let value = (i % 5 != 4).then_some(value);
                assert_eq!(record.value.as_deref(), value, "{codec:?} value {i}");
            }
            validate_client_records_with(
                &batch,
                &client_validation(true, TimestampType::CreateTime),
                scratch,
                LIMIT,
            )
            .unwrap_or_else(|e| panic!("{codec:?}: a built batch fails client validation: {e}"));
            continue;
        }
        let section = batch.len() - RECORDS_AT;
        for edit in edits.chunks_exact(3) {
            let at = usize::from(u16::from_be_bytes([edit[0], edit[1]])) % section;
            batch[RECORDS_AT + at] ^= edit[2];
        }
        let view = BatchView::parse(&batch).expect("edits keep the header");
        let _ = validate_batch_deep_with(&view, scratch, LIMIT);
        if let Ok(records) = view.record_iter_with_limit(scratch, LIMIT) {
            for record in records.flatten() {
                let _ = record.to_owned_record();
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut scratch = Vec::new();
    raw_streams(data);
    damaged_batches(data, &mut scratch);
    for item in BatchScanner::new(data) {
        let Ok((pos, prefix)) = item else { break };
        if prefix.magic >= MAGIC_V2 {
            if let Ok(view) = BatchView::parse(&data[pos..]) {
                let _ = validate_batch(&view);
                let _ = validate_batch_deep_with(&view, &mut scratch, LIMIT);
                if let Ok(records) = view.record_iter_with_limit(&mut scratch, LIMIT) {
                    for record in records.flatten() {
                        let _ = record.to_owned_record();
                    }
                }
            }
        } else if let Ok(entry) = read_legacy_entry(&data[pos..]) {
            let _ = entry.validate();
            let _ = entry.records_with_limit(LIMIT);
        }
    }
    for (compacted, timestamp_type) in [
        (false, TimestampType::CreateTime),
        (true, TimestampType::LogAppendTime),
    ] {
        let cfg = client_validation(compacted, timestamp_type);
        if let Err(e) = validate_client_records_with(data, &cfg, &mut scratch, LIMIT) {
            let _ = (e.class(), e.to_string());
        }
    }
});
