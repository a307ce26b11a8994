use super::*;
use crate::batch::builder::{build_end_txn_marker, BatchBuilder};
use crate::batch::error::{ErrorClass, RecordFault};
use crate::batch::varint::write_varint;
use crate::batch::{EndTransactionMarker, RecordHeader, ATTRIBUTES_POS, MAX_TIMESTAMP_POS};

const NOW: i64 = 1_700_000_000_000;

fn cfg() -> AppendValidation {
    AppendValidation {
        max_message_bytes: 1 << 20,
        compacted: false,
        timestamp_type: TimestampType::CreateTime,
        timestamp_before_max_ms: i64::MAX,
        timestamp_after_max_ms: i64::MAX,
        now: Timestamp(NOW),
    }
}

fn client_batch(n: usize, codec: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0)).compression(codec);
    for i in 0..n {
        b.append(
            Timestamp(NOW - 10 + i as i64),
            Some(format!("k{i}").as_bytes()),
            Some(b"v"),
            &[],
        );
    }
    b.build()
}

fn set_i32(bytes: &mut [u8], at: usize, v: i32) {
    bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
    BatchViewMut::parse(bytes).unwrap().update_crc();
}

fn kind(r: Result<ValidatedRecords, BatchError>) -> BatchError {
    r.unwrap_err().kind().clone()
}

// --- validate_batch / validate_batch_deep

#[test]
fn validate_batch_checks_crc_and_codec_only() {
    let mut bytes = client_batch(3, Compression::None);
    assert_eq!(validate_batch(&BatchView::parse(&bytes).unwrap()), Ok(()));
    bytes[70] ^= 1;
    let v = BatchView::parse(&bytes).unwrap();
    assert!(matches!(
        validate_batch(&v),
        Err(BatchError::ChecksumMismatch { stored, computed }) if stored == v.crc() && computed == v.compute_crc()
    ));
    let mut bytes = client_batch(3, Compression::None);
    bytes[ATTRIBUTES_POS + 1] |= 6; // codec 6
    BatchViewMut::parse(&mut bytes).unwrap().update_crc();
    assert_eq!(
        validate_batch(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::InvalidCompression { id: 6 })
    );
    // Records are not decoded: garbage records with a valid CRC pass.
    let mut bytes = client_batch(1, Compression::None);
    let n = bytes.len();
    bytes[n - 3] = 0x7f;
    BatchViewMut::parse(&mut bytes).unwrap().update_crc();
    let v = BatchView::parse(&bytes).unwrap();
    assert_eq!(validate_batch(&v), Ok(()));
    assert!(validate_batch_deep(&v).is_err());
}

#[test]
fn deep_validation_counts_records_and_checks_deltas() {
    for codec in [Compression::None, Compression::Zstd] {
        let bytes = client_batch(7, codec);
        assert_eq!(
            validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
            Ok(7)
        );
    }
    // Last offset delta below the last record's delta.
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, super::super::LAST_OFFSET_DELTA_POS, 1);
    assert_eq!(
        validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::OffsetDeltaOutOfOrder {
            index: 2,
            delta: 2,
            previous: 1,
            last_offset_delta: 1
        })
    );
    // Count larger than the records present.
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, super::super::RECORDS_COUNT_POS, 4);
    assert_eq!(
        validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::InvalidRecord {
            index: 3,
            reason: RecordFault::PrematureEnd
        })
    );
    // Count smaller: bytes left over.
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, super::super::RECORDS_COUNT_POS, 2);
    assert!(matches!(
        validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::TrailingBytes { .. })
    ));
    // Empty uncompressed batch with leftover bytes.
    let mut bytes = client_batch(1, Compression::None);
    set_i32(&mut bytes, super::super::RECORDS_COUNT_POS, 0);
    assert!(matches!(
        validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::TrailingBytes { .. })
    ));
}

#[test]
fn deep_validation_parses_control_records() {
    let marker = build_end_txn_marker(
        Offset(0),
        LeaderEpoch(0),
        ProducerId(1),
        ProducerEpoch(0),
        Timestamp(5),
        EndTransactionMarker::abort(2),
    );
    assert_eq!(
        validate_batch_deep(&BatchView::parse(&marker).unwrap()),
        Ok(1)
    );
    let mut b = BatchBuilder::new(Offset(0))
        .control(true)
        .transactional(true);
    b.append(Timestamp(5), Some(&[0, 0, 0, 1]), Some(&[0, 0, 0]), &[]);
    let bytes = b.build();
    assert!(matches!(
        validate_batch_deep(&BatchView::parse(&bytes).unwrap()),
        Err(BatchError::InvalidControlRecord { .. })
    ));
}

// --- validate_client_records

#[test]
fn accepts_a_valid_batch_and_reports_fields() {
    for codec in [Compression::None, Compression::Gzip, Compression::Lz4] {
        let bytes = client_batch(5, codec);
        let v = validate_client_records(&bytes, &cfg()).unwrap();
        assert_eq!(v.total_records, 5);
        assert_eq!(v.max_timestamp, Timestamp(NOW - 6));
        assert_eq!(v.shallow_offset_delta_of_max_timestamp, 4);
        assert_eq!(v.log_append_time, None);
        let b = v.batches[0];
        assert_eq!(
            (b.position, b.size, b.records_count, b.last_offset_delta),
            (0, bytes.len(), 5, 4)
        );
        assert_eq!(b.offset_delta_of_max_timestamp, 4);
        assert_eq!(b.compression, codec);
        assert_eq!(b.producer_id, ProducerId::NONE);
    }
}

#[test]
fn max_timestamp_record_is_the_first_holding_it() {
    let mut b = BatchBuilder::new(Offset(0));
    for ts in [NOW - 5, NOW - 1, NOW - 3, NOW - 1] {
        b.append(Timestamp(ts), Some(b"k"), None, &[]);
    }
    let v = validate_client_records(&b.build(), &cfg()).unwrap();
    assert_eq!(v.batches[0].max_timestamp, Timestamp(NOW - 1));
    assert_eq!(v.batches[0].offset_delta_of_max_timestamp, 1);
    assert_eq!(v.shallow_offset_delta_of_max_timestamp, 3);
}

#[test]
fn buffer_must_hold_exactly_one_whole_batch() {
    assert_eq!(
        validate_client_records(&[], &cfg()),
        Err(BatchError::NoBatches)
    );
    let one = client_batch(2, Compression::None);
    let two = [one.clone(), one.clone()].concat();
    assert_eq!(
        validate_client_records(&two, &cfg()),
        Err(BatchError::MultipleBatches {
            second_position: one.len()
        })
    );
    let torn = [one.clone(), one[..30].to_vec()].concat();
    let e = validate_client_records(&torn, &cfg()).unwrap_err();
    assert_eq!(e.position(), Some(one.len() as u64));
    assert!(matches!(e.kind(), BatchError::Truncated { .. }));
    assert_eq!(e.class(), ErrorClass::Corrupt);
    let e = validate_client_records(&one[..one.len() - 1], &cfg()).unwrap_err();
    assert!(matches!(e.kind(), BatchError::Truncated { .. }));
    let e = validate_client_records(&one[..10], &cfg()).unwrap_err();
    assert!(matches!(
        e.kind(),
        BatchError::Truncated {
            needed: 17,
            available: 10
        }
    ));
}

#[test]
fn magic_must_be_2() {
    let mut bytes = client_batch(1, Compression::None);
    bytes[16] = 1;
    assert_eq!(
        kind(validate_client_records(&bytes, &cfg())),
        BatchError::UnsupportedMagic { magic: 1 }
    );
}

#[test]
fn base_offset_must_be_zero() {
    let mut bytes = client_batch(1, Compression::None);
    BatchViewMut::parse(&mut bytes)
        .unwrap()
        .set_base_offset(Offset(5));
    let e = validate_client_records(&bytes, &cfg()).unwrap_err();
    assert_eq!(
        e.kind(),
        &BatchError::NonZeroBaseOffset {
            base_offset: Offset(5)
        }
    );
    assert_eq!(e.class(), ErrorClass::InvalidRecord);
}

#[test]
fn size_limit_is_too_large() {
    let bytes = client_batch(3, Compression::None);
    let c = AppendValidation {
        max_message_bytes: bytes.len() - 1,
        ..cfg()
    };
    let e = validate_client_records(&bytes, &c).unwrap_err();
    assert_eq!(
        e.kind(),
        &BatchError::RecordTooLarge {
            size: bytes.len(),
            max: bytes.len() - 1
        }
    );
    assert_eq!(e.class(), ErrorClass::TooLarge);
    let c = AppendValidation {
        max_message_bytes: bytes.len(),
        ..cfg()
    };
    assert!(validate_client_records(&bytes, &c).is_ok());
}

#[test]
fn crc_must_be_valid() {
    let mut bytes = client_batch(3, Compression::None);
    bytes[MAX_TIMESTAMP_POS] ^= 0x40;
    let e = validate_client_records(&bytes, &cfg()).unwrap_err();
    assert!(matches!(e.kind(), BatchError::ChecksumMismatch { .. }));
    assert_eq!(e.class(), ErrorClass::Corrupt);
}

#[test]
fn offset_range_and_count_rules() {
    use super::super::{LAST_OFFSET_DELTA_POS, RECORDS_COUNT_POS};
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, LAST_OFFSET_DELTA_POS, -1);
    assert_eq!(
        kind(validate_client_records(&bytes, &cfg())),
        BatchError::InvalidOffsetRange {
            last_offset_delta: -1
        }
    );
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, RECORDS_COUNT_POS, 0);
    assert_eq!(
        kind(validate_client_records(&bytes, &cfg())),
        BatchError::InvalidRecordCount { count: 0 }
    );
    let mut bytes = client_batch(3, Compression::None);
    set_i32(&mut bytes, LAST_OFFSET_DELTA_POS, 5);
    assert_eq!(
        kind(validate_client_records(&bytes, &cfg())),
        BatchError::OffsetCountMismatch {
            last_offset_delta: 5,
            count: 3
        }
    );
}

#[test]
fn control_batches_are_refused() {
    let marker = build_end_txn_marker(
        Offset(0),
        LeaderEpoch(0),
        ProducerId(1),
        ProducerEpoch(0),
        Timestamp(NOW),
        EndTransactionMarker::commit(0),
    );
    assert_eq!(
        kind(validate_client_records(&marker, &cfg())),
        BatchError::ControlBatchFromClient
    );
}

#[test]
fn producer_id_needs_a_sequence() {
    let mut b = BatchBuilder::new(Offset(0)).producer(ProducerId(9), ProducerEpoch(0), -1);
    b.append(Timestamp(NOW), Some(b"k"), None, &[]);
    assert_eq!(
        kind(validate_client_records(&b.build(), &cfg())),
        BatchError::InvalidSequence {
            producer_id: ProducerId(9),
            base_sequence: -1
        }
    );
    let mut b = BatchBuilder::new(Offset(0))
        .producer(ProducerId(9), ProducerEpoch(2), 0)
        .transactional(true);
    b.append(Timestamp(NOW), Some(b"k"), None, &[]);
    let v = validate_client_records(&b.build(), &cfg()).unwrap();
    assert_eq!(v.batches[0].producer_epoch, ProducerEpoch(2));
    assert!(v.batches[0].is_transactional);
}

#[test]
fn records_are_decoded_and_faults_reported() {
    let mut bytes = client_batch(2, Compression::None);
    let n = bytes.len();
    bytes[n - 1] = 0x05; // header count -3 in the last record
    BatchViewMut::parse(&mut bytes).unwrap().update_crc();
    let e = validate_client_records(&bytes, &cfg()).unwrap_err();
    assert_eq!(
        e.kind(),
        &BatchError::InvalidRecord {
            index: 1,
            reason: RecordFault::NegativeHeaderCount { count: -3 }
        }
    );
    assert_eq!(e.class(), ErrorClass::InvalidRecord);
    assert_eq!(e.position(), Some(0));
}

#[test]
fn compacted_topics_need_keys() {
    for codec in [Compression::None, Compression::Snappy] {
        let mut b = BatchBuilder::new(Offset(0)).compression(codec);
        b.append(Timestamp(NOW), Some(b"k"), None, &[]);
        b.append(Timestamp(NOW), None, Some(b"v"), &[]);
        b.append(Timestamp(NOW), None, Some(b"v"), &[]);
        let bytes = b.build();
        assert!(validate_client_records(&bytes, &cfg()).is_ok());
        let c = AppendValidation {
            compacted: true,
            ..cfg()
        };
        let e = validate_client_records(&bytes, &c).unwrap_err();
        assert_eq!(e.kind(), &BatchError::MissingKey { record_index: 1 });
        assert_eq!(e.class(), ErrorClass::InvalidRecord);
    }
}

#[test]
fn create_time_bounds() {
    let c = AppendValidation {
        timestamp_before_max_ms: 1000,
        timestamp_after_max_ms: 100,
        ..cfg()
    };
    let build = |ts: i64| {
        let mut b = BatchBuilder::new(Offset(0));
        b.append(Timestamp(NOW), Some(b"k"), None, &[]);
        b.append(Timestamp(ts), Some(b"k"), None, &[]);
        b.build()
    };
    assert!(validate_client_records(&build(NOW - 1000), &c).is_ok());
    assert!(validate_client_records(&build(NOW + 100), &c).is_ok());
    for bad in [NOW - 1001, NOW + 101] {
        let e = validate_client_records(&build(bad), &c).unwrap_err();
        assert_eq!(
            e.kind(),
            &BatchError::InvalidTimestamp {
                record_index: 1,
                timestamp: Timestamp(bad),
                min: NOW - 1000,
                max: NOW + 100
            }
        );
        assert_eq!(e.class(), ErrorClass::InvalidTimestamp);
    }
    // NO_TIMESTAMP is exempt.
    assert!(validate_client_records(&build(-1), &c).is_ok());
}

#[test]
fn timestamp_error_wins_over_missing_key_like_kafka() {
    let c = AppendValidation {
        compacted: true,
        timestamp_before_max_ms: 10,
        ..cfg()
    };
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp(NOW), None, None, &[]);
    b.append(Timestamp(NOW - 100), Some(b"k"), None, &[]);
    assert!(matches!(
        kind(validate_client_records(&b.build(), &c)),
        BatchError::InvalidTimestamp {
            record_index: 1,
            ..
        }
    ));
}

#[test]
fn log_append_time_topics() {
    let c = AppendValidation {
        timestamp_type: TimestampType::LogAppendTime,
        timestamp_before_max_ms: 0,
        timestamp_after_max_ms: 0,
        ..cfg()
    };
    // Record timestamps are not range-checked.
    let mut b = BatchBuilder::new(Offset(0));
    b.append(Timestamp(5), Some(b"k"), None, &[]);
    b.append(Timestamp(6), Some(b"k"), None, &[]);
    let mut bytes = b.build();
    let v = validate_client_records(&bytes, &c).unwrap();
    assert_eq!(v.max_timestamp, Timestamp(NOW));
    assert_eq!(v.log_append_time, Some(Timestamp(NOW)));
    assert_eq!(v.shallow_offset_delta_of_max_timestamp, 1);
    let last =
        assign_offsets_in_place(&mut bytes, &v, Offset(40), LeaderEpoch(2), c.timestamp_type)
            .unwrap();
    assert_eq!(last, Offset(41));
    let view = BatchView::parse(&bytes).unwrap();
    assert_eq!(view.base_offset(), Offset(40));
    assert_eq!(view.partition_leader_epoch(), LeaderEpoch(2));
    assert_eq!(view.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(view.max_timestamp(), Timestamp(NOW));
    assert!(view.is_crc_valid());
    // A producer may not send LogAppendTime batches itself.
    let mut b = BatchBuilder::new(Offset(0)).log_append_time(Timestamp(NOW));
    b.append(Timestamp(5), Some(b"k"), None, &[]);
    assert_eq!(
        kind(validate_client_records(&b.build(), &c)),
        BatchError::UnexpectedLogAppendTime { record_index: 0 }
    );
}

#[test]
fn create_time_stamping_rewrites_max_timestamp() {
    let mut bytes = client_batch(3, Compression::None);
    bytes[MAX_TIMESTAMP_POS..MAX_TIMESTAMP_POS + 8].copy_from_slice(&0i64.to_be_bytes());
    BatchViewMut::parse(&mut bytes).unwrap().update_crc();
    let v = validate_client_records(&bytes, &cfg()).unwrap();
    assign_offsets_in_place(
        &mut bytes,
        &v,
        Offset(7),
        LeaderEpoch(1),
        TimestampType::CreateTime,
    )
    .unwrap();
    let view = BatchView::parse(&bytes).unwrap();
    assert_eq!(view.max_timestamp(), Timestamp(NOW - 8));
    assert_eq!(view.last_offset(), Offset(9));
    assert!(view.is_crc_valid());
}

/// Records with the given offset deltas, wrapped in a client batch.
fn batch_with_deltas(deltas: &[i32]) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    for _ in deltas {
        b.append(Timestamp(NOW), Some(b"k"), None, &[]);
    }
    let mut bytes = b.build();
    // Each record is: len, attr, tsDelta(0), offDelta, key(02 6b), null value(01), 0 headers.
    let rec_len = 8;
    for (i, d) in deltas.iter().enumerate() {
        let mut enc = Vec::new();
        write_varint(&mut enc, *d);
        assert_eq!(enc.len(), 1, "test only supports one-byte deltas");
        bytes[61 + i * rec_len + 3] = enc[0];
    }
    BatchViewMut::parse(&mut bytes).unwrap().update_crc();
    bytes
}

#[test]
fn inner_offset_deltas_must_be_sequential() {
    assert!(validate_client_records(&batch_with_deltas(&[0, 1, 2]), &cfg()).is_ok());
    assert_eq!(
        kind(validate_client_records(
            &batch_with_deltas(&[0, 2, 1]),
            &cfg()
        )),
        BatchError::NonSequentialOffsetDelta {
            record_index: 1,
            delta: 2
        }
    );
    assert_eq!(
        kind(validate_client_records(
            &batch_with_deltas(&[1, 2, 3]),
            &cfg()
        )),
        BatchError::NonSequentialOffsetDelta {
            record_index: 0,
            delta: 1
        }
    );
}

#[test]
fn headers_survive_validation() {
    let mut b = BatchBuilder::new(Offset(0));
    b.append(
        Timestamp(NOW),
        Some(b"k"),
        Some(b"v"),
        &[
            RecordHeader::new("a", Some(b"1")),
            RecordHeader::new("b", None),
        ],
    );
    assert!(validate_client_records(&b.build(), &cfg()).is_ok());
}

#[test]
fn decompression_is_bounded() {
    let mut b = BatchBuilder::new(Offset(0)).compression(Compression::Zstd);
    b.append(Timestamp(NOW), Some(b"k"), Some(&vec![0u8; 100_000]), &[]);
    let bytes = b.build();
    let mut scratch = Vec::new();
    let e = validate_client_records_with(&bytes, &cfg(), &mut scratch, 50_000).unwrap_err();
    assert!(matches!(
        e.kind(),
        BatchError::DecompressedTooLarge { limit: 50_000, .. }
    ));
    assert!(validate_client_records_with(&bytes, &cfg(), &mut scratch, 200_000).is_ok());
}
