//! Rebuilding state from snapshots and segments, and segment-recovery application.

use std::fs;

use super::*;
use crate::format::snapshot_file;

// ---- rebuild ----------------------------------------------------------------------------

/// Segments as lists of batches; the reader follows the contract of
/// `rebuild_producer_state`.
struct Segments(Vec<(Offset, Vec<Vec<u8>>)>);

impl Segments {
    fn bases(&self) -> Vec<Offset> {
        self.0.iter().map(|(b, _)| *b).collect()
    }
    fn read(
        &self,
        base: Offset,
        start: Offset,
        end: Offset,
        sink: &mut BatchSink<'_>,
    ) -> Result<(), ProducerStateError> {
        let (_, batches) = self
            .0
            .iter()
            .find(|(b, _)| *b == base)
            .expect("known segment");
        for bytes in batches {
            let view = BatchView::parse(bytes).unwrap();
            if view.last_offset() >= start && view.last_offset() < end {
                sink(&view)?;
            }
        }
        Ok(())
    }
}

fn three_segments() -> Segments {
    Segments(vec![
        (
            Offset(0),
            vec![
                batch(PID, 0, 0, 0, 2, 1_000, false),
                batch(ProducerId(-1), -1, -1, 2, 1, 1_000, false),
            ],
        ),
        (
            Offset(3),
            vec![
                batch(ProducerId(2), 0, 0, 3, 1, 1_000, true),
                batch(PID, 0, 2, 4, 1, 1_000, false),
            ],
        ),
        (
            Offset(5),
            vec![
                marker(ProducerId(2), 0, 5, true, 3, 2_000),
                batch(PID, 0, 3, 6, 2, 1_000, false),
            ],
        ),
    ])
}

#[test]
fn rebuild_replays_segments_and_snapshots_the_last_two_bases() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |b, s, e, sink| segs.read(b, s, e, sink),
    )
    .unwrap();
    assert_eq!(psm.map_end_offset(), Offset(8));
    let e = entry(&psm, PID);
    assert_eq!((e.last_seq(), e.last_data_offset()), (4, Offset(7)));
    assert_eq!(e.batch_metadata().len(), 3);
    let p2 = entry(&psm, ProducerId(2));
    assert_eq!(
        (p2.current_txn_first_offset(), p2.coordinator_epoch()),
        (None, 3)
    );
    assert_eq!(
        psm.first_unstable_offset(),
        Some(Offset(3)),
        "marker not yet below the HW"
    );
    assert_eq!(snapshot_files(dir.path()), vec![3, 5, 8]);
    // The snapshot at 5 holds the state before segment 5: producer 2's transaction is open.
    let at5 = read_snapshot(&snapshot_file(dir.path(), Offset(5), "")).unwrap();
    let p2_at5 = at5.iter().find(|e| e.producer_id == ProducerId(2)).unwrap();
    assert_eq!(p2_at5.ongoing_txn_first_offset(), Some(Offset(3)));

    // Reloading from the last snapshot gives the same producers.
    let mut again = manager(dir.path());
    again
        .rebuild_producer_state::<ProducerStateError, _>(
            &segs.bases(),
            Offset(0),
            Offset(8),
            false,
            1_000,
            |_, _, _, _| panic!("nothing to replay past the snapshot at the log end"),
        )
        .unwrap();
    assert_eq!(entry(&again, PID).last_seq(), 4);
}

#[test]
fn rebuild_from_a_middle_snapshot_replays_only_the_rest() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |b, s, e, sink| segs.read(b, s, e, sink),
    )
    .unwrap();
    fs::remove_file(snapshot_file(dir.path(), Offset(8), "")).unwrap();
    let mut again = manager(dir.path());
    let mut read_from = Vec::new();
    again
        .rebuild_producer_state::<ProducerStateError, _>(
            &segs.bases(),
            Offset(0),
            Offset(8),
            false,
            1_000,
            |b, s, e, sink| {
                read_from.push((b, s));
                segs.read(b, s, e, sink)
            },
        )
        .unwrap();
    assert_eq!(read_from, vec![(Offset(5), Offset(5))]);
    assert_eq!(entry(&again, PID).last_seq(), 4);
    assert_eq!(
        entry(&again, ProducerId(2)).current_txn_first_offset(),
        None
    );
    assert_eq!(again.first_undecided_offset(), None);
}

#[test]
fn rebuild_after_clean_shutdown_without_snapshots_writes_empty_ones() {
    let (dir, mut psm) = setup();
    let segs = three_segments();
    psm.rebuild_producer_state::<ProducerStateError, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        true,
        1_000,
        |_, _, _, _| panic!("the upgrade path does not scan"),
    )
    .unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![3, 5, 8]);
    assert!(read_snapshot(&snapshot_file(dir.path(), Offset(8), ""))
        .unwrap()
        .is_empty());
    assert_eq!(psm.producer_id_count(), 0);
}

#[test]
fn rebuild_propagates_reader_errors() {
    #[derive(Debug)]
    enum Outer {
        State(ProducerStateError),
        Disk,
    }
    impl From<ProducerStateError> for Outer {
        fn from(e: ProducerStateError) -> Self {
            Outer::State(e)
        }
    }
    let (_d, mut psm) = setup();
    let segs = three_segments();
    let r = psm.rebuild_producer_state::<Outer, _>(
        &segs.bases(),
        Offset(0),
        Offset(8),
        false,
        1_000,
        |_, _, _, _| Err(Outer::Disk),
    );
    assert!(matches!(r, Err(Outer::Disk)));
    // A log that breaks transaction rules surfaces as a state error.
    let bad = Segments(vec![(
        Offset(0),
        vec![
            batch(PID, 0, 0, 0, 1, 1, true),
            batch(PID, 0, 1, 1, 1, 1, false),
        ],
    )]);
    let r = psm.rebuild_producer_state::<Outer, _>(
        &bad.bases(),
        Offset(0),
        Offset(2),
        false,
        1_000,
        |b, s, e, sink| bad.read(b, s, e, sink).map_err(Outer::from),
    );
    assert!(matches!(
        r,
        Err(Outer::State(ProducerStateError::InvalidTxnState { .. }))
    ));
}

#[test]
fn apply_replicated_batch_moves_the_map_end() {
    let (_d, mut psm) = setup();
    let b = batch(PID, 0, 7, 10, 3, 1_000, true);
    assert_eq!(
        psm.apply_replicated_batch(&BatchView::parse(&b).unwrap())
            .unwrap(),
        None
    );
    assert_eq!(psm.map_end_offset(), Offset(13));
    let m = marker(PID, 0, 13, false, 0, 2_000);
    let done = psm
        .apply_replicated_batch(&BatchView::parse(&m).unwrap())
        .unwrap()
        .unwrap();
    assert!(done.is_aborted);
    assert_eq!(psm.last_stable_offset(&done), Offset(14));
    psm.complete_txn(&done);
    let plain = batch(ProducerId(-1), -1, -1, 14, 1, 1_000, false);
    assert_eq!(
        psm.apply_replicated_batch(&BatchView::parse(&plain).unwrap())
            .unwrap(),
        None
    );
    assert_eq!(psm.map_end_offset(), Offset(15));
    assert_eq!(psm.producer_id_count(), 1);
}
