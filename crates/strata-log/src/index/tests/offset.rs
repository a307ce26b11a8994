//! OffsetIndex (Kafka OffsetIndexTest) and the `.index` bytes.

use std::fs;

use super::*;
#[test]
fn new_offset_index_is_preallocated_and_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.index");
    // 30 * 8 + 5: rounded down to whole entries.
    let idx = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 245, true).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 240);
    assert_eq!((idx.entries(), idx.max_entries()), (0, 30));
    assert_eq!(idx.last_offset(), BASE);
    assert!(!idx.is_full());
    idx.sanity_check().unwrap();
}

#[test]
fn too_small_max_size_is_rejected_without_leaving_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.index");
    let err = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 7, true)
        .err()
        .unwrap();
    assert!(matches!(
        err,
        IndexError::InvalidMaxIndexSize {
            max_index_size: 7,
            entry_size: 8,
            ..
        }
    ));
    assert!(!path.exists());
    let err = TimeIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 11, true)
        .err()
        .unwrap();
    assert!(matches!(
        err,
        IndexError::InvalidMaxIndexSize { entry_size: 12, .. }
    ));
}

#[test]
fn entries_are_big_endian_relative_offset_then_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, Offset(1000), 4);
    idx.append(Offset(1005), Position(100)).unwrap();
    idx.append(Offset(1000 + 0x0102_0304), Position(0x0a0b_0c0d))
        .unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(
        fs::read(path).unwrap(),
        [0, 0, 0, 5, 0, 0, 0, 100, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d]
    );
}

#[test]
fn lookup_at_base_middle_end_and_beyond() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    assert_eq!(idx.lookup(BASE), op(45, 0), "empty index");
    assert_eq!(idx.lookup(Offset(92)), op(45, 0), "empty index");
    for i in 0..30u32 {
        idx.append(BASE.plus(1 + 2 * i as i64), Position(i * 100))
            .unwrap();
    }
    assert_eq!(idx.lookup(Offset(0)), op(45, 0), "below base");
    assert_eq!(idx.lookup(BASE), op(45, 0), "below first entry");
    assert_eq!(idx.lookup(Offset(46)), op(46, 0), "first entry");
    assert_eq!(idx.lookup(Offset(47)), op(46, 0), "between entries");
    assert_eq!(idx.lookup(Offset(76)), op(76, 1500), "middle");
    assert_eq!(idx.lookup(Offset(77)), op(76, 1500), "middle gap");
    assert_eq!(idx.lookup(Offset(104)), op(104, 2900), "last entry");
    assert_eq!(idx.lookup(Offset(1_000_000)), op(104, 2900), "beyond");
    assert_eq!(idx.last_offset(), Offset(104));
    assert_eq!(idx.entry(0), op(46, 0));
    assert_eq!(idx.entry(29), op(104, 2900));
}

#[test]
#[should_panic(expected = "entry 0 requested")]
fn entry_past_the_end_panics() {
    let dir = tempfile::tempdir().unwrap();
    offset_index(&dir, BASE, 30).entry(0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn offset_lookup_matches_sorted_map(
        gaps in proptest::collection::vec((1i64..15, 0u32..40), 1..2600),
        probes in proptest::collection::vec(0i64..40_000, 1..60),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = offset_index(&dir, BASE, gaps.len());
        let mut map = BTreeMap::new();
        let (mut offset, mut position) = (BASE.get(), 0u32);
        for (g, p) in gaps {
            offset += g;
            position += p;
            idx.append(Offset(offset), Position(position)).unwrap();
            map.insert(offset, position);
        }
        prop_assert!(idx.is_full());
        let expect = |t: i64| map.range(..=t).next_back().map(|(&o, &p)| op(o, p)).unwrap_or(op(BASE.get(), 0));
        for t in probes.into_iter().chain(map.keys().copied()) {
            prop_assert_eq!(idx.lookup(Offset(t)), expect(t));
        }
    }
}

#[test]
fn append_rejects_non_increasing_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(51), Position(0)).unwrap();
    for bad in [50, 51] {
        match idx.append(Offset(bad), Position(1)) {
            Err(IndexError::InvalidOffset { offset, last, .. }) => {
                assert_eq!((offset, last), (Offset(bad), Offset(51)))
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(idx.entries(), 1);
    // The first entry may equal the base offset (and then passes the check).
    let mut idx = OffsetIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(&dir, "b.index"),
        Offset(20),
        80,
        true,
    )
    .unwrap();
    idx.append(Offset(20), Position(0)).unwrap();
    idx.sanity_check().unwrap();
}

#[test]
fn append_rejects_offsets_outside_the_relative_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    assert!(matches!(
        idx.append(Offset(44), Position(0)),
        Err(IndexError::OffsetOverflow { .. })
    ));
    assert!(matches!(
        idx.append(BASE.plus(1 << 31), Position(0)),
        Err(IndexError::OffsetOverflow { .. })
    ));
    assert!(idx.can_append_offset(BASE.plus(i32::MAX as i64)));
    idx.append(BASE.plus(i32::MAX as i64), Position(0)).unwrap();
    assert_eq!(
        idx.lookup(Offset(i64::MAX)).offset,
        BASE.plus(i32::MAX as i64)
    );
}

#[test]
fn full_index_rejects_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    for i in 0..30 {
        assert!(!idx.is_full());
        idx.append(BASE.plus(i + 1), Position(i as u32)).unwrap();
    }
    assert!(idx.is_full());
    assert!(matches!(
        idx.append(Offset(1000), Position(1)),
        Err(IndexError::Full { entries: 30, .. })
    ));
}

#[test]
fn truncate_to_follows_kafkas_cases() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, Offset(0), 10);
    for i in 1..10 {
        idx.append(Offset(i), Position(i as u32)).unwrap();
    }
    idx.truncate_to(Offset(12)).unwrap();
    assert_eq!(idx.lookup(Offset(10)), op(9, 9), "past the end: unchanged");
    idx.append(Offset(10), Position(10)).unwrap();
    idx.truncate_to(Offset(10)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(9, 9), Offset(9))
    );
    idx.append(Offset(10), Position(10)).unwrap();
    idx.truncate_to(Offset(9)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(8, 8), Offset(8))
    );
    idx.append(Offset(9), Position(9)).unwrap();
    idx.truncate_to(Offset(5)).unwrap();
    assert_eq!(
        (idx.lookup(Offset(10)), idx.last_offset()),
        (op(4, 4), Offset(4))
    );
    idx.append(Offset(5), Position(5)).unwrap();
    idx.truncate().unwrap();
    assert_eq!((idx.entries(), idx.last_offset()), (0, Offset(0)));
}

#[test]
fn truncate_to_every_boundary() {
    // Entries at 10, 20, ..., 100. For every target: keep exactly the
    // entries below it.
    let dir = tempfile::tempdir().unwrap();
    for target in 0..=111i64 {
        let path = new_path(&dir, &format!("{target}.index"));
        let mut idx =
            OffsetIndex::open(&crate::fs::StdFs::shared(), &path, Offset(0), 88, true).unwrap();
        for i in 1..=10 {
            idx.append(Offset(i * 10), Position(i as u32)).unwrap();
        }
        idx.truncate_to(Offset(target)).unwrap();
        let expected = (1..=10).filter(|i| i * 10 < target).count();
        assert_eq!(idx.entries(), expected, "truncate_to({target})");
        let last = if expected == 0 {
            0
        } else {
            expected as i64 * 10
        };
        assert_eq!(idx.last_offset(), Offset(last), "truncate_to({target})");
        // Appending continues after the cut.
        idx.append(Offset(last + 1), Position(100)).unwrap();
    }
}

#[test]
fn close_trims_and_reopen_reads_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(51), Position(0)).unwrap();
    idx.append(Offset(52), Position(1)).unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 16);

    let mut reopened =
        OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 30 * 8, true).unwrap();
    assert_eq!((reopened.entries(), reopened.max_entries()), (2, 2));
    assert_eq!(reopened.last_offset(), Offset(52));
    assert_eq!(reopened.lookup(Offset(51)), op(51, 0));
    assert_eq!(reopened.lookup(Offset(60)), op(52, 1));
    assert!(reopened.is_full(), "a trimmed index is full until resized");
    assert!(matches!(
        reopened.append(Offset(53), Position(2)),
        Err(IndexError::Full { .. })
    ));
    reopened.sanity_check().unwrap();
    // Growing it back (as loading does for the active segment) allows appends.
    assert!(reopened.resize(30 * 8).unwrap());
    assert!(!reopened.resize(30 * 8 + 3).unwrap(), "same rounded size");
    assert_eq!((reopened.entries(), reopened.max_entries()), (2, 30));
    reopened.append(Offset(53), Position(2)).unwrap();
    reopened.close().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 24);
}

#[test]
fn reset_clears_and_grows_to_max() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.trim_to_valid_size().unwrap();
    assert_eq!(idx.max_entries(), 1);
    idx.reset().unwrap();
    assert_eq!(
        (idx.entries(), idx.max_entries(), idx.length()),
        (0, 30, 240)
    );
    assert_eq!(idx.last_offset(), BASE);
}

#[test]
fn resize_below_the_entries_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.append(Offset(51), Position(0)).unwrap();
    assert!(matches!(
        idx.resize(8),
        Err(IndexError::ResizeBelowEntries { entries: 2, .. })
    ));
    assert_eq!(idx.entries(), 2);
}

#[test]
fn untrimmed_index_left_by_a_crash_fails_the_sanity_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(0)).unwrap();
    idx.append(Offset(60), Position(4096)).unwrap();
    idx.flush().unwrap();
    let path = idx.path().to_path_buf();
    drop(idx); // a crash: never trimmed
    assert_eq!(fs::metadata(&path).unwrap().len(), 240);

    let reopened = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 240, true).unwrap();
    assert_eq!(reopened.entries(), 30, "every slot counts, as in Kafka");
    assert!(reopened.is_full());
    assert_eq!(
        reopened.last_offset(),
        BASE,
        "zero slot decodes as (base, 0)"
    );
    assert_eq!(
        corruption(reopened.sanity_check()),
        IndexCorruption::OffsetNotIncreasing {
            slot: 29,
            previous: BASE,
            offset: BASE
        }
    );
    // The full scan names the first bad slot: the first zero after (60, 4096).
    assert_eq!(
        corruption(reopened.check_all_entries()),
        IndexCorruption::OffsetNotIncreasing {
            slot: 2,
            previous: Offset(60),
            offset: BASE
        }
    );
}

#[test]
fn sanity_check_reports_kafkas_corruptions() {
    let dir = tempfile::tempdir().unwrap();
    // Length not a multiple of 8: a 2-byte garbage file.
    let path = new_path(&dir, "short.index");
    fs::write(&path, [1, 2]).unwrap();
    let idx = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 240, true).unwrap();
    assert_eq!(idx.entries(), 0);
    assert_eq!(
        corruption(idx.sanity_check()),
        IndexCorruption::LengthNotMultiple {
            length: 2,
            entry_size: 8
        }
    );
    // Last offset below the base: a negative relative offset.
    let path = new_path(&dir, "neg.index");
    fs::write(&path, [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).unwrap();
    let idx = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 240, true).unwrap();
    assert_eq!(
        corruption(idx.sanity_check()),
        IndexCorruption::LastOffsetBelowBase {
            last_offset: Offset(44),
            base_offset: BASE
        }
    );
    // Decreasing positions.
    let path = new_path(&dir, "pos.index");
    fs::write(&path, [0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 2, 0, 0, 0, 8]).unwrap();
    let idx = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 240, true).unwrap();
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::PositionDecreasing { slot: 1, .. }
    ));
}

#[test]
fn fetch_upper_bound_offset_uses_positions() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    let (first, second, third, fourth) = (op(45, 0), op(46, 10), op(47, 23), op(48, 37));
    assert_eq!(idx.fetch_upper_bound_offset(first, 5), None);
    for e in [first, second, third, fourth] {
        idx.append(e.offset, e.position).unwrap();
    }
    assert_eq!(idx.fetch_upper_bound_offset(first, 5), Some(second));
    assert_eq!(idx.fetch_upper_bound_offset(first, 10), Some(second));
    assert_eq!(idx.fetch_upper_bound_offset(first, 23), Some(third));
    assert_eq!(idx.fetch_upper_bound_offset(first, 22), Some(third));
    assert_eq!(idx.fetch_upper_bound_offset(second, 24), Some(fourth));
    assert_eq!(idx.fetch_upper_bound_offset(fourth, 1), None);
    assert_eq!(idx.fetch_upper_bound_offset(first, 200), None);
    // Kafka's quirk: a target equal to the first entry's position is never
    // probed as an exact hit, so the entry after it is returned.
    assert_eq!(idx.fetch_upper_bound_offset(first, 0), Some(second));
    let mut single = OffsetIndex::open(
        &crate::fs::StdFs::shared(),
        &new_path(&dir, "one.index"),
        BASE,
        80,
        true,
    )
    .unwrap();
    single.append(Offset(50), Position(10)).unwrap();
    assert_eq!(single.fetch_upper_bound_offset(op(50, 0), 10), None);
    assert_eq!(
        single.fetch_upper_bound_offset(op(50, 0), 9),
        Some(op(50, 10))
    );
}

#[test]
fn read_only_index() {
    let dir = tempfile::tempdir().unwrap();
    let missing = new_path(&dir, "missing.index");
    assert!(matches!(
        OffsetIndex::open(&crate::fs::StdFs::shared(), &missing, BASE, 240, false),
        Err(IndexError::Io {
            op: IndexOp::Open,
            ..
        })
    ));
    assert!(!missing.exists());
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(7)).unwrap();
    let path = idx.path().to_path_buf();
    idx.close().unwrap();
    let mut ro = OffsetIndex::open(&crate::fs::StdFs::shared(), &path, BASE, 240, false).unwrap();
    assert_eq!(ro.entry(0), op(50, 7));
    ro.truncate_to(Offset(51)).unwrap();
    assert_eq!(ro.entries(), 1);
    ro.truncate().unwrap();
    assert!(matches!(
        ro.append(Offset(60), Position(0)),
        Err(IndexError::ReadOnly { .. })
    ));
}

#[test]
fn rename_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = offset_index(&dir, BASE, 30);
    idx.append(Offset(50), Position(7)).unwrap();
    let old = idx.path().to_path_buf();
    let renamed = new_path(&dir, "00.index.deleted");
    idx.rename_to(&renamed).unwrap();
    assert!(!old.exists() && renamed.exists());
    assert_eq!(idx.path(), renamed.as_path());
    idx.append(Offset(51), Position(8)).unwrap();
    assert_eq!(idx.lookup(Offset(51)), op(51, 8));
    assert!(idx.delete().unwrap());
    assert!(!renamed.exists());
    let idx = OffsetIndex::open(&crate::fs::StdFs::shared(), &old, BASE, 240, true).unwrap();
    fs::remove_file(&old).unwrap();
    assert!(!idx.delete().unwrap(), "already gone");
}

/// An existing index of a segment named for offset `i64::MAX` with a
/// positive relative offset in a slot made opening it overflow (a panic with
/// overflow checks on, the `index_files` fuzz target's crash). The offset
/// wraps as in Kafka, and the sanity check reports the file as corrupt.
#[test]
fn slot_past_the_largest_base_offset_is_corruption_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "x.index");
    let mut slot = 1i32.to_be_bytes().to_vec();
    slot.extend_from_slice(&0i32.to_be_bytes());
    fs::write(&path, &slot).unwrap();
    let idx = OffsetIndex::open(
        &crate::fs::StdFs::shared(),
        &path,
        Offset(i64::MAX),
        80,
        false,
    )
    .unwrap();
    assert_eq!(idx.last_offset(), Offset(i64::MIN));
    assert!(matches!(
        corruption(idx.sanity_check()),
        IndexCorruption::LastOffsetBelowBase { .. }
    ));
}
