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
fn crc32c_matches_the_table_crate_at_every_length_and_alignment() {
    // The folding kernels switch strategy at several lengths; compare with
    // an independent implementation on both sides of each and misaligned.
    let data: Vec<u8> = (0..70_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let lengths = (0..300).chain([511, 512, 513, 1023, 1024, 4095, 4096, 16_381, 65_537]);
    for len in lengths {
        for start in 0..9 {
            let bytes = &data[start..start + len];
            assert_eq!(
                crc32c(bytes),
                ::crc32c::crc32c(bytes),
                "len {len} at {start}"
            );
        }
    }
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

/// Found by fuzzing (batch_validate): a record with a negative offset delta in
/// a batch with a base sequence overflowed `increment_sequence`.
#[test]
fn fuzz_regression_negative_delta_sequence_does_not_overflow() {
    // Java's results for the same (int-wrapping) expression.
    assert_eq!(increment_sequence(3, -5), 2_147_483_646);
    assert_eq!(increment_sequence(i32::MAX, -1), -2);
    assert_eq!(increment_sequence(0, i32::MIN), 0);
    assert_eq!(increment_sequence(i32::MAX, i32::MAX), i32::MAX - 1);
    let crash = unhex(
        "0000000000000012000000670000000102f93468530010000000020000018bcfe568001200018bcfe56814\
         0000000000001388000200000003000000032200000010636f6d6d6974313806763138002200fdfdef9c90\
         92929674313906763139002200040410636f6d6d69743230067661323000",
    );
    let view = BatchView::parse(&crash).unwrap();
    let mut scratch = Vec::new();
    let records: Vec<_> = view.record_iter(&mut scratch).unwrap().collect();
    assert!(records.iter().any(|r| r.is_ok()));
}

/// Offsets at the edge of i64 wrap as in Java instead of panicking.
#[test]
fn extreme_offsets_wrap() {
    let mut bytes = unhex(VECTOR_A);
    let mut m = BatchViewMut::parse(&mut bytes).unwrap();
    m.set_base_offset(Offset(i64::MAX));
    let v = m.view();
    assert_eq!(v.last_offset(), Offset(i64::MAX));
    assert_eq!(v.next_offset(), Offset(i64::MIN));
}
