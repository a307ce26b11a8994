use super::*;
use crate::batch::compression::{compress, decompress};
use crate::batch::BatchScanner;

/// Encode a legacy entry by hand.
fn entry(
    offset: i64,
    magic: i8,
    attributes: i8,
    ts: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut rec = vec![magic as u8, attributes as u8];
    if magic == 1 {
        rec.extend(ts.to_be_bytes());
    }
    for f in [key, value] {
        match f {
            Some(b) => {
                rec.extend((b.len() as i32).to_be_bytes());
                rec.extend_from_slice(b);
            }
            None => rec.extend((-1i32).to_be_bytes()),
        }
    }
    let crc = crc32fast::hash(&rec);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend(((rec.len() + 4) as i32).to_be_bytes());
    out.extend(crc.to_be_bytes());
    out.extend(rec);
    out
}

#[test]
fn xxh32_known_answers() {
    assert_eq!(xxh32_short(b""), 0x02CC_5D05);
    assert_eq!(xxh32_short(b"a"), 0x550D_7456);
    assert_eq!(xxh32_short(b"abc"), 0x32D1_53FF);
    // Agrees with the LZ4 frames our encoder writes.
    let f = compress(Compression::Lz4, b"x");
    assert_eq!(f[6], (xxh32_short(&f[4..6]) >> 8) as u8);
}

#[test]
fn reads_v0_and_v1_records() {
    let v0 = entry(5, 0, 0, 0, Some(b"k"), None);
    let e = read_legacy_entry(&v0).unwrap();
    assert_eq!(e.size(), v0.len());
    assert_eq!(v0.len(), 12 + LEGACY_V0_OVERHEAD + 1);
    assert_eq!(
        (e.offset, e.magic, e.timestamp),
        (Offset(5), 0, Timestamp::NONE)
    );
    assert_eq!((e.key, e.value), (Some(&b"k"[..]), None));
    assert_eq!(e.timestamp_type(), None);
    assert!(e.is_crc_valid());
    assert_eq!(e.validate(), Ok(()));
    assert_eq!(e.records().unwrap().len(), 1);

    let mut v1 = entry(6, 1, 0x08, 1234, None, Some(b"value"));
    let e = read_legacy_entry(&v1).unwrap();
    assert_eq!(e.timestamp, Timestamp(1234));
    assert_eq!(e.timestamp_type(), Some(TimestampType::LogAppendTime));
    assert_eq!(e.value, Some(&b"value"[..]));
    let n = v1.len();
    v1[n - 1] ^= 1;
    let e = read_legacy_entry(&v1).unwrap();
    assert!(!e.is_crc_valid());
    assert!(matches!(
        e.validate(),
        Err(BatchError::ChecksumMismatch { .. })
    ));
}

#[test]
fn structural_errors() {
    let v0 = entry(0, 0, 0, 0, Some(b"key"), Some(b"v"));
    assert!(matches!(
        read_legacy_entry(&v0[..10]),
        Err(BatchError::Truncated { .. })
    ));
    assert!(matches!(
        read_legacy_entry(&v0[..v0.len() - 1]),
        Err(BatchError::Truncated { .. })
    ));
    let mut bad = v0.clone();
    bad[16] = 2;
    assert_eq!(
        read_legacy_entry(&bad),
        Err(BatchError::UnsupportedMagic { magic: 2 })
    );
    let mut small = v0.clone();
    small[8..12].copy_from_slice(&13i32.to_be_bytes());
    assert_eq!(
        read_legacy_entry(&small),
        Err(BatchError::LengthTooSmall { length: 13 })
    );
    // Key length running past the record.
    let mut overrun = v0.clone();
    overrun[18..22].copy_from_slice(&100i32.to_be_bytes());
    assert!(matches!(
        read_legacy_entry(&overrun),
        Err(BatchError::InvalidRecord {
            reason: RecordFault::FieldOverrun,
            ..
        })
    ));
    // A byte after the value.
    let mut extra = v0.clone();
    extra.push(0);
    let size = i32::from_be_bytes(extra[8..12].try_into().unwrap()) + 1;
    extra[8..12].copy_from_slice(&size.to_be_bytes());
    assert!(matches!(
        read_legacy_entry(&extra),
        Err(BatchError::InvalidRecord {
            reason: RecordFault::SizeMismatch { .. },
            ..
        })
    ));
}

fn wrapper(
    magic: i8,
    codec: Compression,
    wrapper_offset: i64,
    attrs_extra: i8,
    ts: i64,
    inner: &[Vec<u8>],
) -> Vec<u8> {
    let stream = compress(codec, &inner.concat());
    entry(
        wrapper_offset,
        magic,
        codec.id() as i8 | attrs_extra,
        ts,
        None,
        Some(&stream),
    )
}

#[test]
fn v1_compressed_wrapper_has_relative_inner_offsets() {
    for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
        let inner: Vec<Vec<u8>> = (0..3)
            .map(|i| entry(i, 1, 0, 100 + i, Some(&[b'a' + i as u8]), Some(b"v")))
            .collect();
        let w = wrapper(1, codec, 52, 0, 102, &inner);
        let e = read_legacy_entry(&w).unwrap();
        assert_eq!(e.compression(), Ok(codec));
        let recs = e.records().unwrap();
        let offsets: Vec<i64> = recs.iter().map(|r| r.offset.0).collect();
        assert_eq!(offsets, vec![50, 51, 52], "{}", codec.name());
        assert_eq!(recs[1].timestamp, Timestamp(101));
        assert_eq!(recs[2].key.as_deref(), Some(&b"c"[..]));
        assert!(recs.iter().all(|r| r.crc_valid));
    }
    // LogAppendTime wrapper: inner timestamps are the wrapper's.
    let inner = vec![
        entry(0, 1, 0, 1, None, Some(b"v")),
        entry(1, 1, 0, 2, None, Some(b"w")),
    ];
    let w = wrapper(1, Compression::Gzip, 9, 0x08, 777, &inner);
    let recs = read_legacy_entry(&w).unwrap().records().unwrap();
    assert!(recs.iter().all(|r| r.timestamp == Timestamp(777)));
    assert_eq!(recs[0].timestamp_type, Some(TimestampType::LogAppendTime));
}

#[test]
fn v0_compressed_wrapper_has_absolute_offsets() {
    let inner = vec![
        entry(20, 0, 0, 0, None, Some(b"x")),
        entry(21, 0, 0, 0, None, Some(b"y")),
    ];
    let w = wrapper(0, Compression::Snappy, 21, 0, 0, &inner);
    let recs = read_legacy_entry(&w).unwrap().records().unwrap();
    assert_eq!(
        recs.iter().map(|r| r.offset.0).collect::<Vec<_>>(),
        vec![20, 21]
    );
    assert_eq!(recs[0].timestamp_type, None);
}

#[test]
fn v0_lz4_with_kafkas_broken_header_checksum() {
    let inner = entry(0, 0, 0, 0, None, Some(b"old lz4"));
    let mut stream = compress(Compression::Lz4, &inner);
    // Kafka 0.8 hashed the frame magic together with the descriptor.
    stream[6] = (xxh32_short(&stream[0..6]) >> 8) as u8;
    assert!(decompress(Compression::Lz4, &stream, 1 << 20).is_err());
    let w = entry(0, 0, Compression::Lz4.id() as i8, 0, None, Some(&stream));
    let recs = read_legacy_entry(&w).unwrap().records().unwrap();
    assert_eq!(recs[0].value.as_deref(), Some(&b"old lz4"[..]));
}

#[test]
fn wrapper_errors() {
    // zstd is not a legacy codec.
    let w = entry(0, 1, 4, 0, None, Some(b"x"));
    assert!(matches!(
        read_legacy_entry(&w).unwrap().records(),
        Err(BatchError::Decompression {
            reason: DecompressionFault::UnsupportedCodec,
            ..
        })
    ));
    // Invalid codec id.
    let w = entry(0, 1, 6, 0, None, Some(b"x"));
    assert_eq!(
        read_legacy_entry(&w).unwrap().records(),
        Err(BatchError::InvalidCompression { id: 6 })
    );
    // Inner magic differs from the wrapper's.
    let w = wrapper(
        1,
        Compression::Gzip,
        0,
        0,
        0,
        &[entry(0, 0, 0, 0, None, None)],
    );
    assert!(matches!(
        read_legacy_entry(&w).unwrap().records().unwrap_err().kind(),
        BatchError::UnsupportedMagic { magic: 0 }
    ));
    // Nested compression.
    let nested = wrapper(
        1,
        Compression::Gzip,
        0,
        0,
        0,
        &[entry(0, 1, 0, 0, None, None)],
    );
    let w = wrapper(1, Compression::Gzip, 0, 0, 0, &[nested]);
    assert!(matches!(
        read_legacy_entry(&w).unwrap().records().unwrap_err().kind(),
        BatchError::NestedCompression { codec_id: 1 }
    ));
    // Garbage stream.
    let w = entry(0, 1, 1, 0, None, Some(b"not gzip"));
    assert!(matches!(
        read_legacy_entry(&w).unwrap().records(),
        Err(BatchError::Decompression { .. })
    ));
}

#[test]
fn scanner_yields_legacy_entries_for_the_legacy_reader() {
    let mut seg = entry(0, 0, 0, 0, None, Some(b"a"));
    seg.extend(entry(1, 1, 0, 5, Some(b"k"), Some(b"b")));
    let entries: Vec<_> = BatchScanner::new(&seg)
        .map(|r| {
            let (pos, prefix) = r.unwrap();
            assert!(prefix.magic < 2);
            read_legacy_entry(&seg[pos..]).unwrap().offset
        })
        .collect();
    assert_eq!(entries, vec![Offset(0), Offset(1)]);
}
