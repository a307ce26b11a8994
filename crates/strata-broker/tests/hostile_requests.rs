//! Guards against requests that declare more than they carry: for every API and
//! version the broker advertises, a valid request has huge array counts, string
//! lengths and byte lengths written over each of its positions (classic int32
//! and int16, and compact varint encodings; top level and nested), and
//! - decoding any of them allocates at most a small multiple of the frame
//!   (measured with a counting allocator), and
//! - sent over a socket, none of them stops the broker or grows its memory,
//!   and the broker keeps serving afterwards.
//!
//! Before the decoder was bounded, the 22-byte Metadata v4 request declaring
//! 0x7fffffff topics aborted the process ("memory allocation of 154618822584
//! bytes failed").

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use common::{start, Client};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---- a counting allocator: process-wide and per-thread current/peak bytes ----

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static PANICS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_CURRENT: Cell<isize> = const { Cell::new(0) };
    static THREAD_PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
    let _ = THREAD_CURRENT.try_with(|c| {
        let v = c.get() + n as isize;
        c.set(v);
        let _ = THREAD_PEAK.try_with(|p| p.set(p.get().max(v)));
    });
}

fn shrank(n: usize) {
    CURRENT.fetch_sub(n, Ordering::Relaxed);
    let _ = THREAD_CURRENT.try_with(|c| c.set(c.get() - n as isize));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are side effects only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes this thread held above what it held when `f` started.
fn thread_peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = THREAD_CURRENT.with(|c| c.get());
    THREAD_PEAK.with(|p| p.set(base));
    let out = f();
    let peak = THREAD_PEAK.with(|p| p.get());
    (out, (peak - base).max(0) as usize)
}

// ---- valid requests to start from ----

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn topic(v: &str) -> TopicName {
    TopicName(s(v))
}

/// The request of `api` with no content: every top-level array empty.
fn empty(api: ApiKey) -> Option<RequestKind> {
    use RequestKind as K;
    Some(match api {
        ApiKey::Produce => K::Produce(Default::default()),
        ApiKey::Fetch => K::Fetch(Default::default()),
        ApiKey::ListOffsets => K::ListOffsets(Default::default()),
        ApiKey::Metadata => K::Metadata(Default::default()),
        ApiKey::ApiVersions => K::ApiVersions(Default::default()),
        ApiKey::CreateTopics => K::CreateTopics(Default::default()),
        ApiKey::DeleteTopics => K::DeleteTopics(Default::default()),
        ApiKey::DeleteRecords => K::DeleteRecords(Default::default()),
        ApiKey::InitProducerId => K::InitProducerId(Default::default()),
        ApiKey::OffsetForLeaderEpoch => K::OffsetForLeaderEpoch(Default::default()),
        ApiKey::DescribeConfigs => K::DescribeConfigs(Default::default()),
        ApiKey::AlterConfigs => K::AlterConfigs(Default::default()),
        ApiKey::AlterReplicaLogDirs => K::AlterReplicaLogDirs(Default::default()),
        ApiKey::DescribeLogDirs => K::DescribeLogDirs(Default::default()),
        ApiKey::CreatePartitions => K::CreatePartitions(Default::default()),
        ApiKey::IncrementalAlterConfigs => K::IncrementalAlterConfigs(Default::default()),
        ApiKey::DescribeCluster => K::DescribeCluster(Default::default()),
        ApiKey::OffsetCommit => K::OffsetCommit(Default::default()),
        ApiKey::OffsetFetch => K::OffsetFetch(Default::default()),
        ApiKey::FindCoordinator => K::FindCoordinator(Default::default()),
        ApiKey::JoinGroup => K::JoinGroup(Default::default()),
        ApiKey::Heartbeat => K::Heartbeat(Default::default()),
        ApiKey::LeaveGroup => K::LeaveGroup(Default::default()),
        ApiKey::SyncGroup => K::SyncGroup(Default::default()),
        ApiKey::DescribeGroups => K::DescribeGroups(Default::default()),
        ApiKey::ListGroups => K::ListGroups(Default::default()),
        ApiKey::DeleteGroups => K::DeleteGroups(Default::default()),
        ApiKey::OffsetDelete => K::OffsetDelete(Default::default()),
        ApiKey::ElectLeaders => K::ElectLeaders(Default::default()),
        ApiKey::AlterPartitionReassignments => K::AlterPartitionReassignments(Default::default()),
        ApiKey::ListPartitionReassignments => K::ListPartitionReassignments(Default::default()),
        ApiKey::AddPartitionsToTxn => K::AddPartitionsToTxn(Default::default()),
        ApiKey::AddOffsetsToTxn => K::AddOffsetsToTxn(Default::default()),
        ApiKey::EndTxn => K::EndTxn(Default::default()),
        ApiKey::WriteTxnMarkers => K::WriteTxnMarkers(Default::default()),
        ApiKey::TxnOffsetCommit => K::TxnOffsetCommit(Default::default()),
        ApiKey::DescribeProducers => K::DescribeProducers(Default::default()),
        ApiKey::DescribeTransactions => K::DescribeTransactions(Default::default()),
        ApiKey::ListTransactions => K::ListTransactions(Default::default()),
        ApiKey::SaslHandshake => K::SaslHandshake(Default::default()),
        ApiKey::SaslAuthenticate => K::SaslAuthenticate(Default::default()),
        ApiKey::CreateAcls => K::CreateAcls(Default::default()),
        ApiKey::DescribeAcls => K::DescribeAcls(Default::default()),
        ApiKey::DeleteAcls => K::DeleteAcls(Default::default()),
        ApiKey::DescribeUserScramCredentials => K::DescribeUserScramCredentials(Default::default()),
        ApiKey::AlterUserScramCredentials => K::AlterUserScramCredentials(Default::default()),
        ApiKey::DescribeClientQuotas => K::DescribeClientQuotas(Default::default()),
        ApiKey::AlterClientQuotas => K::AlterClientQuotas(Default::default()),
        ApiKey::ConsumerGroupHeartbeat => K::ConsumerGroupHeartbeat(Default::default()),
        ApiKey::ConsumerGroupDescribe => K::ConsumerGroupDescribe(Default::default()),
        _ => return None,
    })
}

/// The request of `api` with nested content (arrays of structs holding
/// arrays, strings and bytes), where the test has one.
fn nested(api: ApiKey, version: i16) -> Option<RequestKind> {
    use RequestKind as K;
    Some(match api {
        ApiKey::ElectLeaders => {
            let mut tp = elect_leaders_request::TopicPartitions::default();
            tp.topic = topic("hostile");
            tp.partitions = vec![0, 1];
            let mut req = ElectLeadersRequest::default();
            req.topic_partitions = Some(vec![tp.clone(), tp]);
            K::ElectLeaders(req)
        }
        ApiKey::AlterPartitionReassignments => {
            use alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic};
            let mut move_to = ReassignablePartition::default();
            move_to.replicas = Some(vec![BrokerId(1), BrokerId(2)]);
            let mut cancel = ReassignablePartition::default();
            cancel.partition_index = 1;
            cancel.replicas = None;
            let mut t = ReassignableTopic::default();
            t.name = topic("hostile");
            t.partitions = vec![move_to, cancel];
            let mut req = AlterPartitionReassignmentsRequest::default();
            req.topics = vec![t];
            K::AlterPartitionReassignments(req)
        }
        ApiKey::AlterReplicaLogDirs => {
            use alter_replica_log_dirs_request::{AlterReplicaLogDir, AlterReplicaLogDirTopic};
            let mut t = AlterReplicaLogDirTopic::default();
            t.name = topic("hostile");
            t.partitions = vec![0, 0, -1];
            let mut d = AlterReplicaLogDir::default();
            d.path = s("/no/such/log/dir");
            d.topics = vec![t.clone(), t];
            let mut req = AlterReplicaLogDirsRequest::default();
            req.dirs = vec![d.clone(), d];
            K::AlterReplicaLogDirs(req)
        }
        ApiKey::ListPartitionReassignments => {
            let mut t =
                list_partition_reassignments_request::ListPartitionReassignmentsTopics::default();
            t.name = topic("hostile");
            t.partition_indexes = vec![0, 1];
            let mut req = ListPartitionReassignmentsRequest::default();
            req.topics = Some(vec![t]);
            K::ListPartitionReassignments(req)
        }
        ApiKey::Produce => K::Produce(common::produce_request(
            "hostile",
            0,
            common::batch(2, "v", 1_700_000_000_000, true),
            1,
        )),
        ApiKey::Fetch => {
            let mut req = common::fetch_request("hostile", uuid::Uuid::nil(), 0, 0, 0, 1);
            let mut forgotten = fetch_request::ForgottenTopic::default();
            forgotten.topic = topic("gone");
            forgotten.partitions = vec![1, 2];
            if version >= 7 {
                req.forgotten_topics_data = vec![forgotten];
            }
            K::Fetch(req)
        }
        ApiKey::ListOffsets => {
            let mut p = ListOffsetsPartition::default();
            p.timestamp = -1;
            let mut t = ListOffsetsTopic::default();
            t.name = topic("hostile");
            t.partitions = vec![p.clone(), p];
            let mut req = ListOffsetsRequest::default();
            req.topics = vec![t];
            K::ListOffsets(req)
        }
        ApiKey::Metadata => {
            let mut t = MetadataRequestTopic::default();
            t.name = Some(topic("hostile"));
            let mut req = MetadataRequest::default();
            req.topics = Some(vec![t.clone(), t]);
            K::Metadata(req)
        }
        ApiKey::CreateTopics => {
            let mut a = CreatableReplicaAssignment::default();
            a.broker_ids = vec![BrokerId(1)];
            let mut c = CreatableTopicConfig::default();
            c.name = s("retention.ms");
            c.value = Some(s("1000"));
            let mut t = CreatableTopic::default();
            t.name = topic("hostile-created");
            t.num_partitions = -1;
            t.replication_factor = -1;
            t.assignments = vec![a];
            t.configs = vec![c];
            let mut req = CreateTopicsRequest::default();
            req.topics = vec![t];
            req.validate_only = true;
            K::CreateTopics(req)
        }
        ApiKey::DeleteTopics => {
            let mut req = DeleteTopicsRequest::default();
            if version >= 6 {
                let mut t = DeleteTopicState::default();
                t.name = Some(topic("never-there"));
                req.topics = vec![t];
            } else {
                req.topic_names = vec![topic("never-there"), topic("nor-this")];
            }
            K::DeleteTopics(req)
        }
        ApiKey::JoinGroup => {
            let mut p = JoinGroupRequestProtocol::default();
            p.name = s("range");
            p.metadata = Bytes::from_static(b"\x00\x01subscription");
            let mut req = JoinGroupRequest::default();
            req.group_id = GroupId(s("hostile-group"));
            req.session_timeout_ms = 10_000;
            req.rebalance_timeout_ms = 10_000;
            req.protocol_type = s("consumer");
            req.protocols = vec![p.clone(), p];
            K::JoinGroup(req)
        }
        ApiKey::SyncGroup => {
            let mut a = SyncGroupRequestAssignment::default();
            a.member_id = s("m");
            a.assignment = Bytes::from_static(b"assignment");
            let mut req = SyncGroupRequest::default();
            req.group_id = GroupId(s("hostile-group"));
            req.member_id = s("m");
            req.assignments = vec![a];
            K::SyncGroup(req)
        }
        ApiKey::DescribeConfigs => {
            let mut r = DescribeConfigsResource::default();
            r.resource_type = 2;
            r.resource_name = s("hostile");
            r.configuration_keys = Some(vec![s("segment.bytes"), s("retention.ms")]);
            let mut req = DescribeConfigsRequest::default();
            req.resources = vec![r];
            K::DescribeConfigs(req)
        }
        ApiKey::OffsetCommit => {
            let mut p = OffsetCommitRequestPartition::default();
            p.committed_metadata = Some(s("meta"));
            let mut t = OffsetCommitRequestTopic::default();
            t.name = topic("hostile");
            t.partitions = vec![p];
            let mut req = OffsetCommitRequest::default();
            req.group_id = GroupId(s("hostile-group"));
            req.topics = vec![t];
            K::OffsetCommit(req)
        }
        ApiKey::ConsumerGroupHeartbeat => {
            use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
            use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
            let mut tp = TopicPartitions::default();
            tp.partitions = vec![0, 1, 2];
            let mut req = ConsumerGroupHeartbeatRequest::default();
            req.group_id = GroupId(s("hostile-group"));
            req.member_id = s("hostile-member");
            req.rebalance_timeout_ms = 30_000;
            req.subscribed_topic_names = Some(vec![topic("hostile"), topic("other")]);
            if version >= 1 {
                req.subscribed_topic_regex = Some(s("host.*"));
            }
            req.server_assignor = Some(s("uniform"));
            req.topic_partitions = Some(vec![tp.clone(), tp]);
            K::ConsumerGroupHeartbeat(req)
        }
        ApiKey::ConsumerGroupDescribe => {
            let mut req = kafka_protocol::messages::ConsumerGroupDescribeRequest::default();
            req.group_ids = vec![GroupId(s("hostile-group")), GroupId(s("other"))];
            K::ConsumerGroupDescribe(req)
        }
        _ => return None,
    })
}

/// A request frame body (header + request, no size prefix).
fn encode_frame(api: ApiKey, version: i16, request: &RequestKind) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(s("hostile")));
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, api.request_header_version(version))
        .expect("encode header");
    request
        .encode(&mut buf, version)
        .unwrap_or_else(|e| panic!("encode {api:?} v{version}: {e}"));
    buf.freeze()
}

/// Huge lengths written over each position after the API key, version and
/// correlation id: int32 and int16 (classic arrays, bytes, strings) and a
/// five-byte unsigned varint (compact arrays, strings, bytes).
fn mutations(frame: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    for pos in 8..frame.len() {
        for word in [
            &0x7fff_ffffu32.to_be_bytes()[..],
            &0x7fffu16.to_be_bytes()[..],
        ] {
            if pos + word.len() <= frame.len() {
                let mut m = frame.to_vec();
                m[pos..pos + word.len()].copy_from_slice(word);
                out.push(Bytes::from(m));
            }
        }
        let mut m = frame[..pos].to_vec();
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        m.extend_from_slice(&frame[pos + 1..]);
        out.push(Bytes::from(m));
    }
    out
}

/// Every (API, version) the broker advertises, from its ApiVersions answer.
async fn advertised(client: &mut Client) -> Vec<(ApiKey, i16)> {
    let resp = client.call(&ApiVersionsRequest::default(), 0).await;
    assert_eq!(resp.error_code, 0);
    let mut out = Vec::new();
    for k in &resp.api_keys {
        let api = ApiKey::try_from(k.api_key).expect("advertised key is known");
        for v in k.min_version..=k.max_version {
            out.push((api, v));
        }
    }
    out
}

/// Every hostile frame, with the (API, version) it came from.
fn hostile_frames(apis: &[(ApiKey, i16)]) -> Vec<(ApiKey, i16, Bytes)> {
    let mut out = Vec::new();
    for &(api, version) in apis {
        let base = empty(api).unwrap_or_else(|| panic!("no sample for advertised {api:?}"));
        let mut samples = vec![encode_frame(api, version, &base)];
        if let Some(n) = nested(api, version) {
            samples.push(encode_frame(api, version, &n));
        }
        for sample in samples {
            // The valid request itself decodes.
            strata_broker::decode_request(sample.clone())
                .unwrap_or_else(|e| panic!("valid {api:?} v{version} refused: {e}"));
            for m in mutations(&sample) {
                out.push((api, version, m));
            }
        }
    }
    out
}

/// Memory a decode may use: a small multiple of the frame plus fixed room
/// for the per-array reservation cap (64 KiB) at a few nesting levels.
fn decode_bound(frame_len: usize) -> usize {
    64 * frame_len + 512 * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_declared_lengths_never_allocate_or_stop_the_broker() {
    // A handler that panics only loses its connection (tokio contains it), but it
    // is a bug all the same: count every panic in the process.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        default_hook(info);
    }));
    let dir = tempfile::tempdir().unwrap();
    let broker = start(
        dir.path(),
        &[
            ("group.initial.rebalance.delay.ms", "0"),
            // A mutated partition count must not make the test create thousands.
            ("strata.max.partitions", "64"),
            ("auto.create.topics.enable", "false"),
        ],
    )
    .await;
    let addr = broker.local_addr();
    let mut client = Client::connect(addr).await;
    assert_eq!(
        common::create_topic_with(&mut client, "hostile", 1, &[]).await,
        0
    );
    let apis = advertised(&mut client).await;
    assert!(
        apis.len() > 150,
        "expected every API's versions, got {}",
        apis.len()
    );
    let frames = hostile_frames(&apis);
    eprintln!(
        "{} hostile frames over {} (API, version) pairs",
        frames.len(),
        apis.len()
    );

    // 1. In process: the decoder refuses or decodes within the bound.
    let mut worst = (0.0f64, ApiKey::Produce, 0i16, 0usize);
    let mut refused = 0usize;
    for (api, version, frame) in &frames {
        let len = frame.len();
        let (result, peak) = thread_peak_during(|| strata_broker::decode_request(frame.clone()));
        refused += result.is_err() as usize;
        drop(result);
        assert!(
            peak <= decode_bound(len),
            "{api:?} v{version}: decoding a {len}-byte frame allocated {peak} bytes"
        );
        let ratio = peak as f64 / len as f64;
        if ratio > worst.0 {
            worst = (ratio, *api, *version, peak);
        }
    }
    eprintln!(
        "{refused} refused; worst decode {:.1}x its frame ({:?} v{}, {} bytes)",
        worst.0, worst.1, worst.2, worst.3
    );
    assert!(
        refused > frames.len() / 2,
        "most hostile frames must be refused"
    );

    // 2. Over sockets: the broker survives all of them with bounded memory.
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let gate = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = tokio::task::JoinSet::new();
    for (_, _, frame) in frames {
        let permit = gate.clone().acquire_owned().await.unwrap();
        tasks.spawn(async move {
            send_and_drain(addr, &frame).await;
            drop(permit);
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("sender task");
    }
    assert_eq!(
        PANICS.load(Ordering::Relaxed),
        0,
        "a hostile request made a handler panic (see the output above)"
    );
    let grown = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!(
        "process peak grew by {} KiB while serving them",
        grown / 1024
    );
    assert!(grown < 256 << 20, "memory grew by {grown} bytes");

    // 3. The broker still serves: the classic repro gets a closed connection,
    //    and a normal produce and metadata round trip work.
    let mut repro = TcpStream::connect(addr).await.unwrap();
    repro
        .write_all(
            b"\x00\x00\x00\x12\x00\x03\x00\x04\x00\x00\x00\x01\x00\x03adv\x7f\xff\xff\xff\x00",
        )
        .await
        .unwrap();
    let mut rest = Vec::new();
    let n = tokio::time::timeout(common::DEADLINE, repro.read_to_end(&mut rest))
        .await
        .expect("closed within the deadline")
        .unwrap_or(0);
    assert_eq!(n, 0, "the repro must be answered by closing the connection");
    let mut client = Client::connect(addr).await;
    let (code, _) = common::produce(
        &mut client,
        "hostile",
        0,
        common::batch(3, "after", 1_700_000_000_000, false),
    )
    .await;
    assert_eq!(code, 0, "produce after the storm");
    let resp = client
        .call(&common::metadata_request(&["hostile"], false), 12)
        .await;
    assert_eq!(resp.topics[0].error_code, 0);
    broker.shutdown().await.expect("clean shutdown");
}

/// Send one frame, then read until the broker answers, closes, or a short wait
/// passes (a valid long-poll may legitimately stay open).
async fn send_and_drain(addr: std::net::SocketAddr, frame: &Bytes) {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        panic!("broker stopped accepting connections");
    };
    let mut out = BytesMut::with_capacity(frame.len() + 4);
    out.put_i32(frame.len() as i32);
    out.extend_from_slice(frame);
    if stream.write_all(&out).await.is_err() {
        return; // closed on us already
    }
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await;
}
