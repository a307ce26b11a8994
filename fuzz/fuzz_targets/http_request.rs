//! Arbitrary bytes as a request to the broker's HTTP listener
//! (`strata.metrics.listener`): the request-head parser, then the storage
//! console's path parser and its percent-decoding, which any peer that can
//! reach the port drives. Any panic or overflow is a bug; a bad request is
//! a 4xx answer, never a crash.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    strata_broker::fuzz_http_request(data);
});
