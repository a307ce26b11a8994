//! `--bootstrap-server`: the topic's effective configs from a running broker
//! with one DescribeConfigs (v4) request over a plain blocking TCP
//! connection ([`Connection`], which `super::live` uses too), encoded and
//! decoded with the `kafka-protocol` crate.
//!
//! Framing: `i32 size | request header v2 | DescribeConfigsRequest` out,
//! `i32 size | response header v1 | DescribeConfigsResponse` back.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use strata_log::LogConfig;

const VERSION: i16 = 4;
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// Largest response accepted (all of a group's committed offsets can be
/// large; configs are small).
const MAX_RESPONSE: usize = 64 << 20;

/// What a broker said about a topic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteConfigs {
    /// Topic configs Kafka knows, with their effective values.
    pub topic: BTreeMap<String, String>,
    /// The broker's `log.retention.check.interval.ms`, when it reports it.
    pub retention_check_interval_ms: Option<i64>,
}

/// Why DescribeConfigs failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{op} {server}: {source}")]
    Io {
        server: String,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{op} DescribeConfigs: {source}")]
    Protocol {
        op: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("response of {size} bytes exceeds {MAX_RESPONSE}")]
    TooLarge { size: usize },
    #[error("broker answered error code {code} for {resource}")]
    Kafka { resource: String, code: i16 },
    #[error("correlation id {got} does not match {expected}")]
    Correlation { expected: i32, got: i32 },
}

fn proto<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    op: &'static str,
) -> impl FnOnce(E) -> RemoteError {
    move |e| RemoteError::Protocol {
        op,
        source: e.into(),
    }
}

/// The DescribeConfigs request: the topic's configs and the broker's
/// retention check interval.
fn describe_request(topic: &str) -> DescribeConfigsRequest {
    let mut topic_res = DescribeConfigsResource::default();
    topic_res.resource_type = TOPIC;
    topic_res.resource_name = StrBytes::from_string(topic.to_owned());
    topic_res.configuration_keys = None;
    let mut broker_res = DescribeConfigsResource::default();
    broker_res.resource_type = BROKER;
    broker_res.resource_name = StrBytes::from_static_str("");
    broker_res.configuration_keys = Some(vec![StrBytes::from_static_str(
        "log.retention.check.interval.ms",
    )]);
    let mut req = DescribeConfigsRequest::default();
    req.resources = vec![topic_res, broker_res];
    req
}

/// What the DescribeConfigs response says about `topic`.
fn configs_of(resp: DescribeConfigsResponse, topic: &str) -> Result<RemoteConfigs, RemoteError> {
    let mut out = RemoteConfigs::default();
    for r in resp.results {
        if r.resource_type == TOPIC && r.error_code != 0 {
            return Err(RemoteError::Kafka {
                resource: topic.to_owned(),
                code: r.error_code,
            });
        }
        for c in r.configs {
            let (name, Some(value)) = (c.name.to_string(), c.value) else {
                continue;
            };
            if r.resource_type == TOPIC && LogConfig::definition(&name).is_some() {
                out.topic.insert(name, value.to_string());
            } else if r.resource_type == BROKER && name == "log.retention.check.interval.ms" {
                out.retention_check_interval_ms = value.parse().ok();
            }
        }
    }
    Ok(out)
}

/// DescribeConfigs for `topic` (and the broker's retention check interval).
///
/// # Errors
/// Connection and I/O errors, undecodable answers, a Kafka error code for
/// the topic (e.g. 3, unknown topic).
pub fn describe_topic_configs(server: &str, topic: &str) -> Result<RemoteConfigs, RemoteError> {
    let resp = Connection::connect(server)?.call(
        ApiKey::DescribeConfigs,
        VERSION,
        &describe_request(topic),
    )?;
    configs_of(resp, topic)
}

/// The doctor's read-only connection to a broker: one request at a time,
/// blocking, with a read timeout; shared by the config lookup here and the
/// live group positions (`super::live`).
pub struct Connection {
    server: String,
    stream: TcpStream,
    correlation: i32,
}

impl Connection {
    /// Connect to `server`.
    ///
    /// # Errors
    /// [`RemoteError::Io`].
    pub fn connect(server: &str) -> Result<Connection, RemoteError> {
        let stream = TcpStream::connect(server).map_err(io(server, "connect"))?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(io(server, "configure"))?;
        Ok(Connection {
            server: server.to_owned(),
            stream,
            correlation: 0,
        })
    }

    /// Send `req` as `key` v`version` and decode the answer.
    ///
    /// # Errors
    /// I/O errors, a response over [`MAX_RESPONSE`], a correlation id that
    /// does not match, undecodable bytes.
    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        req: &Req,
    ) -> Result<Resp, RemoteError> {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = key as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(StrBytes::from_static_str("strata-doctor"));
        let mut buf = BytesMut::new();
        header
            .encode(&mut buf, key.request_header_version(version))
            .map_err(proto("encode header"))?;
        req.encode(&mut buf, version)
            .map_err(proto("encode request"))?;
        let mut framed = (buf.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(&buf);
        let server = self.server.clone();
        self.stream
            .write_all(&framed)
            .map_err(io(&server, "send"))?;
        let mut size = [0u8; 4];
        self.stream
            .read_exact(&mut size)
            .map_err(io(&server, "receive"))?;
        let size = i32::from_be_bytes(size).max(0) as usize;
        if size > MAX_RESPONSE {
            return Err(RemoteError::TooLarge { size });
        }
        let mut body = vec![0u8; size];
        self.stream
            .read_exact(&mut body)
            .map_err(io(&server, "receive"))?;
        let mut body = Bytes::from(body);
        let h = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .map_err(proto("decode header"))?;
        if h.correlation_id != self.correlation {
            return Err(RemoteError::Correlation {
                expected: self.correlation,
                got: h.correlation_id,
            });
        }
        Resp::decode(&mut body, version).map_err(proto("decode response"))
    }
}

fn io(server: &str, op: &'static str) -> impl FnOnce(std::io::Error) -> RemoteError {
    let server = server.to_owned();
    move |source| RemoteError::Io { server, op, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::describe_configs_response::{
        DescribeConfigsResourceResult, DescribeConfigsResult,
    };

    #[test]
    fn the_request_decodes_as_describe_configs_v4() {
        let mut buf = BytesMut::new();
        describe_request("orders")
            .encode(&mut buf, VERSION)
            .unwrap();
        let req = DescribeConfigsRequest::decode(&mut buf.freeze(), VERSION).unwrap();
        assert_eq!(req.resources[0].resource_name.as_str(), "orders");
        assert_eq!(req.resources[0].resource_type, TOPIC);
        assert_eq!(req.resources[1].resource_type, BROKER);
    }

    #[test]
    fn topic_configs_and_the_check_interval_are_read_back() {
        let mut resp = DescribeConfigsResponse::default();
        let entry = |n: &'static str, v: Option<&'static str>| {
            let mut c = DescribeConfigsResourceResult::default();
            c.name = StrBytes::from_static_str(n);
            c.value = v.map(StrBytes::from_static_str);
            c
        };
        let mut t = DescribeConfigsResult::default();
        t.resource_type = TOPIC;
        t.configs = vec![
            entry("retention.ms", Some("1000")),
            entry("not.a.topic.config", Some("x")),
            entry("segment.bytes", None),
        ];
        let mut b = DescribeConfigsResult::default();
        b.resource_type = BROKER;
        b.configs = vec![entry("log.retention.check.interval.ms", Some("5000"))];
        resp.results = vec![t, b];
        let got = configs_of(resp, "t").unwrap();
        assert_eq!(got.topic.len(), 1);
        assert_eq!(got.topic["retention.ms"], "1000");
        assert_eq!(got.retention_check_interval_ms, Some(5000));
    }
}
