//! Guards the batch parsers against hostile input: random bytes, framed
//! garbage and mutated valid batches go through the scanner, validation,
//! record decoding, client validation and the legacy reader without a panic;
//! and whatever `BatchBuilder` writes (any codec) reads back identically.
//! Also guards the hot path: validating an uncompressed client batch must not
//! allocate per record (counted by a per-thread counting allocator).

use proptest::prelude::*;
use strata_log::batch::{
    read_legacy_entry, validate_batch, validate_batch_deep, validate_client_records,
    validate_client_records_with, AppendValidation, BatchBuilder, BatchScanner, BatchView,
    BatchViewMut, Compression, OwnedRecord, RecordHeader, TimestampType, MAGIC_V2,
};
use strata_log::{Offset, ProducerEpoch, ProducerId, Timestamp};

const NOW: i64 = 1_700_000_000_000;

/// Counts allocations made by the current thread.
struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; the counter
// is a const-initialised thread-local that never allocates.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(|c| c.get());
    f();
    ALLOCATIONS.with(|c| c.get()) - before
}

#[test]
fn uncompressed_client_validation_does_not_allocate_per_record() {
    let batch = |n: usize| {
        let mut b = BatchBuilder::new(Offset(0));
        let headers = [RecordHeader::new("h", Some(b"v"))];
        for i in 0..n {
            b.append(
                Timestamp(NOW + i as i64),
                Some(b"key"),
                Some(b"value"),
                &headers,
            );
        }
        b.build()
    };
    let (small, large) = (batch(2), batch(2000));
    let c = cfg(true);
    let mut scratch = Vec::new();
    let a_small = allocations_during(|| {
        validate_client_records_with(&small, &c, &mut scratch, 1 << 20).unwrap();
    });
    let a_large = allocations_during(|| {
        let v = validate_client_records_with(&large, &c, &mut scratch, 1 << 20).unwrap();
        assert_eq!(v.total_records, 2000);
    });
    assert_eq!(a_small, a_large, "allocations grow with the record count");
    assert!(a_large <= 2, "{a_large} allocations");
    // The counter works: decoding into owned records allocates per record.
    let owned = allocations_during(|| {
        BatchView::parse(&large).unwrap().records().unwrap();
    });
    assert!(owned > 2000);
}

fn cfg(compacted: bool) -> AppendValidation {
    AppendValidation {
        max_message_bytes: 1 << 20,
        compacted,
        timestamp_type: TimestampType::CreateTime,
        timestamp_before_max_ms: i64::MAX,
        timestamp_after_max_ms: i64::MAX,
        now: Timestamp(NOW),
    }
}

/// Run every reader over `bytes`; only panics count as failures.
fn exercise(bytes: &[u8]) {
    let mut scratch = Vec::new();
    for item in BatchScanner::new(bytes) {
        let Ok((pos, prefix)) = item else { break };
        if prefix.magic >= MAGIC_V2 {
            if let Ok(view) = BatchView::parse(&bytes[pos..]) {
                let _ = validate_batch(&view);
                let _ = validate_batch_deep(&view);
                if let Ok(iter) = view.record_iter_with_limit(&mut scratch, 1 << 20) {
                    for r in iter {
                        match r {
                            Ok(r) => {
                                let _ = r.headers.count();
                                let _ = r.to_owned_record();
                            }
                            Err(e) => {
                                let _ = e.class();
                            }
                        }
                    }
                }
            }
        } else if let Ok(entry) = read_legacy_entry(&bytes[pos..]) {
            let _ = entry.validate();
            let _ = entry.records_with_limit(1 << 20);
        }
    }
    for compacted in [false, true] {
        if let Err(e) = validate_client_records_with(bytes, &cfg(compacted), &mut scratch, 1 << 20)
        {
            let _ = (e.class(), e.kind(), e.to_string());
        }
    }
    let _ = read_legacy_entry(bytes).map(|e| e.records_with_limit(1 << 20));
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

#[derive(Clone, Debug)]
struct In {
    ts_offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<RecordHeader>,
}

fn input_record() -> impl Strategy<Value = In> {
    let bytes = || prop::option::of(prop::collection::vec(any::<u8>(), 0..40));
    let header = (
        "[a-z]{0,6}",
        prop::option::of(prop::collection::vec(any::<u8>(), 0..8)),
    )
        .prop_map(|(key, value)| RecordHeader { key, value });
    (
        -5000i64..5000,
        bytes(),
        bytes(),
        prop::collection::vec(header, 0..3),
    )
        .prop_map(|(ts_offset, key, value, headers)| In {
            ts_offset,
            key,
            value,
            headers,
        })
}

fn build(records: &[In], codec: Compression, producer: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0)).compression(codec);
    if producer {
        b = b.producer(ProducerId(7), ProducerEpoch(1), 0);
    }
    for r in records {
        b.append(
            Timestamp(NOW + r.ts_offset),
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        );
    }
    b.build()
}

/// One way to damage a batch.
#[derive(Clone, Debug)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    SetI32 { at: usize, value: i32 },
    Truncate { keep: usize },
    Append { extra: Vec<u8> },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![
        Just(0),
        Just(-1),
        Just(1),
        Just(i32::MAX),
        Just(i32::MIN),
        any::<i32>()
    ];
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (any::<usize>(), interesting).prop_map(|(at, value)| Mutation::SetI32 { at, value }),
        any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        prop::collection::vec(any::<u8>(), 1..40).prop_map(|extra| Mutation::Append { extra }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len();
    match m {
        Mutation::Flip { at, mask } => bytes[at % n] ^= mask,
        Mutation::SetI32 { at, value } => {
            if n >= 4 {
                let at = at % (n - 3);
                bytes[at..at + 4].copy_from_slice(&value.to_be_bytes());
            }
        }
        Mutation::Truncate { keep } => bytes.truncate(keep % n),
        Mutation::Append { extra } => bytes.extend_from_slice(extra),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        exercise(&bytes);
    }

    /// Garbage behind a plausible prefix, so it reaches the deeper parsers.
    #[test]
    fn framed_garbage_never_panics(
        magic in 0u8..=2,
        attrs in any::<u8>(),
        count in prop_oneof![Just(1i32), Just(3), any::<i32>()],
        body in prop::collection::vec(any::<u8>(), 50..300),
        fix_crc in any::<bool>(),
    ) {
        let mut bytes = vec![0u8; 12];
        bytes.extend(body);
        let len = (bytes.len() - 12) as i32;
        bytes[8..12].copy_from_slice(&len.to_be_bytes());
        bytes[16] = magic;
        if magic == 2 {
            bytes[22] = attrs;
            bytes[57..61].copy_from_slice(&count.to_be_bytes());
            if fix_crc {
                BatchViewMut::parse(&mut bytes).unwrap().update_crc();
            }
        } else {
            bytes[17] = attrs & 0x0f;
        }
        exercise(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn mutated_valid_batches_never_panic(
        records in prop::collection::vec(input_record(), 1..6),
        codec in codec(),
        mutations in prop::collection::vec(mutation(), 1..4),
        fix_crc in any::<bool>(),
    ) {
        let mut bytes = build(&records, codec, false);
        for m in &mutations {
            if bytes.is_empty() {
                break;
            }
            apply(&mut bytes, m);
        }
        if fix_crc {
            if let Ok(mut m) = BatchViewMut::parse(&mut bytes) {
                m.update_crc();
            }
        }
        exercise(&bytes);
    }

    #[test]
    fn builder_output_round_trips(
        records in prop::collection::vec(input_record(), 1..12),
        codec in codec(),
        producer in any::<bool>(),
    ) {
        let bytes = build(&records, codec, producer);
        let view = BatchView::parse(&bytes).unwrap();
        prop_assert_eq!(view.size(), bytes.len());
        prop_assert_eq!(view.compression(), Some(codec));
        prop_assert_eq!(validate_batch(&view), Ok(()));
        prop_assert_eq!(validate_batch_deep(&view), Ok(records.len()));
        let expected: Vec<OwnedRecord> = records
            .iter()
            .enumerate()
            .map(|(i, r)| OwnedRecord {
                offset: Offset(i as i64),
                timestamp: Timestamp(NOW + r.ts_offset),
                sequence: if producer { i as i32 } else { -1 },
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r.headers.clone(),
            })
            .collect();
        prop_assert_eq!(view.records().unwrap(), expected);
        let max = records.iter().map(|r| NOW + r.ts_offset).max().unwrap();
        prop_assert_eq!(view.max_timestamp(), Timestamp(max));

        let v = validate_client_records(&bytes, &cfg(false)).unwrap();
        prop_assert_eq!(v.total_records, records.len() as i64);
        prop_assert_eq!(v.max_timestamp, Timestamp(max));
        let all_keyed = records.iter().all(|r| r.key.is_some());
        prop_assert_eq!(validate_client_records(&bytes, &cfg(true)).is_ok(), all_keyed);
    }
}
