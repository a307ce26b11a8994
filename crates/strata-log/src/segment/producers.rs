//! Producer state from segments: the rebuild that replays segments into a
//! [`ProducerStateManager`] (Kafka `UnifiedLog.rebuildProducerState`),
//! shared by the log (open, truncation) and the loader (segment recovery).

use std::sync::Arc;

use crate::batch::BatchView;
use crate::error::LogError;
use crate::producer_state::{BatchSink, ProducerStateError, ProducerStateManager};
use crate::segment::scan::{FileBatches, ScanError};
use crate::segment::Segment;
use crate::types::{Offset, TopicPartition};

/// Read size of the rebuild scan.
const REBUILD_CHUNK: usize = 1 << 20;

/// Producer-state failures of a log operation, with the partition.
pub(crate) fn state_error(tp: &TopicPartition, e: ProducerStateError) -> LogError {
    match e {
        // Snapshot I/O is storage I/O: the dir goes offline like for segments.
        ProducerStateError::Io { path, op, source } => LogError::Io { path, op, source },
        source => LogError::ProducerState {
            tp: tp.clone(),
            source,
        },
    }
}

/// Errors of the rebuild: the manager's, or reading the segments.
enum RebuildError {
    State(ProducerStateError),
    Log(LogError),
}

impl From<ProducerStateError> for RebuildError {
    fn from(e: ProducerStateError) -> Self {
        RebuildError::State(e)
    }
}

/// Call `sink` for every magic-2 batch of `segment` whose last offset is in
/// `[start, end)`.
fn scan_segment(
    segment: &Segment,
    start: Offset,
    end: Offset,
    sink: &mut BatchSink<'_>,
) -> Result<(), RebuildError> {
    let file = segment.file().map_err(RebuildError::Log)?;
    let mut batches = FileBatches::new(&file, 0, segment.size(), REBUILD_CHUNK);
    while let Some(next) = batches.next_batch() {
        let (summary, bytes) = match next {
            Ok(b) => b,
            Err(ScanError::Io(source)) => {
                return Err(RebuildError::Log(LogError::io(
                    segment.log_path(),
                    "read segment for producer state",
                    source,
                )))
            }
            // Recovery already cut corrupt tails; stop at one regardless.
            Err(ScanError::Corrupt { .. }) => return Ok(()),
        };
        if summary.last_offset >= end {
            break;
        }
        if summary.magic < 2 || summary.last_offset < start {
            continue;
        }
        match BatchView::parse(bytes) {
            Ok(view) => sink(&view)?,
            Err(e) => {
                tracing::warn!(segment = %segment.log_path().display(), position = summary.position,
                    error = %e, "unreadable batch skipped while rebuilding producer state");
            }
        }
    }
    Ok(())
}

/// Bring `psm` to `log_end` from its newest usable snapshot plus `segments`
/// (Kafka `UnifiedLog.rebuildProducerState`).
pub(crate) fn rebuild(
    psm: &mut ProducerStateManager,
    segments: &[Arc<Segment>],
    log_start: Offset,
    log_end: Offset,
    clean_shutdown: bool,
    now_ms: i64,
) -> Result<(), LogError> {
    let tp = psm.topic_partition().clone();
    let bases: Vec<Offset> = segments.iter().map(|s| s.base_offset()).collect();
    // See the module docs: without a snapshot, always scan.
    let reload_from_clean_shutdown = clean_shutdown && psm.latest_snapshot_offset().is_some();
    let r = psm.rebuild_producer_state::<RebuildError, _>(
        &bases,
        log_start,
        log_end,
        reload_from_clean_shutdown,
        now_ms,
        |base, start, end, sink| {
            let seg = segments
                .iter()
                .find(|s| s.base_offset() == base)
                .expect("rebuild reads only the bases it was given");
            scan_segment(seg, start, end, sink)
        },
    );
    match r {
        Ok(()) => Ok(()),
        Err(RebuildError::State(e)) => Err(state_error(&tp, e)),
        Err(RebuildError::Log(e)) => Err(e),
    }
}
