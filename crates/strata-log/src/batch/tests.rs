use super::*;

/// Test vector A of the reference (§1.9): one record "k"/"v", ts 1000.
const VECTOR_A: &str = "00000000000000000000003a0000000002716a618900000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff0000000110000000026b027600";
/// Test vector B: a COMMIT marker at offset 10, leader epoch 3.
const VECTOR_B: &str = "000000000000000a00000042000000030228c3bac100300000000000000000000007d000000000000007d000000000000000070001ffffffff000000012000000008000000010c00000000000500";

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

#[test]
fn crc32c_check_value() {
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn vector_a_header_fields() {
    let bytes = unhex(VECTOR_A);
    let b = BatchView::parse(&bytes).unwrap();
    assert_eq!(b.size(), 70);
    assert_eq!(b.crc(), 0x716a_6189);
    assert!(b.is_crc_valid());
    assert_eq!(b.base_offset(), Offset(0));
    assert_eq!(b.last_offset(), Offset(0));
    assert_eq!(b.records_count(), 1);
    assert_eq!(b.compression(), Some(Compression::None));
    assert_eq!(b.base_timestamp(), Timestamp(1000));
    assert_eq!(b.max_timestamp(), Timestamp(1000));
    assert!(!b.has_producer_id());
    assert_eq!(b.last_sequence(), NO_SEQUENCE);
}

#[test]
fn vector_b_is_a_control_marker() {
    let bytes = unhex(VECTOR_B);
    let b = BatchView::parse(&bytes).unwrap();
    assert_eq!(b.size(), 78);
    assert!(b.is_crc_valid());
    assert!(b.is_control() && b.is_transactional());
    assert_eq!(b.base_offset(), Offset(10));
    assert_eq!(b.partition_leader_epoch(), LeaderEpoch(3));
    assert_eq!(b.producer_id(), ProducerId(7));
    assert_eq!(b.producer_epoch(), ProducerEpoch(1));
}

#[test]
fn offset_and_epoch_rewrite_keeps_crc() {
    let mut bytes = unhex(VECTOR_A);
    let crc = BatchView::parse(&bytes).unwrap().crc();
    let mut m = BatchViewMut::parse(&mut bytes).unwrap();
    m.set_base_offset(Offset(12345));
    m.set_partition_leader_epoch(LeaderEpoch(7));
    let v = m.view();
    assert_eq!(v.base_offset(), Offset(12345));
    assert_eq!(v.partition_leader_epoch(), LeaderEpoch(7));
    assert_eq!(v.crc(), crc);
    assert!(v.is_crc_valid());
}

#[test]
fn log_append_time_rewrite_recomputes_crc() {
    let mut bytes = unhex(VECTOR_A);
    let mut m = BatchViewMut::parse(&mut bytes).unwrap();
    m.set_max_timestamp(TimestampType::LogAppendTime, Timestamp(5000));
    let v = m.view();
    assert_eq!(v.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(v.max_timestamp(), Timestamp(5000));
    assert_ne!(v.crc(), 0x716a_6189);
    assert!(v.is_crc_valid());
}

#[test]
fn sequence_wraps_like_kafka() {
    assert_eq!(increment_sequence(5, 3), 8);
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
}

#[test]
fn scanner_stops_at_partial_tail_and_errors_on_zeroes() {
    let a = unhex(VECTOR_A);
    let mut buf = a.clone();
    buf.extend_from_slice(&a[..40]); // torn second batch
    let items: Vec<_> = BatchScanner::new(&buf).collect();
    assert_eq!(items.len(), 1);

    let mut buf = a.clone();
    buf.extend_from_slice(&[0u8; 64]); // preallocated zero tail
    let items: Vec<_> = BatchScanner::new(&buf).collect();
    assert_eq!(items.len(), 2);
    assert!(matches!(
        items[1].as_ref().unwrap_err().kind(),
        BatchError::LengthTooSmall { length: 0 }
    ));

    // Exactly 17 remaining bytes stop the scan.
    let mut buf = a.clone();
    buf.extend_from_slice(&a[..17]);
    assert_eq!(BatchScanner::new(&buf).count(), 1);
}
