//! Request dispatch: decode the header, check the (api key, version) against
//! what the broker advertises, decode the body, call the API's handler and
//! encode the response with the right header version.
//!
//! A request the broker cannot handle (unknown API key, version not
//! advertised, undecodable header or body) is an error: the connection is
//! closed, as Kafka does. The one exception is ApiVersions above the highest
//! supported version, which gets a v0 UNSUPPORTED_VERSION answer (KIP-511).

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};
use thiserror::Error;

use crate::apis::{self, RequestContext};
use crate::broker::Broker;
use crate::connection::Response;

/// Why a request closed its connection.
#[derive(Debug, Error)]
pub(crate) enum DispatchError {
    #[error("request of {len} bytes is too short for a request header")]
    Truncated { len: usize },
    #[error("unknown API key {key}")]
    UnknownApiKey { key: i16 },
    #[error("{api:?} version {version} is not supported")]
    UnsupportedVersion { api: ApiKey, version: i16 },
    #[error("cannot decode {api:?} v{version} request")]
    Decode {
        api: ApiKey,
        version: i16,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("produce with acks=0 failed; closing the connection to tell the client")]
    ProduceFailedWithoutAcks,
    #[error("cannot encode {api:?} v{version} response")]
    Encode {
        api: ApiKey,
        version: i16,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Handle one request frame (without its size prefix). `Ok(None)`: no
/// response is due (Produce with acks=0).
pub(crate) async fn dispatch(
    broker: &Arc<Broker>,
    frame: Bytes,
    peer: Option<std::net::SocketAddr>,
) -> Result<Option<Response>, DispatchError> {
    if frame.len() < 8 {
        return Err(DispatchError::Truncated { len: frame.len() });
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|_| DispatchError::UnknownApiKey { key })?;
    let mut buf = frame;
    if api == ApiKey::ApiVersions && version > apis::API_VERSIONS_MAX {
        let correlation_id = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
        return Ok(Some(apis::api_versions::unsupported_version(
            correlation_id,
        )));
    }
    match apis::supported_range(api) {
        Some((min, max)) if (min..=max).contains(&version) => {}
        _ => return Err(DispatchError::UnsupportedVersion { api, version }),
    }
    let header =
        RequestHeader::decode(&mut buf, api.request_header_version(version)).map_err(|e| {
            DispatchError::Decode {
                api,
                version,
                source: e.into(),
            }
        })?;
    let ctx = RequestContext {
        broker: broker.clone(),
        header,
        api,
        version,
        peer,
    };
    apis::handle(ctx, buf).await
}

/// Decode a request body of the context's version.
pub(crate) fn decode<T: Decodable>(
    ctx: &RequestContext,
    mut body: Bytes,
) -> Result<T, DispatchError> {
    T::decode(&mut body, ctx.version).map_err(|e| DispatchError::Decode {
        api: ctx.api,
        version: ctx.version,
        source: e.into(),
    })
}

/// Encode `body` as the response to `ctx`: size prefix, response header
/// (v0 or v1 by the response's flexibility), body.
pub(crate) fn encode<R: Encodable + HeaderVersion>(
    ctx: &RequestContext,
    body: &R,
) -> Result<Response, DispatchError> {
    encode_with(ctx.header.correlation_id, ctx.api, ctx.version, body).map(Response::from_bytes)
}

/// [`encode`] without a context (ApiVersions fallback, tests).
pub(crate) fn encode_with<R: Encodable + HeaderVersion>(
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    body: &R,
) -> Result<Bytes, DispatchError> {
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    header
        .encode(&mut buf, R::header_version(version))
        .map_err(encode_error(api, version))?;
    body.encode(&mut buf, version)
        .map_err(encode_error(api, version))?;
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

fn encode_error<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
    api: ApiKey,
    version: i16,
) -> impl FnOnce(E) -> DispatchError {
    move |e| DispatchError::Encode {
        api,
        version,
        source: e.into(),
    }
}
