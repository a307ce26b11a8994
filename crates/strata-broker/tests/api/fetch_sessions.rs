//! Guards incremental fetch sessions (KIP-227) over the wire: a full fetch
//! opens a session, incremental fetches answer only partitions that
//! changed, forgotten partitions leave, bad ids and epochs get Kafka's
//! errors, a one-slot cache evicts idle sessions while a consumer that
//! follows Kafka's client rules still reads every record exactly once, and
//! zero slots make every fetch sessionless.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::common::*;

const ID_NOT_FOUND: i16 = 70;
const INVALID_EPOCH: i16 = 71;
const TOPIC_ID_ERROR: i16 = 106;

/// A Fetch of `parts` (partition, offset) of `topic` in session `id` at `epoch`.
fn session_fetch(
    topic: &str,
    topic_id: uuid::Uuid,
    (id, epoch): (i32, i32),
    parts: &[(i32, i64)],
    forget: &[i32],
    max_wait_ms: i32,
) -> FetchRequest {
    let mut req = FetchRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    req.max_bytes = 50 << 20;
    req.session_id = id;
    req.session_epoch = epoch;
    if !parts.is_empty() {
        let mut t = FetchTopic::default();
        t.topic = TopicName(StrBytes::from_string(topic.to_string()));
        t.topic_id = topic_id;
        t.partitions = parts
            .iter()
            .map(|&(partition, offset)| {
                let mut p = FetchPartition::default();
                p.partition = partition;
                p.fetch_offset = offset;
                p.partition_max_bytes = 1 << 20;
                p.current_leader_epoch = -1;
                p.log_start_offset = -1;
                p.last_fetched_epoch = -1;
                p
            })
            .collect();
        req.topics = vec![t];
    }
    if !forget.is_empty() {
        let mut f = ForgottenTopic::default();
        f.topic = TopicName(StrBytes::from_string(topic.to_string()));
        f.topic_id = topic_id;
        f.partitions = forget.to_vec();
        req.forgotten_topics_data = vec![f];
    }
    req
}

/// (partition, records as (offset, value)) of every partition listed.
fn listed(resp: &FetchResponse) -> Vec<(i32, Vec<(i64, String)>)> {
    resp.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| (p.partition_index, records_of(&p.records)))
        .collect()
}

async fn setup(
    extra: &[(&str, &str)],
    partitions: i32,
) -> (
    tempfile::TempDir,
    strata_broker::BrokerHandle,
    Client,
    uuid::Uuid,
) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), extra).await;
    let mut c = Client::connect(broker.local_addr()).await;
    assert_eq!(create_topic_with(&mut c, "s", partitions, &[]).await, 0);
    let id = topic_id(&mut c, "s").await;
    (dir, broker, c, id)
}

#[tokio::test]
async fn incremental_fetches_list_only_what_changed() {
    for version in [12i16, 13, 16] {
        let (_dir, broker, mut c, tid) =
            setup(&[("strata.metrics.listener", "127.0.0.1:0")], 4).await;
        for p in 0..4 {
            produce(&mut c, "s", p, batch(2, &format!("p{p}"), 1_000, false)).await;
        }
        let all: Vec<(i32, i64)> = (0..4).map(|p| (p, 0)).collect();
        let full = c
            .call(&session_fetch("s", tid, (0, 0), &all, &[], 0), version)
            .await;
        assert_eq!(full.error_code, 0);
        let sid = full.session_id;
        assert_ne!(sid, 0, "v{version}: a full fetch opens a session");
        assert_eq!(listed(&full).len(), 4);
        assert!(listed(&full).iter().all(|(_, r)| r.len() == 2));
        let (_, body) = http_get(broker.metrics_addr().unwrap(), "/metrics").await;
        assert!(
            body.contains("kafka_server_fetchsessioncache_numincrementalfetchsessions 1\n"),
            "{body}"
        );
        assert!(
            body.contains("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached 4\n")
        );

        // The client moves its offsets: nothing changed on the broker.
        let moved: Vec<(i32, i64)> = (0..4).map(|p| (p, 2)).collect();
        let r = c
            .call(&session_fetch("s", tid, (sid, 1), &moved, &[], 0), version)
            .await;
        assert_eq!((r.error_code, r.session_id), (0, sid));
        assert!(listed(&r).is_empty(), "v{version}: {:?}", listed(&r));

        // Nothing listed, nothing changed: the long poll waits, then an
        // empty answer.
        let t0 = Instant::now();
        let r = c
            .call(&session_fetch("s", tid, (sid, 2), &[], &[], 300), version)
            .await;
        assert!(t0.elapsed() >= Duration::from_millis(250));
        assert_eq!((r.error_code, r.session_id), (0, sid));
        assert!(r.responses.is_empty());

        // One produce: only that partition, with its records.
        produce(&mut c, "s", 2, batch(3, "new", 2_000, false)).await;
        let r = c
            .call(&session_fetch("s", tid, (sid, 3), &[], &[], 0), version)
            .await;
        let expect: Vec<(i64, String)> = (0..3).map(|i| (2 + i, format!("new-{i}"))).collect();
        assert_eq!(listed(&r), vec![(2, expect)], "v{version}");
        if version >= 13 {
            assert_eq!(r.responses[0].topic_id, tid);
        } else {
            assert_eq!(r.responses[0].topic.as_str(), "s");
        }

        // The client moves partition 2's offset; a produce to 0 while a
        // long poll waits wakes it with partition 0 only.
        let mut producer = Client::connect(broker.local_addr()).await;
        let waiting = session_fetch("s", tid, (sid, 4), &[(2, 5)], &[], 10_000);
        let poll = c.call(&waiting, version);
        let wake = async {
            tokio::task::yield_now().await;
            produce(&mut producer, "s", 0, batch(1, "late", 3_000, false)).await;
        };
        let t0 = Instant::now();
        let (r, ()) = tokio::join!(poll, wake);
        assert!(t0.elapsed() < Duration::from_secs(5));
        let got = listed(&r);
        assert!(
            got == vec![(0, vec![(2, "late-0".to_string())])],
            "v{version}: {got:?}"
        );

        // Forget partitions 0 and 1: produces there are not answered.
        let r = c
            .call(
                &session_fetch("s", tid, (sid, 5), &[(0, 3)], &[0, 1], 0),
                version,
            )
            .await;
        assert_eq!(r.error_code, 0);
        produce(&mut c, "s", 1, batch(1, "gone", 4_000, false)).await;
        produce(&mut c, "s", 3, batch(1, "kept", 4_000, false)).await;
        let r = c
            .call(&session_fetch("s", tid, (sid, 6), &[], &[], 0), version)
            .await;
        assert_eq!(
            listed(&r),
            vec![(3, vec![(2, "kept-0".to_string())])],
            "v{version}"
        );
        let (_, body) = http_get(broker.metrics_addr().unwrap(), "/metrics").await;
        assert!(
            body.contains("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached 2\n")
        );
    }
}

#[tokio::test]
async fn bad_ids_and_epochs_get_kafkas_errors() {
    let (_dir, _broker, mut c, tid) = setup(&[], 2).await;
    produce(&mut c, "s", 0, batch(1, "a", 1_000, false)).await;
    let parts = [(0, 0), (1, 0)];
    let r = c
        .call(&session_fetch("s", tid, (12345, 1), &parts, &[], 0), 12)
        .await;
    assert_eq!((r.error_code, r.session_id), (ID_NOT_FOUND, 0));
    assert!(r.responses.is_empty());

    let sid = c
        .call(&session_fetch("s", tid, (0, 0), &parts, &[], 0), 12)
        .await
        .session_id;
    assert_ne!(sid, 0);
    for wrong in [2, 7, i32::MAX] {
        let r = c
            .call(&session_fetch("s", tid, (sid, wrong), &[], &[], 0), 12)
            .await;
        assert_eq!(r.error_code, INVALID_EPOCH, "epoch {wrong}");
        assert!(r.responses.is_empty());
    }
    // A v12 session cannot continue with topic ids.
    let r = c
        .call(&session_fetch("s", tid, (sid, 1), &[], &[], 0), 13)
        .await;
    assert_eq!(r.error_code, TOPIC_ID_ERROR);
    // The session survived the errors: epoch 1 still works.
    let r = c
        .call(&session_fetch("s", tid, (sid, 1), &[], &[], 0), 12)
        .await;
    assert_eq!((r.error_code, r.session_id), (0, sid));
    // Epoch -1 closes it (a sessionless answer, all partitions listed).
    let r = c
        .call(&session_fetch("s", tid, (sid, -1), &parts, &[], 0), 12)
        .await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    assert_eq!(listed(&r).len(), 2);
    let r = c
        .call(&session_fetch("s", tid, (sid, 2), &[], &[], 0), 12)
        .await;
    assert_eq!(r.error_code, ID_NOT_FOUND);

    // A full fetch naming a session closes it and opens another.
    let a = c
        .call(&session_fetch("s", tid, (0, 0), &parts, &[], 0), 12)
        .await
        .session_id;
    let b = c
        .call(&session_fetch("s", tid, (a, 0), &parts, &[], 0), 12)
        .await
        .session_id;
    assert!(a != 0 && b != 0 && a != b);
    let r = c
        .call(&session_fetch("s", tid, (a, 1), &[], &[], 0), 12)
        .await;
    assert_eq!(r.error_code, ID_NOT_FOUND);
}

#[tokio::test]
async fn zero_slots_make_every_fetch_sessionless() {
    let (_dir, _broker, mut c, tid) =
        setup(&[("max.incremental.fetch.session.cache.slots", "0")], 2).await;
    produce(&mut c, "s", 1, batch(2, "z", 1_000, false)).await;
    let r = c
        .call(
            &session_fetch("s", tid, (0, 0), &[(0, 0), (1, 0)], &[], 0),
            13,
        )
        .await;
    assert_eq!((r.error_code, r.session_id), (0, 0));
    assert_eq!(listed(&r)[1].1.len(), 2);
}

/// A consumer following Kafka's `FetchSessionHandler`: full fetches until
/// it has a session, then incremental ones listing only partitions whose
/// offset moved; a session error sends it back to a full fetch.
struct SessionConsumer {
    session: (i32, i32),
    offsets: BTreeMap<i32, i64>,
    sent: BTreeMap<i32, i64>,
    got: BTreeMap<i32, Vec<String>>,
    errors: Vec<i16>,
}

impl SessionConsumer {
    fn new(partitions: i32) -> Self {
        SessionConsumer {
            session: (0, 0),
            offsets: (0..partitions).map(|p| (p, 0)).collect(),
            sent: BTreeMap::new(),
            got: BTreeMap::new(),
            errors: Vec::new(),
        }
    }

    async fn poll(&mut self, c: &mut Client, tid: uuid::Uuid, version: i16) {
        let parts: Vec<(i32, i64)> = if self.session.0 == 0 {
            self.offsets.iter().map(|(&p, &o)| (p, o)).collect()
        } else {
            self.offsets
                .iter()
                .filter(|(p, o)| self.sent.get(p) != Some(o))
                .map(|(&p, &o)| (p, o))
                .collect()
        };
        let r = c
            .call(
                &session_fetch("s", tid, self.session, &parts, &[], 50),
                version,
            )
            .await;
        if r.error_code != 0 {
            self.errors.push(r.error_code);
            self.session = (0, 0);
            self.sent.clear();
            return;
        }
        if self.session.0 == 0 || r.session_id == 0 {
            self.sent.clear();
        }
        for (p, o) in parts {
            self.sent.insert(p, o);
        }
        self.session = match r.session_id {
            0 => (0, 0),
            id if id == self.session.0 => (id, self.session.1 + 1),
            id => (id, 1),
        };
        for (p, records) in listed(&r) {
            for (offset, value) in records {
                // Batches here hold whole produces, so a fetch never starts
                // before its offset: any earlier record is a duplicate.
                assert_eq!(offset, self.offsets[&p], "partition {p}: {value}");
                self.got.entry(p).or_default().push(value);
                self.offsets.insert(p, offset + 1);
            }
        }
    }
}

#[tokio::test]
async fn evicted_sessions_are_recreated_and_every_record_is_read_once() {
    let (_dir, broker, mut c, tid) = setup(
        &[
            ("max.incremental.fetch.session.cache.slots", "1"),
            ("strata.fetch.session.eviction.ms", "100"),
        ],
        3,
    )
    .await;
    let mut ca = Client::connect(broker.local_addr()).await;
    let mut cb = Client::connect(broker.local_addr()).await;
    let mut a = SessionConsumer::new(3);
    let mut b = SessionConsumer::new(3);
    let mut expected: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    let mut evictions_seen = 0;
    for round in 0..4 {
        for p in 0..3 {
            let prefix = format!("r{round}p{p}");
            produce(&mut c, "s", p, batch(2, &prefix, 1_000, false)).await;
            let e = expected.entry(p).or_default();
            e.extend((0..2).map(|i| format!("{prefix}-{i}")));
        }
        // A reads to the end, holding the one slot.
        let deadline = Instant::now() + DEADLINE;
        while a.got != expected {
            assert!(Instant::now() < deadline, "a: {:?}", a.got);
            a.poll(&mut ca, tid, 13).await;
        }
        // B polls until A's session is idle long enough to evict, and
        // reads to the end.
        let deadline = Instant::now() + DEADLINE;
        while b.session.0 == 0 || b.got != expected {
            assert!(Instant::now() < deadline, "b: {:?} {:?}", b.session, b.got);
            b.poll(&mut cb, tid, 13).await;
        }
        // A's next incremental fetch finds its session gone (70) or, if it
        // had none, stays sessionless; either way it reads nothing twice.
        let before = a.errors.len();
        a.poll(&mut ca, tid, 13).await;
        evictions_seen += a.errors.len() - before;
    }
    assert_eq!(a.got, expected);
    assert_eq!(b.got, expected);
    assert!(
        evictions_seen > 0 && a.errors.iter().all(|&e| e == ID_NOT_FOUND),
        "{:?}",
        a.errors
    );
}
