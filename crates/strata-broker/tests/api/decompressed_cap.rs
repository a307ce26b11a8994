//! Guards `strata.max.decompressed.batch.bytes`: a produced compressed batch
//! that inflates beyond the configured cap is refused as CORRUPT_MESSAGE and
//! nothing is stored, one under it is accepted.

use crate::common::*;
use strata_log::batch::{BatchBuilder, Compression};
use strata_log::{Offset, Timestamp};

const CORRUPT_MESSAGE: i16 = 2;
const CAP: usize = 64 * 1024;

/// One gzip batch with one record of `value_len` zero bytes (compresses to
/// far below `max.message.bytes`).
fn inflating_batch(value_len: usize) -> Vec<u8> {
    let value = vec![0u8; value_len];
    let mut b = BatchBuilder::new(Offset(0)).compression(Compression::Gzip);
    b.append(Timestamp(1_000), None, Some(&value), &[]);
    let bytes = b.build();
    assert!(bytes.len() < 4096, "compressed to {} bytes", bytes.len());
    bytes
}

#[tokio::test]
async fn a_batch_above_the_configured_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cap = CAP.to_string();
    let broker = start(dir.path(), &[("strata.max.decompressed.batch.bytes", &cap)]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "z", 1, &[]).await, 0);

    let (code, _) = produce(&mut c, "z", 0, inflating_batch(2 * CAP)).await;
    assert_eq!(code, CORRUPT_MESSAGE);
    let (code, base) = produce(&mut c, "z", 0, inflating_batch(CAP / 2)).await;
    assert_eq!(
        (code, base),
        (0, 0),
        "under the cap: accepted, and the refused batch took no offset"
    );
    drop(c);
    broker.shutdown().await.unwrap();

    // The default (64 MiB) accepts the larger batch.
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "z", 1, &[]).await, 0);
    assert_eq!(
        produce(&mut c, "z", 0, inflating_batch(2 * CAP)).await,
        (0, 0)
    );
    drop(c);
    broker.shutdown().await.unwrap();
}
