//! The cluster catalogue's contract: a write is visible only once the
//! reader hands it back (read-your-writes), two brokers' catalogues fed from
//! the same topic agree, a record the state machine rejects is skipped, and
//! a closed catalogue refuses writes instead of waiting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata_log::{LeaderEpoch, MockClock, Offset, Timestamp, TopicPartition};
use uuid::Uuid;

use super::{MetadataWriter, TailedRlmm};
use crate::error::MetadataError;
use crate::metadata::{
    RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState, TopicIdPartition,
};
use crate::rlmm::{serde, MetadataEvent, RemoteLogMetadataManager};

/// A one-partition "topic": records appended in order.
#[derive(Debug, Default)]
struct Topic {
    records: Mutex<Vec<Vec<u8>>>,
    closed: AtomicBool,
}

impl MetadataWriter for Topic {
    fn num_partitions(&self) -> i32 {
        1
    }

    fn write(&self, _: i32, value: &[u8], _: Timestamp) -> Result<Offset, MetadataError> {
        let mut records = self.records.lock().unwrap();
        records.push(value.to_vec());
        Ok(Offset(records.len() as i64 - 1))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// Hand every record not yet applied to `rlmm` (what the broker's reader does).
fn deliver(topic: &Topic, rlmm: &TailedRlmm) {
    let records = topic.records.lock().unwrap().clone();
    for (offset, value) in records.iter().enumerate() {
        rlmm.apply_record(0, Offset(offset as i64), value);
    }
}

fn segment() -> RemoteLogSegmentMetadata {
    let tip = TopicIdPartition::new(Uuid::from_u64_pair(1, 2), TopicPartition::new("t", 0));
    RemoteLogSegmentMetadata {
        segment_id: RemoteLogSegmentId::generate(tip),
        start_offset: Offset(0),
        end_offset: Offset(99),
        max_timestamp: Timestamp(5),
        broker_id: 1,
        event_timestamp_ms: 1,
        segment_leader_epochs: [(LeaderEpoch(0), Offset(0))].into_iter().collect(),
        segment_size_in_bytes: 100,
        custom_metadata: None,
        state: RemoteLogSegmentState::CopySegmentStarted,
    }
}

fn rlmm(topic: &Arc<Topic>, wait: Duration) -> Arc<TailedRlmm> {
    Arc::new(TailedRlmm::new(
        Arc::clone(topic) as Arc<dyn MetadataWriter>,
        MockClock::new(0),
        wait,
    ))
}

#[test]
fn a_write_returns_once_read_back_and_every_reader_agrees() {
    let topic = Arc::new(Topic::default());
    let writer = rlmm(&topic, Duration::from_secs(10));
    let other = rlmm(&topic, Duration::from_secs(10));
    assert!(!writer.is_ready(), "ready before the reader caught up");
    writer.set_ready();
    assert!(writer.is_ready());

    let md = segment();
    let tip = md.segment_id.partition.clone();
    let reader = {
        let (topic, writer) = (Arc::clone(&topic), Arc::clone(&writer));
        std::thread::spawn(move || {
            while topic.records.lock().unwrap().is_empty() {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                writer.list_remote_log_segments(&tip).unwrap().is_empty(),
                "applied before read back"
            );
            deliver(&topic, &writer);
        })
    };
    writer.add_remote_log_segment_metadata(md.clone()).unwrap();
    reader.join().unwrap();
    assert_eq!(
        writer
            .list_remote_log_segments(&md.segment_id.partition)
            .unwrap()
            .len(),
        1
    );

    // Another segment under the same id: refused before anything is written.
    let before = topic.records.lock().unwrap().len();
    let mut clash = md.clone();
    clash.end_offset = Offset(150);
    assert!(matches!(
        writer.add_remote_log_segment_metadata(clash),
        Err(MetadataError::AlreadyExists { .. })
    ));
    assert_eq!(topic.records.lock().unwrap().len(), before);

    // Another broker's catalogue, fed the same records (twice: re-reads are ignored), agrees.
    deliver(&topic, &other);
    deliver(&topic, &other);
    assert_eq!(
        other
            .list_remote_log_segments(&md.segment_id.partition)
            .unwrap(),
        writer
            .list_remote_log_segments(&md.segment_id.partition)
            .unwrap()
    );
    assert_eq!(other.next_offset(0), Offset(1));
}

#[test]
fn an_unread_write_times_out_and_a_closed_catalogue_refuses_writes() {
    let topic = Arc::new(Topic::default());
    let rlmm = rlmm(&topic, Duration::from_millis(50));
    let md = segment();
    assert!(matches!(
        rlmm.add_remote_log_segment_metadata(md.clone()),
        Err(MetadataError::NotReadBack {
            partition: 0,
            offset: 0,
            ..
        })
    ));
    // A record the state machine rejects (an update of an unknown segment) is skipped.
    let bogus = serde::encode(&MetadataEvent::Update(RemoteLogSegmentMetadataUpdate {
        segment_id: segment().segment_id,
        event_timestamp_ms: 2,
        custom_metadata: None,
        state: RemoteLogSegmentState::CopySegmentFinished,
        broker_id: 1,
    }));
    topic.records.lock().unwrap().push(bogus);
    deliver(&topic, &rlmm);
    assert_eq!(rlmm.next_offset(0), Offset(2));
    assert_eq!(
        rlmm.list_remote_log_segments(&md.segment_id.partition)
            .unwrap()
            .len(),
        1
    );

    rlmm.close();
    assert!(topic.closed.load(Ordering::Acquire));
    let mut next = segment();
    next.start_offset = Offset(100);
    next.end_offset = Offset(199);
    assert!(matches!(
        rlmm.add_remote_log_segment_metadata(next),
        Err(MetadataError::Closed)
    ));
}
