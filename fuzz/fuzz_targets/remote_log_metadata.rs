//! Arbitrary bytes as a `__remote_log_metadata` record value through the
//! tiered-storage metadata decoder (Kafka `RemoteLogMetadataSerde`), as the
//! metadata manager reads them when it replays the topic. Any panic or
//! overflow is a bug, and whatever decodes must encode to bytes that decode
//! to the same event.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_tiered::rlmm::serde::{decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = decode(data) {
        let again = decode(&encode(&event)).expect("an encoded event decodes");
        assert_eq!(again, event);
    }
});
