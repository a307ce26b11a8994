use super::*;
use crate::batch::error::RecordFault;
use crate::batch::varint::{write_varint, write_varlong};
use crate::batch::{compression, BatchViewMut, ATTRIBUTES_POS, RECORD_BATCH_OVERHEAD};

/// Test vector A (§1.9).
const VECTOR_A: &str = "00000000000000000000003a0000000002716a618900000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff0000000110000000026b027600";

/// Encode one record body by hand (independently of the builder).
fn record(
    ts_delta: i64,
    off_delta: i32,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&[u8], Option<&[u8]>)],
) -> Vec<u8> {
    let mut body = vec![0u8];
    write_varlong(&mut body, ts_delta);
    write_varint(&mut body, off_delta);
    for field in [key, value] {
        match field {
            Some(b) => {
                write_varint(&mut body, b.len() as i32);
                body.extend_from_slice(b);
            }
            None => write_varint(&mut body, -1),
        }
    }
    write_varint(&mut body, headers.len() as i32);
    for (k, v) in headers {
        write_varint(&mut body, k.len() as i32);
        body.extend_from_slice(k);
        match v {
            Some(b) => {
                write_varint(&mut body, b.len() as i32);
                body.extend_from_slice(b);
            }
            None => write_varint(&mut body, -1),
        }
    }
    let mut out = Vec::new();
    write_varint(&mut out, body.len() as i32);
    out.extend(body);
    out
}

struct Hdr {
    base_offset: i64,
    attributes: i16,
    last_offset_delta: i32,
    base_ts: i64,
    max_ts: i64,
    base_sequence: i32,
    count: i32,
}

impl Default for Hdr {
    fn default() -> Self {
        Hdr {
            base_offset: 0,
            attributes: 0,
            last_offset_delta: 0,
            base_ts: 1000,
            max_ts: 1000,
            base_sequence: -1,
            count: 1,
        }
    }
}

/// Wrap a records section in a v2 header with a valid CRC.
fn batch(h: &Hdr, records: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(h.base_offset.to_be_bytes());
    b.extend(((RECORD_BATCH_OVERHEAD - 12 + records.len()) as i32).to_be_bytes());
    b.extend(0i32.to_be_bytes());
    b.push(2);
    b.extend([0; 4]);
    b.extend(h.attributes.to_be_bytes());
    b.extend(h.last_offset_delta.to_be_bytes());
    b.extend(h.base_ts.to_be_bytes());
    b.extend(h.max_ts.to_be_bytes());
    b.extend((-1i64).to_be_bytes());
    b.extend((-1i16).to_be_bytes());
    b.extend(h.base_sequence.to_be_bytes());
    b.extend(h.count.to_be_bytes());
    b.extend_from_slice(records);
    BatchViewMut::parse(&mut b).unwrap().update_crc();
    b
}

fn first_error(bytes: &[u8]) -> BatchError {
    let view = BatchView::parse(bytes).unwrap();
    let mut scratch = Vec::new();
    match view.record_iter(&mut scratch) {
        Err(e) => e,
        Ok(mut it) => it.find_map(Result::err).expect("an error"),
    }
}

#[test]
fn vector_a_record() {
    let bytes = hex::decode(VECTOR_A).unwrap();
    let recs = BatchView::parse(&bytes).unwrap().records().unwrap();
    assert_eq!(
        recs,
        vec![OwnedRecord {
            offset: Offset(0),
            timestamp: Timestamp(1000),
            sequence: -1,
            key: Some(b"k".to_vec()),
            value: Some(b"v".to_vec()),
            headers: vec![],
        }]
    );
}

#[test]
fn fields_headers_nulls_and_sequences() {
    let mut recs = record(0, 0, None, Some(b""), &[(b"h1", Some(b"x")), (b"h2", None)]);
    recs.extend(record(7, 1, Some(b""), None, &[]));
    let h = Hdr {
        base_offset: 50,
        last_offset_delta: 1,
        base_sequence: i32::MAX,
        count: 2,
        max_ts: 1007,
        ..Hdr::default()
    };
    let bytes = batch(&h, &recs);
    let view = BatchView::parse(&bytes).unwrap();
    let mut scratch = Vec::new();
    let got: Vec<Record<'_>> = view
        .record_iter(&mut scratch)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].offset, Offset(50));
    assert_eq!(got[0].key, None);
    assert_eq!(got[0].value, Some(&b""[..]));
    assert_eq!(got[0].sequence, i32::MAX);
    let headers: Vec<_> = got[0].headers.collect();
    assert_eq!(
        headers,
        vec![
            Header {
                key: b"h1",
                value: Some(b"x")
            },
            Header {
                key: b"h2",
                value: None
            }
        ]
    );
    assert_eq!(got[1].offset, Offset(51));
    assert_eq!(got[1].timestamp, Timestamp(1007));
    assert_eq!(got[1].key, Some(&b""[..]));
    assert_eq!(got[1].value, None);
    assert_eq!(got[1].sequence, 0, "sequence wraps past i32::MAX");
    assert_eq!(got[0].size_in_bytes + got[1].size_in_bytes, recs.len());
}

#[test]
fn log_append_time_uses_max_timestamp_and_delete_horizon_adds_delta() {
    let recs = record(5, 0, Some(b"k"), None, &[]);
    let lat = Hdr {
        attributes: 0x08,
        base_ts: 100,
        max_ts: 9999,
        ..Hdr::default()
    };
    let r = BatchView::parse(&batch(&lat, &recs))
        .unwrap()
        .records()
        .unwrap();
    assert_eq!(r[0].timestamp, Timestamp(9999));
    let dh = Hdr {
        attributes: 0x40,
        base_ts: 100,
        ..Hdr::default()
    };
    let r = BatchView::parse(&batch(&dh, &recs))
        .unwrap()
        .records()
        .unwrap();
    assert_eq!(r[0].timestamp, Timestamp(105));
}

#[test]
fn compressed_records_decode_through_scratch() {
    let mut recs = record(0, 0, Some(b"a"), Some(b"1"), &[]);
    recs.extend(record(1, 1, Some(b"b"), Some(b"2"), &[]));
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let h = Hdr {
            attributes: codec.id() as i16,
            count: 2,
            last_offset_delta: 1,
            ..Hdr::default()
        };
        let bytes = batch(&h, &compression::compress(codec, &recs));
        let r = BatchView::parse(&bytes).unwrap().records().unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].key.as_deref(), Some(&b"b"[..]));
        // The scratch buffer is reusable.
        let mut scratch = vec![1, 2, 3];
        let view = BatchView::parse(&bytes).unwrap();
        assert_eq!(view.record_iter(&mut scratch).unwrap().count(), 2);
    }
    let h = Hdr {
        attributes: 1,
        ..Hdr::default()
    };
    let bytes = batch(&h, b"garbage");
    assert!(matches!(
        first_error(&bytes),
        BatchError::Decompression { codec: "gzip", .. }
    ));
}

#[test]
fn invalid_codec_and_negative_count_fail_up_front() {
    let recs = record(0, 0, None, None, &[]);
    let bytes = batch(
        &Hdr {
            attributes: 5,
            ..Hdr::default()
        },
        &recs,
    );
    assert_eq!(
        first_error(&bytes),
        BatchError::InvalidCompression { id: 5 }
    );
    let bytes = batch(
        &Hdr {
            count: -1,
            ..Hdr::default()
        },
        &recs,
    );
    assert_eq!(
        first_error(&bytes),
        BatchError::NegativeRecordCount { count: -1 }
    );
    // Count 0: nothing is read, as in Kafka.
    let bytes = batch(
        &Hdr {
            count: 0,
            ..Hdr::default()
        },
        b"junk",
    );
    assert_eq!(BatchView::parse(&bytes).unwrap().records().unwrap(), vec![]);
}

fn fault_of(records: &[u8], count: i32) -> BatchError {
    first_error(&batch(
        &Hdr {
            count,
            ..Hdr::default()
        },
        records,
    ))
}

#[test]
fn length_exceeding_remaining_is_rejected() {
    let mut r = record(0, 0, Some(b"k"), None, &[]);
    r.truncate(r.len() - 1);
    let e = fault_of(&r, 1);
    assert!(
        matches!(
            e,
            BatchError::InvalidRecord {
                index: 0,
                reason: RecordFault::LengthExceedsRemaining { .. }
            }
        ),
        "{e:?}"
    );
}

#[test]
fn bytes_consumed_must_equal_declared_length() {
    // Declare one byte more than the fields use, and supply the byte.
    let mut r = record(0, 0, Some(b"k"), None, &[]);
    r[0] += 2; // zig-zag: +1 in length
    r.push(0);
    let e = fault_of(&r, 1);
    assert!(
        matches!(e, BatchError::InvalidRecord { index: 0, reason: RecordFault::SizeMismatch { consumed, .. } } if consumed + 1 == r.len() - 1),
        "{e:?}"
    );
    // Declare one byte fewer: the header count runs past the body.
    let mut r = record(0, 0, Some(b"k"), None, &[]);
    r[0] -= 2;
    r.pop();
    let e = fault_of(&[r.as_slice(), &[0]].concat(), 1);
    assert!(
        matches!(e, BatchError::InvalidRecord { index: 0, .. }),
        "{e:?}"
    );
}

/// A record whose header section is replaced by `tail`.
fn record_with_header_tail(tail: &[u8]) -> Vec<u8> {
    let mut body = vec![0u8, 0, 0, 1]; // attr, ts 0, off 0, null key
    body.push(1); // null value
    body.extend_from_slice(tail);
    let mut out = Vec::new();
    write_varint(&mut out, body.len() as i32);
    out.extend(body);
    out
}

#[test]
fn header_count_and_key_length_rules() {
    let e = fault_of(&record_with_header_tail(&[0x01]), 1);
    assert_eq!(
        e,
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::NegativeHeaderCount { count: -1 }
        }
    );
    let e = fault_of(&record_with_header_tail(&[0x0a, 0, 0]), 1);
    assert_eq!(
        e,
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::HeaderCountExceedsRemaining {
                count: 5,
                remaining: 2
            }
        }
    );
    let e = fault_of(&record_with_header_tail(&[0x02, 0x03, 0x00]), 1);
    assert_eq!(
        e,
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::NegativeHeaderKeyLength { length: -2 }
        }
    );
    let e = fault_of(&record_with_header_tail(&[0x02, 0x10, 0x00]), 1);
    assert_eq!(
        e,
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::FieldOverrun
        }
    );
}

#[test]
fn trailing_bytes_and_premature_end() {
    let mut r = record(0, 0, None, Some(b"v"), &[]);
    r.extend([0, 0, 0]);
    assert_eq!(fault_of(&r, 1), BatchError::TrailingBytes { remaining: 3 });
    let r = record(0, 0, None, Some(b"v"), &[]);
    assert_eq!(
        fault_of(&r, 2),
        BatchError::InvalidRecord {
            index: 1,
            reason: RecordFault::PrematureEnd
        }
    );
    // An over-long varint as the record length.
    assert_eq!(
        fault_of(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], 1),
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::VarintTooLong
        }
    );
    assert_eq!(
        fault_of(&[0x03], 1),
        BatchError::InvalidRecord {
            index: 0,
            reason: RecordFault::NegativeLength { length: -2 }
        }
    );
}

#[test]
fn iterator_stops_after_first_error() {
    let r = record(0, 0, None, Some(b"v"), &[]);
    let bytes = batch(
        &Hdr {
            count: 5,
            ..Hdr::default()
        },
        &r,
    );
    let view = BatchView::parse(&bytes).unwrap();
    let mut scratch = Vec::new();
    let items: Vec<_> = view.record_iter(&mut scratch).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert!(items[0].is_ok() && items[1].is_err());
}

#[test]
fn crc_is_not_checked_by_the_reader() {
    // Decoding is separate from validation: flipping the attributes' high byte
    // (ignored by readers) breaks only the CRC.
    let mut bytes = hex::decode(VECTOR_A).unwrap();
    bytes[ATTRIBUTES_POS] = 0x80;
    let view = BatchView::parse(&bytes).unwrap();
    assert!(!view.is_crc_valid());
    assert_eq!(view.records().unwrap().len(), 1);
}
