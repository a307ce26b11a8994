//! Arbitrary bytes as a `__consumer_offsets` record key and as each value
//! (OffsetCommitValue, GroupMetadataValue, versions 0-4; the seven KIP-848
//! consumer-group values of record types 3-8 and 16, version 0) through the
//! group coordinator's decoders, as its partition load reads them from a log that
//! another broker or an older version wrote. Any panic or overflow is a bug,
//! and whatever decodes must re-encode (at the version it was read with) to
//! bytes that decode to the same key or value.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_broker::fuzz_consumer_offsets_record(data);
});
