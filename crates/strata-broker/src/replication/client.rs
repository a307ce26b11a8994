//! A Kafka-protocol connection from this broker to another one (a
//! follower's link to its leader): one request at a time, each with a
//! deadline. Encoding and decoding are kafka-protocol's.

use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Responses larger than this are refused (a follower asks for at most
/// `replica.fetch.response.max.bytes` plus framing).
const MAX_RESPONSE_BYTES: usize = 256 * 1024 * 1024;

/// Why a request to a peer broker failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeerError {
    #[error("connecting to broker {broker} at {addr}")]
    Connect {
        broker: i32,
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("talking to broker {broker}")]
    Io {
        broker: i32,
        #[source]
        source: std::io::Error,
    },
    #[error("broker {broker} did not answer within {timeout:?}")]
    Timeout { broker: i32, timeout: Duration },
    #[error("broker {broker}: {reason}")]
    Protocol { broker: i32, reason: String },
}

/// One connection to one peer broker.
pub(crate) struct PeerConnection {
    broker: i32,
    stream: TcpStream,
    client_id: StrBytes,
    correlation_id: i32,
}

impl PeerConnection {
    /// Connect to `addr` (host:port) of broker `broker`.
    pub(crate) async fn connect(
        broker: i32,
        addr: &str,
        client_id: String,
        timeout: Duration,
    ) -> Result<PeerConnection, PeerError> {
        let connect = TcpStream::connect(addr);
        let stream = match tokio::time::timeout(timeout, connect).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => {
                return Err(PeerError::Connect {
                    broker,
                    addr: addr.to_string(),
                    source,
                })
            }
            Err(_) => return Err(PeerError::Timeout { broker, timeout }),
        };
        let _ = stream.set_nodelay(true);
        Ok(PeerConnection {
            broker,
            stream,
            client_id: StrBytes::from_string(client_id),
            correlation_id: 0,
        })
    }

    /// Send `req` at `version` and wait (at most `timeout`) for its answer.
    /// After an error the connection must be dropped.
    pub(crate) async fn send<R: Request>(
        &mut self,
        req: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, PeerError> {
        let broker = self.broker;
        match tokio::time::timeout(timeout, self.exchange(req, version)).await {
            Ok(r) => r,
            Err(_) => Err(PeerError::Timeout { broker, timeout }),
        }
    }

    async fn exchange<R: Request>(
        &mut self,
        req: &R,
        version: i16,
    ) -> Result<R::Response, PeerError> {
        let broker = self.broker;
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let mut header = RequestHeader::default();
        header.request_api_key = R::KEY;
        header.request_api_version = version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(self.client_id.clone());
        let mut buf = BytesMut::with_capacity(256);
        buf.put_i32(0);
        header
            .encode(&mut buf, R::header_version(version))
            .and_then(|()| req.encode(&mut buf, version))
            .map_err(|e| PeerError::Protocol {
                broker,
                reason: format!("encoding the request: {e}"),
            })?;
        let size = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&size.to_be_bytes());
        let io = |source| PeerError::Io { broker, source };
        self.stream.write_all(&buf).await.map_err(io)?;
        let size = self.stream.read_i32().await.map_err(io)?;
        if size < 4 || size as usize > MAX_RESPONSE_BYTES {
            return Err(PeerError::Protocol {
                broker,
                reason: format!("response size {size}"),
            });
        }
        let mut body = vec![0u8; size as usize];
        self.stream.read_exact(&mut body).await.map_err(io)?;
        let mut body = bytes::Bytes::from(body);
        let correlation_id = body.get_i32();
        if correlation_id != self.correlation_id {
            return Err(PeerError::Protocol {
                broker,
                reason: format!(
                    "correlation id {correlation_id}, expected {}",
                    self.correlation_id
                ),
            });
        }
        if R::Response::header_version(version) >= 1 {
            skip_tagged_fields(&mut body)
                .map_err(|reason| PeerError::Protocol { broker, reason })?;
        }
        R::Response::decode(&mut body, version).map_err(|e| PeerError::Protocol {
            broker,
            reason: e.to_string(),
        })
    }
}

fn read_uvarint(buf: &mut bytes::Bytes) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        if !buf.has_remaining() {
            return Err("truncated varint".into());
        }
        let b = buf.get_u8();
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long".into())
}

fn skip_tagged_fields(buf: &mut bytes::Bytes) -> Result<(), String> {
    let count = read_uvarint(buf)?;
    for _ in 0..count {
        read_uvarint(buf)?;
        let len = read_uvarint(buf)? as usize;
        if buf.remaining() < len {
            return Err("truncated tagged field".into());
        }
        buf.advance(len);
    }
    Ok(())
}
