//! Arbitrary bytes as a `__transaction_state` record key and value through
//! `strata_log::codec::transaction_log`, the one codec the transaction
//! coordinator's load and `strata log dump --transaction-log-decoder` share,
//! as they read a log another broker or an older version wrote. Any panic or
//! overflow is a bug. Whatever decodes must re-encode (keys at v0, values at
//! v0, what Kafka 3.9 writes) to bytes that decode to the same key or value:
//! the same fields, with the partitions of an Empty value dropped (Kafka
//! writes them as null and ignores them on load).
//!
//! The first input byte chooses: even, the rest is a key; odd, a value.

#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_log::codec::transaction_log::{
    decode_key, decode_value, encode_key, encode_value, TxnStatus,
};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, bytes)) = data.split_first() else {
        return;
    };
    if choice % 2 == 0 {
        if let Ok(Some(id)) = decode_key(bytes) {
            assert_eq!(decode_key(&encode_key(&id)), Ok(Some(id)));
        }
        return;
    }
    let Ok(mut value) = decode_value(bytes) else {
        return;
    };
    // v1 compact strings may be longer than a v0 string can hold; the
    // encoder never receives such a topic (Kafka limits names to 249).
    if value
        .partitions
        .iter()
        .any(|(t, _)| t.len() > i16::MAX as usize)
    {
        return;
    }
    let again = decode_value(&encode_value(&value)).expect("a re-encoded value decodes");
    if value.status == TxnStatus::Empty {
        value.partitions.clear();
    }
    assert_eq!(again, value);
});
