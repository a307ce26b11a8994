use super::*;
use crate::batch::validate::{validate_batch, validate_batch_deep};
use crate::batch::{BatchView, OwnedRecord};

const VECTOR_A: &str = "00000000000000000000003a0000000002716a618900000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff0000000110000000026b027600";
const VECTOR_B: &str = "000000000000000a00000042000000030228c3bac100300000000000000000000007d000000000000007d000000000000000070001ffffffff000000012000000008000000010c00000000000500";

#[test]
fn reproduces_vector_a() {
    let mut b = BatchBuilder::new(Offset(0)).partition_leader_epoch(LeaderEpoch(0));
    b.append(Timestamp(1000), Some(b"k"), Some(b"v"), &[]);
    assert_eq!(hex::encode(b.build()), VECTOR_A);
}

#[test]
fn reproduces_vector_b_commit_marker() {
    let bytes = build_end_txn_marker(
        Offset(10),
        LeaderEpoch(3),
        ProducerId(7),
        ProducerEpoch(1),
        Timestamp(2000),
        EndTransactionMarker::commit(5),
    );
    assert_eq!(bytes.len(), 78);
    assert_eq!(hex::encode(&bytes), VECTOR_B);
    let view = BatchView::parse(&bytes).unwrap();
    let mut scratch = Vec::new();
    let rec = view
        .record_iter(&mut scratch)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        EndTransactionMarker::from_record(&rec),
        Ok(EndTransactionMarker::commit(5))
    );
    assert_eq!(validate_batch_deep(&view), Ok(1));
}

#[test]
fn abort_marker_differs_only_in_type_and_crc() {
    let bytes = build_end_txn_marker(
        Offset(10),
        LeaderEpoch(3),
        ProducerId(7),
        ProducerEpoch(1),
        Timestamp(2000),
        EndTransactionMarker::abort(5),
    );
    let b = hex::decode(VECTOR_B).unwrap();
    let diff: Vec<usize> = (0..78).filter(|&i| bytes[i] != b[i]).collect();
    assert!(
        diff.iter().all(|&i| (17..21).contains(&i) || i == 69),
        "{diff:?}"
    );
    assert!(diff.contains(&69));
}

#[test]
fn header_fields_follow_kafka() {
    let mut b = BatchBuilder::new(Offset(100))
        .partition_leader_epoch(LeaderEpoch(9))
        .producer(ProducerId(42), ProducerEpoch(3), 17)
        .transactional(true);
    b.append(Timestamp(500), Some(b"a"), None, &[]);
    b.append(
        Timestamp(900),
        None,
        Some(b"x"),
        &[RecordHeader::new("h", None)],
    );
    b.append(Timestamp(700), Some(b"c"), Some(b""), &[]);
    assert_eq!(b.record_count(), 3);
    assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
    let bytes = b.build();
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.size(), bytes.len());
    assert!(v.is_crc_valid());
    assert_eq!(v.base_offset(), Offset(100));
    assert_eq!(v.last_offset(), Offset(102));
    assert_eq!(v.partition_leader_epoch(), LeaderEpoch(9));
    assert_eq!(v.base_timestamp(), Timestamp(500));
    assert_eq!(v.max_timestamp(), Timestamp(900));
    assert_eq!(v.producer_id(), ProducerId(42));
    assert_eq!(v.producer_epoch(), ProducerEpoch(3));
    assert_eq!(v.base_sequence(), 17);
    assert_eq!(v.last_sequence(), 19);
    assert!(v.is_transactional() && !v.is_control());
    assert_eq!(v.attributes(), 0x10);
    let recs = v.records().unwrap();
    assert_eq!(recs[1].headers, vec![RecordHeader::new("h", None)]);
    assert_eq!(recs[2].sequence, 19);
    assert_eq!(recs[2].timestamp, Timestamp(700));
}

#[test]
fn every_codec_round_trips_and_validates() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut b = BatchBuilder::new(Offset(0)).compression(codec);
        let mut expected = Vec::new();
        for i in 0..50u8 {
            let value = vec![i; i as usize * 7];
            let o = b.append(Timestamp(1000 + i as i64), Some(&[i]), Some(&value), &[]);
            expected.push(OwnedRecord {
                offset: o,
                timestamp: Timestamp(1000 + i as i64),
                sequence: -1,
                key: Some(vec![i]),
                value: Some(value),
                headers: vec![],
            });
        }
        let bytes = b.build();
        let v = BatchView::parse(&bytes).unwrap();
        assert_eq!(v.compression(), Some(codec));
        assert_eq!(validate_batch(&v), Ok(()));
        assert_eq!(validate_batch_deep(&v), Ok(50));
        assert_eq!(v.records().unwrap(), expected, "{}", codec.name());
    }
}

#[test]
fn log_append_time_and_delete_horizon() {
    let mut b = BatchBuilder::new(Offset(0)).log_append_time(Timestamp(777));
    b.append(Timestamp(5), Some(b"k"), None, &[]);
    let bytes = b.build();
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(v.base_timestamp(), Timestamp(5));
    assert_eq!(v.max_timestamp(), Timestamp(777));
    assert_eq!(v.records().unwrap()[0].timestamp, Timestamp(777));

    let mut b = BatchBuilder::new(Offset(100)).delete_horizon(Timestamp(10_000));
    b.append_with_offset(Offset(100), Timestamp(1), Some(b"gone"), None, &[])
        .unwrap();
    b.append_with_offset(Offset(103), Timestamp(2), Some(b"kept"), Some(b"v"), &[])
        .unwrap();
    let bytes = b.build();
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.delete_horizon(), Some(Timestamp(10_000)));
    assert_eq!(v.last_offset(), Offset(103));
    assert_eq!(v.records_count(), 2);
    let r = v.records().unwrap();
    assert_eq!(
        (r[0].timestamp, r[1].timestamp),
        (Timestamp(1), Timestamp(2))
    );
    assert_eq!(r[1].offset, Offset(103));
    assert_eq!(validate_batch_deep(&v), Ok(2));
}

#[test]
fn append_errors() {
    let mut b = BatchBuilder::new(Offset(10));
    assert_eq!(
        b.append_with_offset(Offset(9), Timestamp(0), None, None, &[]),
        Err(BuildError::OffsetOutOfRange {
            offset: Offset(9),
            base: Offset(10)
        })
    );
    assert_eq!(
        b.append_with_offset(Offset(10 + (1 << 31)), Timestamp(0), None, None, &[]),
        Err(BuildError::OffsetOutOfRange {
            offset: Offset(10 + (1 << 31)),
            base: Offset(10)
        })
    );
    b.append_with_offset(Offset(12), Timestamp(0), None, None, &[])
        .unwrap();
    assert_eq!(
        b.append_with_offset(Offset(12), Timestamp(0), None, None, &[]),
        Err(BuildError::OffsetNotIncreasing {
            offset: Offset(12),
            previous: Offset(12)
        })
    );
    assert_eq!(
        b.append_with_offset(Offset(13), Timestamp(-2), None, None, &[]),
        Err(BuildError::NegativeTimestamp {
            timestamp: Timestamp(-2)
        })
    );
    assert_eq!(b.next_offset(), Offset(13));
    // NO_TIMESTAMP is allowed and leaves MaxTimestamp at -1.
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp::NONE, None, None, &[]);
    let bytes = b.build();
    assert_eq!(
        BatchView::parse(&bytes).unwrap().max_timestamp(),
        Timestamp::NONE
    );
}

#[test]
fn empty_builder_builds_nothing() {
    assert!(BatchBuilder::new(Offset(0)).build().is_empty());
}

#[test]
fn override_last_offset_keeps_the_original_range() {
    let mut b = BatchBuilder::new(Offset(10)).producer(ProducerId(3), ProducerEpoch(0), 100);
    b.append_with_offset(Offset(11), Timestamp(1), Some(b"k"), None, &[])
        .unwrap();
    assert!(matches!(
        b.override_last_offset(Offset(10)),
        Err(BuildError::OffsetNotIncreasing { .. })
    ));
    b.override_last_offset(Offset(14)).unwrap();
    let bytes = b.build();
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.last_offset(), Offset(14));
    assert_eq!(v.last_sequence(), 104);
    assert_eq!(v.records_count(), 1);
    assert_eq!(validate_batch_deep(&v), Ok(1));
}

#[test]
fn empty_batch_keeps_the_original_metadata() {
    let marker = build_end_txn_marker(
        Offset(10),
        LeaderEpoch(3),
        ProducerId(7),
        ProducerEpoch(1),
        Timestamp(2000),
        EndTransactionMarker::commit(5),
    );
    let original = BatchView::parse(&marker).unwrap();
    let bytes = build_empty_batch_like(&original);
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.size(), 61);
    assert!(v.is_crc_valid());
    assert_eq!(v.records_count(), 0);
    assert_eq!(v.base_offset(), Offset(10));
    assert_eq!(v.last_offset(), Offset(10));
    assert_eq!(v.partition_leader_epoch(), LeaderEpoch(3));
    assert!(v.is_control() && v.is_transactional());
    assert_eq!(v.base_timestamp(), Timestamp::NONE);
    assert_eq!(v.max_timestamp(), Timestamp(2000));
    assert_eq!(
        (v.producer_id(), v.producer_epoch()),
        (ProducerId(7), ProducerEpoch(1))
    );
    assert_eq!(v.base_sequence(), -1);
    assert_eq!(validate_batch_deep(&v), Ok(0));
    assert_eq!(v.records().unwrap(), vec![]);

    let mut b = BatchBuilder::new(Offset(0))
        .compression(Compression::Gzip)
        .log_append_time(Timestamp(99))
        .producer(ProducerId(1), ProducerEpoch(2), 5);
    b.append(Timestamp(1), None, None, &[]);
    b.append(Timestamp(2), None, None, &[]);
    let data = b.build();
    let bytes = build_empty_batch_like(&BatchView::parse(&data).unwrap());
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(v.compression(), Some(Compression::None));
    assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(v.max_timestamp(), Timestamp(99));
    assert_eq!(v.last_sequence(), 6);
}
