//! Guards where the cleaner learns which batch is a producer's last (Kafka
//! `lastRecordsOfActiveProducers`): from the log's producer state. A
//! producer's last data batch survives compaction as an empty header while
//! the producer is known; once `producer.id.expiration.ms` has expired it,
//! the next cleaning removes that header like any other empty batch.

use crate::cleaner_util::*;
use strata_log::batch::BatchBuilder;
use strata_log::cleaner::{Cleaner, CleanerConfig};
use strata_log::{MockClock, Offset, ProducerEpoch, ProducerId, Timestamp};

const EXPIRATION_MS: i64 = 60_000;

fn producer_batch(base: Offset, key: &str, value: &str) -> Vec<u8> {
    let mut b = BatchBuilder::new(base).producer(ProducerId(42), ProducerEpoch(3), 0);
    b.append(
        Timestamp(T0),
        Some(key.as_bytes()),
        Some(value.as_bytes()),
        &[],
    );
    b.build()
}

#[test]
fn an_expired_producers_last_batch_goes_on_the_next_clean() {
    let dir = tempfile::tempdir().unwrap();
    let clock = MockClock::new(T0);
    let mut cfg = compact_config(1 << 20);
    cfg.producer_id_expiration_ms = EXPIRATION_MS;
    let log = open(dir.path(), &cfg, &clock);
    append_raw(&log, &producer_batch(Offset(0), "a", "from-producer"));
    append(&log, T0, &[("a", Some("newer"))]);
    append(&log, T0, &[("b", Some("1"))]);
    log.roll().unwrap();
    let mut w = Cleaner::new(&CleanerConfig::default(), clock.clone()).unwrap();

    // Superseded, but the producer's last batch: kept as an empty header.
    w.clean(&log).unwrap();
    let (hdrs, recs) = read_all(&log);
    let first = &hdrs[0];
    assert_eq!(
        (first.base, first.last, first.count, first.producer_id),
        (Offset(0), Offset(0), 0, 42),
        "{hdrs:?}"
    );
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![Offset(1), Offset(2)]
    );

    // The producer expires; the next cleaning drops its empty header.
    clock.advance(EXPIRATION_MS + 1);
    assert_eq!(log.remove_expired_producers().unwrap(), 1);
    append(&log, T0, &[("b", Some("2"))]);
    log.roll().unwrap();
    w.clean(&log).unwrap();
    let (hdrs, recs) = read_all(&log);
    assert!(
        hdrs.iter().all(|h| h.producer_id != 42),
        "the expired producer's batch is gone: {hdrs:?}"
    );
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![Offset(1), Offset(3)]
    );
}
