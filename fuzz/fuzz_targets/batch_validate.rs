//! Arbitrary bytes through every record-batch parser: the segment scanner,
//! `validate_batch`, `validate_batch_deep`, record iteration (with
//! decompression), the leader's client-append validation and the legacy
//! magic 0/1 reader. Any panic, overflow or unbounded allocation is a bug.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_log::batch::{
    read_legacy_entry, validate_batch, validate_batch_deep_with, validate_client_records_with,
    AppendValidation, BatchScanner, BatchView, TimestampType, MAGIC_V2,
};
use strata_log::Timestamp;

/// Decompressed-size cap, small enough that libFuzzer's RSS limit never trips.
const LIMIT: usize = 4 << 20;

fuzz_target!(|data: &[u8]| {
    let mut scratch = Vec::new();
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
        let cfg = AppendValidation {
            max_message_bytes: 1 << 20,
            compacted,
            timestamp_type,
            timestamp_before_max_ms: 1 << 40,
            timestamp_after_max_ms: 3_600_000,
            now: Timestamp(1_700_000_000_000),
        };
        if let Err(e) = validate_client_records_with(data, &cfg, &mut scratch, LIMIT) {
            let _ = (e.class(), e.to_string());
        }
    }
});
