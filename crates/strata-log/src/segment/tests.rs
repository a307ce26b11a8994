//! Segment behaviour from Kafka's LogSegmentTest (§13 items 1-9).

use super::*;
use crate::batch::varint::{write_varint, write_varlong};
use crate::batch::{crc32c, ATTRIBUTES_POS, CRC_POS};

/// A v2 uncompressed batch with `count` records of `value_len` bytes, record
/// timestamps `first_ts + 10*i`.
pub(crate) fn batch(base: i64, count: i32, first_ts: i64, value_len: usize, epoch: i32) -> Vec<u8> {
    let mut records = Vec::new();
    for i in 0..count {
        let mut body = Vec::new();
        body.push(0u8);
        write_varlong(&mut body, 10 * i as i64);
        write_varint(&mut body, i);
        write_varint(&mut body, 1);
        body.push(b'k');
        write_varint(&mut body, value_len as i32);
        body.extend(std::iter::repeat_n(b'v', value_len));
        write_varint(&mut body, 0);
        write_varint(&mut records, body.len() as i32);
        records.extend_from_slice(&body);
    }
    let mut b = Vec::new();
    b.extend_from_slice(&base.to_be_bytes());
    b.extend_from_slice(&((49 + records.len()) as i32).to_be_bytes());
    b.extend_from_slice(&epoch.to_be_bytes());
    b.push(2);
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(count - 1).to_be_bytes());
    b.extend_from_slice(&first_ts.to_be_bytes());
    b.extend_from_slice(&(first_ts + 10 * (count as i64 - 1)).to_be_bytes());
    b.extend_from_slice(&(-1i64).to_be_bytes());
    b.extend_from_slice(&(-1i16).to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes());
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(&records);
    let crc = crc32c(&b[ATTRIBUTES_POS..]);
    b[CRC_POS..CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

fn cfg(interval: i32) -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: interval,
        max_index_size: 1000 * 12,
        roll_jitter_ms: 0,
        preallocate_bytes: None,
    }
}

fn append(seg: &Segment, b: &[u8]) {
    let v = crate::batch::BatchView::parse(b).unwrap();
    seg.append(v.last_offset(), v.max_timestamp(), v.last_offset(), b)
        .unwrap();
}

#[test]
fn new_segment_has_only_a_log_until_touched() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(40),
        cfg(4096),
        0,
        "",
    )
    .unwrap();
    append(&seg, &batch(40, 3, 1000, 10, 0));
    assert_eq!(seg.index_files_exist(), (false, false));
    seg.flush().unwrap();
    assert_eq!(seg.index_files_exist(), (true, true));
}

#[test]
fn append_overflow_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (base, largest) in [(0i64, 1i64 << 31), (100, 10), (1 << 31, 0)] {
        let seg = Segment::create(
            &crate::fs::StdFs::shared(),
            &crate::HandleCache::shared_default(),
            dir.path(),
            Offset(base),
            cfg(0),
            0,
            "",
        )
        .unwrap();
        let b = batch(largest, 1, 0, 1, 0);
        let err = seg
            .append(Offset(largest), Timestamp(0), Offset(largest), &b)
            .unwrap_err();
        assert!(matches!(err, LogError::OffsetOverflow { .. }), "{err}");
        assert_eq!(seg.size(), 0);
        assert_eq!(seg.file().unwrap().metadata().unwrap().len(), 0);
    }
}

#[test]
fn sparse_index_rule_gives_14_entries_for_30_appends() {
    let dir = tempfile::tempdir().unwrap();
    let s = batch(0, 1, 0, 20, 0).len() as i32;
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        cfg(2 * s - 1),
        0,
        "",
    )
    .unwrap();
    for i in 0..30 {
        append(&seg, &batch(i, 1, i * 10, 20, 0));
    }
    let (oe, _, te, _) = seg.index_fill().unwrap();
    assert_eq!((oe, te), (14, 14));
    assert_eq!(seg.read_next_offset().unwrap(), Offset(30));
    // truncateTo(base+1) leaves 0 entries and recomputes the max timestamp.
    assert_eq!(seg.truncate_to(Offset(1), 5).unwrap(), 29 * s as u64);
    let (oe, om, te, tm) = seg.index_fill().unwrap();
    assert_eq!((oe, te), (0, 0));
    assert_eq!((om, tm), (1500, 1000));
    assert_eq!(seg.max_timestamp_so_far().unwrap().timestamp, Timestamp(0));
    assert_eq!(seg.read_next_offset().unwrap(), Offset(1));
}

#[test]
fn reads_follow_kafkas_edge_cases() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(40),
        cfg(0),
        0,
        "",
    )
    .unwrap();
    assert!(seg.read(Offset(40), 100, u64::MAX, true).unwrap().is_none());
    let a = batch(40, 2, 0, 5, 0);
    let b = batch(45, 2, 0, 5, 0);
    append(&seg, &a);
    append(&seg, &b);
    // Before the first offset: from the first batch.
    let s = seg
        .read(Offset(10), 1 << 20, u64::MAX, false)
        .unwrap()
        .unwrap();
    assert_eq!((s.position, s.len), (0, (a.len() + b.len()) as u64));
    // In the gap 42..45: the next batch.
    let s = seg
        .read(Offset(43), 1 << 20, u64::MAX, false)
        .unwrap()
        .unwrap();
    assert_eq!(s.position, a.len() as u64);
    // Mid batch: the batch start.
    let s = seg.read(Offset(46), 1, u64::MAX, true).unwrap().unwrap();
    assert_eq!((s.position, s.len), (a.len() as u64, b.len() as u64));
    // Beyond: none.
    assert!(seg.read(Offset(47), 100, u64::MAX, true).unwrap().is_none());
}

#[test]
fn truncate_in_gap_removes_the_later_batch() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(40),
        cfg(0),
        0,
        "",
    )
    .unwrap();
    append(&seg, &batch(40, 1, 0, 5, 0));
    append(&seg, &batch(43, 1, 0, 5, 0));
    seg.truncate_to(Offset(41), 0).unwrap();
    assert_eq!(seg.read_next_offset().unwrap(), Offset(41));
}

#[test]
fn recovery_cuts_corruption_and_rebuilds_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        cfg(0),
        0,
        "",
    )
    .unwrap();
    let mut sizes = Vec::new();
    for i in 0..10 {
        let b = batch(i * 2, 2, 100 + i, 30, 0);
        sizes.push(b.len() as u64);
        append(&seg, &b);
    }
    seg.flush().unwrap();
    // Corrupt a byte of batch 6's records.
    let pos: u64 = sizes[..6].iter().sum::<u64>() + 70;
    std::os::unix::fs::FileExt::write_all_at(&*seg.file().unwrap(), &[0xff], pos).unwrap();
    let r = seg.recover(None, None).unwrap();
    assert_eq!(r.batches, 6);
    assert_eq!(r.next_offset, Offset(12));
    assert_eq!(seg.size(), sizes[..6].iter().sum::<u64>());
    assert_eq!(r.truncated_bytes, sizes[6..].iter().sum::<u64>());
    for o in 0..12 {
        let t = seg.translate_offset(Offset(o), 0).unwrap().unwrap();
        assert_eq!(t.last_offset, Offset(o | 1));
    }
    assert!(seg.translate_offset(Offset(12), 0).unwrap().is_none());
}

#[test]
fn preallocated_log_is_trimmed_on_close_and_reopens_with_same_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(0);
    c.preallocate_bytes = Some(10_000);
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        c,
        0,
        "",
    )
    .unwrap();
    let b = batch(0, 3, 0, 10, 0);
    append(&seg, &b);
    assert_eq!(seg.file().unwrap().metadata().unwrap().len(), 10_000);
    seg.close().unwrap();
    assert_eq!(
        seg.file().unwrap().metadata().unwrap().len(),
        b.len() as u64
    );
    let again = Segment::open(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        cfg(0),
        0,
        "",
    )
    .unwrap();
    assert_eq!(again.size(), b.len() as u64);
    assert_eq!(again.read_next_offset().unwrap(), Offset(3));
}

#[test]
fn roll_conditions() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(0);
    c.roll_jitter_ms = 30;
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        c,
        1_000,
        "",
    )
    .unwrap();
    let p = |ts: i64, now: i64, size: u64, off: i64| RollParams {
        max_segment_ms: 100,
        max_segment_bytes: 1000,
        max_timestamp_in_append: Timestamp(ts),
        max_offset_in_append: Offset(off),
        append_size: size,
        now_ms: now,
    };
    // Empty: never on time, but on offset overflow.
    assert_eq!(seg.should_roll(&p(10_000, 10_000, 1, 0)).unwrap(), None);
    assert_eq!(
        seg.should_roll(&p(0, 0, 1, 1 << 31)).unwrap(),
        Some(RollReason::OffsetOverflow)
    );
    let b = batch(0, 1, 5_000, 10, 0);
    append(&seg, &b);
    assert_eq!(seg.should_roll(&p(5_070, 0, 1, 1)).unwrap(), None);
    assert_eq!(
        seg.should_roll(&p(5_071, 0, 1, 1)).unwrap(),
        Some(RollReason::Time)
    );
    let remaining = 1000 - b.len() as u64;
    assert_eq!(seg.should_roll(&p(5_000, 0, remaining, 1)).unwrap(), None);
    assert_eq!(
        seg.should_roll(&p(5_000, 0, remaining + 1, 1)).unwrap(),
        Some(RollReason::Size)
    );
}

#[test]
fn suffix_change_does_not_materialise_lazy_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let seg = Segment::create(
        &crate::fs::StdFs::shared(),
        &crate::HandleCache::shared_default(),
        dir.path(),
        Offset(0),
        cfg(0),
        0,
        "",
    )
    .unwrap();
    append(&seg, &batch(0, 1, 0, 1, 0));
    seg.change_suffix("", ".deleted").unwrap();
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    // The `.txnindex` is created with the segment (Strata), the offset and
    // time indexes only when touched.
    assert_eq!(
        names,
        vec![
            "00000000000000000000.log.deleted".to_string(),
            "00000000000000000000.txnindex.deleted".to_string()
        ]
    );
    seg.flush().unwrap();
    assert!(dir
        .path()
        .join("00000000000000000000.index.deleted")
        .exists());
    seg.delete_files().unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
