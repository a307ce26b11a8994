//! Shared helpers for the broker's socket tests: start a broker on
//! `127.0.0.1:0` in a temporary directory, and a minimal Kafka client that
//! encodes requests and decodes responses with kafka-protocol.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use strata_broker::{BrokerConfig, BrokerHandle};
use strata_log::batch::BatchBuilder;
use strata_log::{Offset, Timestamp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every wait in these tests is bounded by this.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Broker config for tests: loopback port 0, data in `dir`, plus `extra`.
pub fn test_config(dir: &Path, extra: &[(&str, &str)]) -> BrokerConfig {
    let mut props: BTreeMap<String, String> = BTreeMap::new();
    props.insert("listeners".into(), "PLAINTEXT://127.0.0.1:0".into());
    props.insert("log.dirs".into(), dir.display().to_string());
    for (k, v) in extra {
        props.insert(k.to_string(), v.to_string());
    }
    BrokerConfig::from_properties(props).expect("valid test config")
}

pub async fn start(dir: &Path, extra: &[(&str, &str)]) -> BrokerHandle {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    strata_broker::start(test_config(dir, extra))
        .await
        .expect("broker starts")
}

/// [`start`] with the log engine's file mutations going through `fs` (for
/// injecting I/O errors with `strata_log::fs::FaultFs`).
pub async fn start_on(
    dir: &Path,
    extra: &[(&str, &str)],
    fs: strata_log::fs::SharedFs,
) -> BrokerHandle {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    strata_broker::start_with_fs(
        test_config(dir, extra),
        std::sync::Arc::new(strata_log::SystemClock),
        fs,
    )
    .await
    .expect("broker starts")
}

/// A raw Kafka connection.
pub struct Client {
    pub stream: TcpStream,
    next_correlation: i32,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let stream = tokio::time::timeout(DEADLINE, TcpStream::connect(addr))
            .await
            .expect("connect within deadline")
            .expect("connect");
        Client {
            stream,
            next_correlation: 1,
        }
    }

    /// Encode a request frame (size prefix included).
    pub fn frame<R: Request + Encodable + HeaderVersion>(
        &mut self,
        req: &R,
        version: i16,
    ) -> (i32, Bytes) {
        let correlation_id = self.next_correlation;
        self.next_correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("strata-test")));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        header
            .encode(&mut buf, R::header_version(version))
            .expect("encode header");
        req.encode(&mut buf, version).expect("encode request");
        let size = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&size.to_be_bytes());
        (correlation_id, buf.freeze())
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Read one response frame; `None` when the broker closed the connection.
    pub async fn read_frame(&mut self) -> Option<Bytes> {
        let read = async {
            let mut len = [0u8; 4];
            if self.stream.read_exact(&mut len).await.is_err() {
                return None;
            }
            let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
            self.stream.read_exact(&mut body).await.ok()?;
            Some(Bytes::from(body))
        };
        tokio::time::timeout(DEADLINE, read)
            .await
            .expect("response or close within deadline")
    }

    /// Decode a response frame of `R::Response` at `version`.
    pub fn decode<R: Request>(frame: Bytes, version: i16) -> (i32, R::Response) {
        let mut buf = frame;
        let header = ResponseHeader::decode(&mut buf, R::Response::header_version(version))
            .expect("response header");
        let resp = R::Response::decode(&mut buf, version).expect("response body");
        assert_eq!(buf.remaining(), 0, "trailing bytes after response");
        (header.correlation_id, resp)
    }

    /// Send `req` and wait for its response.
    pub async fn call<R: Request + Encodable + HeaderVersion>(
        &mut self,
        req: &R,
        version: i16,
    ) -> R::Response {
        let (correlation_id, frame) = self.frame(req, version);
        self.send_raw(&frame).await;
        let resp = self.read_frame().await.expect("broker answered");
        let (got, resp) = Self::decode::<R>(resp, version);
        assert_eq!(got, correlation_id, "correlation id");
        resp
    }

    /// True when the broker closed the connection (EOF within the deadline).
    pub async fn is_closed(&mut self) -> bool {
        self.read_frame().await.is_none()
    }
}

/// One uncompressed batch of `n` records `prefix-i` with the given timestamp.
pub fn batch(n: usize, prefix: &str, timestamp: i64, keyed: bool) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    for i in 0..n {
        let key = format!("k{i}");
        let value = format!("{prefix}-{i}");
        b.append(
            Timestamp(timestamp),
            keyed.then_some(key.as_bytes()),
            Some(value.as_bytes()),
            &[],
        );
    }
    b.build()
}

/// A Produce request with one batch for `topic`-`partition`.
pub fn produce_request(topic: &str, partition: i32, records: Vec<u8>, acks: i16) -> ProduceRequest {
    let mut pd = PartitionProduceData::default();
    pd.index = partition;
    pd.records = Some(Bytes::from(records));
    let mut td = TopicProduceData::default();
    td.name = TopicName(StrBytes::from_string(topic.to_string()));
    td.partition_data = vec![pd];
    let mut req = ProduceRequest::default();
    req.acks = acks;
    req.timeout_ms = 30_000;
    req.topic_data = vec![td];
    req
}

/// Produce one batch (v9) and return the partition answer's (error code, base offset).
pub async fn produce(
    client: &mut Client,
    topic: &str,
    partition: i32,
    records: Vec<u8>,
) -> (i16, i64) {
    let resp: ProduceResponse = client
        .call(&produce_request(topic, partition, records, -1), 9)
        .await;
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Metadata for `topics` (auto-creating them when the broker allows).
pub fn metadata_request(topics: &[&str], auto_create: bool) -> MetadataRequest {
    let mut req = MetadataRequest::default();
    req.topics = Some(
        topics
            .iter()
            .map(|t| {
                let mut mt =
                    kafka_protocol::messages::metadata_request::MetadataRequestTopic::default();
                mt.name = Some(TopicName(StrBytes::from_string(t.to_string())));
                mt
            })
            .collect(),
    );
    req.allow_auto_topic_creation = auto_create;
    req
}

/// Create `topic` through Metadata auto-creation (broker default partitions).
pub async fn create_topic(client: &mut Client, topic: &str) {
    let resp = client.call(&metadata_request(&[topic], true), 12).await;
    assert_eq!(resp.topics[0].error_code, 0, "auto-create {topic}");
}

pub fn api_key_of<R: Request>() -> ApiKey {
    ApiKey::try_from(R::KEY).expect("known key")
}

/// A sessionless consumer Fetch for one partition (by name; v13+ also by id).
pub fn fetch_request(
    topic: &str,
    topic_id: uuid::Uuid,
    partition: i32,
    offset: i64,
    max_wait_ms: i32,
    min_bytes: i32,
) -> kafka_protocol::messages::FetchRequest {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let mut p = FetchPartition::default();
    p.partition = partition;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    p.current_leader_epoch = -1;
    p.log_start_offset = -1;
    p.last_fetched_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.topic_id = topic_id;
    t.partitions = vec![p];
    let mut req = kafka_protocol::messages::FetchRequest::default();
    req.replica_id = kafka_protocol::messages::BrokerId(-1);
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = min_bytes;
    req.max_bytes = 50 << 20;
    req.session_id = 0;
    req.session_epoch = -1;
    req.topics = vec![t];
    req
}

/// Values of every record in a fetched partition, with offsets.
pub fn records_of(records: &Option<Bytes>) -> Vec<(i64, String)> {
    let mut buf = records.clone().unwrap_or_default();
    let mut out = Vec::new();
    // A fetch may end in a partial batch; decode whole batches only.
    while buf.len() >= 12 {
        let len = i32::from_be_bytes(buf[8..12].try_into().unwrap()) as usize + 12;
        if buf.len() < len {
            break;
        }
        let mut one = buf.split_to(len);
        let set =
            kafka_protocol::records::RecordBatchDecoder::decode(&mut one).expect("valid batch");
        for r in set.records {
            let v = r
                .value
                .map(|v| String::from_utf8(v.to_vec()).unwrap())
                .unwrap_or_default();
            out.push((r.offset, v));
        }
    }
    out
}

/// Topic id from Metadata.
pub async fn topic_id(client: &mut Client, topic: &str) -> uuid::Uuid {
    let resp = client.call(&metadata_request(&[topic], false), 12).await;
    resp.topics[0].topic_id
}

/// CreateTopics (v7) for one topic with `configs`; returns the topic's error code.
pub async fn create_topic_with(
    client: &mut Client,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> i16 {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_string(topic.to_string()));
    t.num_partitions = partitions;
    t.replication_factor = -1;
    t.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = CreatableTopicConfig::default();
            c.name = StrBytes::from_string(k.to_string());
            c.value = Some(StrBytes::from_string(v.to_string()));
            c
        })
        .collect();
    let mut req = kafka_protocol::messages::CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 30_000;
    let resp = client.call(&req, 7).await;
    resp.topics[0].error_code
}

/// IncrementalAlterConfigs on one resource (`ty`, `name`) with `ops` as
/// (config name, operation, value); returns the resource's (error code,
/// error message).
pub async fn incremental_alter(
    c: &mut Client,
    ty: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    let mut r = AlterConfigsResource::default();
    r.resource_type = ty;
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configs = ops
        .iter()
        .map(|(n, op, v)| {
            let mut a = AlterableConfig::default();
            a.name = StrBytes::from_string(n.to_string());
            a.config_operation = *op;
            a.value = v.map(|v| StrBytes::from_string(v.to_string()));
            a
        })
        .collect();
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources = vec![r];
    req.validate_only = validate_only;
    let resp = c.call(&req, 1).await;
    let r = &resp.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// DescribeConfigs (v4, synonyms and documentation included) of every config
/// of one resource.
pub async fn describe_configs(
    c: &mut Client,
    ty: i8,
    name: &str,
) -> kafka_protocol::messages::DescribeConfigsResponse {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::DescribeConfigsRequest;
    let mut r = DescribeConfigsResource::default();
    r.resource_type = ty;
    r.resource_name = StrBytes::from_string(name.to_string());
    r.configuration_keys = None;
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![r];
    req.include_synonyms = true;
    req.include_documentation = true;
    c.call(&req, 4).await
}

/// Authenticate on a SASL listener with PLAIN: SaslHandshake v1, then
/// SaslAuthenticate v2 with `\0user\0password`. Returns the client and
/// SaslAuthenticate's error code (0: authenticated).
pub async fn sasl_plain_attempt(addr: SocketAddr, user: &str, password: &str) -> (Client, i16) {
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let mut client = Client::connect(addr).await;
    let mut handshake = SaslHandshakeRequest::default();
    handshake.mechanism = StrBytes::from_static_str("PLAIN");
    let resp = client.call(&handshake, 1).await;
    assert_eq!(
        resp.error_code, 0,
        "PLAIN is enabled: {:?}",
        resp.mechanisms
    );
    let mut auth = SaslAuthenticateRequest::default();
    auth.auth_bytes = Bytes::from(format!("\0{user}\0{password}"));
    let resp = client.call(&auth, 2).await;
    (client, resp.error_code)
}

/// A connection authenticated as `user` with PLAIN (see [`sasl_plain_attempt`]).
pub async fn sasl_plain(addr: SocketAddr, user: &str, password: &str) -> Client {
    let (client, code) = sasl_plain_attempt(addr, user, password).await;
    assert_eq!(code, 0, "{user} authenticates");
    client
}

/// One HTTP exchange with the broker's HTTP listener: send `raw` (a whole
/// request head) and read until the server closes. Returns the status code,
/// the head and the body.
pub async fn http_raw(addr: SocketAddr, raw: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr)
        .await
        .expect("connect to the HTTP listener");
    s.write_all(raw).await.expect("send the request");
    let mut out = Vec::new();
    tokio::time::timeout(DEADLINE, s.read_to_end(&mut out))
        .await
        .expect("the HTTP answer in time")
        .expect("read the answer");
    let text = String::from_utf8(out).expect("a UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status code");
    (status, head.to_string(), body.to_string())
}

/// `GET path` from the broker's HTTP listener: (status, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: strata\r\n\r\n");
    let (status, _, body) = http_raw(addr, request.as_bytes()).await;
    (status, body)
}
