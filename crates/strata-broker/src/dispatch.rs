//! Request dispatch: decode the header, check the (api key, version) against
//! what the broker advertises, decode the body, call the API's handler and
//! encode the response with the right header version.
//!
//! A request the broker cannot handle (unknown API key, version not
//! advertised, undecodable header or body) is an error: the connection is
//! closed, as Kafka does. The one exception is ApiVersions above the highest
//! supported version, which gets a v0 UNSUPPORTED_VERSION answer (KIP-511).
//!
//! Decoding is bounded by the frame: the vendored `kafka-protocol` refuses a
//! declared array, string or bytes length larger than the bytes left before
//! allocating for it, and reserves at most 64 KiB up front per array
//! (`vendor/kafka-protocol/STRATA-PATCH.md`). The build fails against an
//! unpatched copy.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::apis::{self, RequestContext};
use crate::broker::Broker;
use crate::error::DispatchError;
use crate::request_log::RequestLine;
use crate::response::{Deferred, Response};
use crate::security::Session;

// A 22-byte request declaring 0x7fffffff array elements aborted the broker
// until the decoder was bounded; never build against a copy without the bound.
const _: () = assert!(
    kafka_protocol::protocol::types::STRATA_BOUNDED_DECODE,
    "kafka-protocol must be the bounded-decode copy in vendor/kafka-protocol"
);

/// Handle one request frame (without its size prefix). `Ok(None)`: no
/// response is due (Produce with acks=0).
pub(crate) async fn dispatch(
    broker: &Arc<Broker>,
    frame: Bytes,
    session: &Arc<Session>,
) -> Result<Option<Response>, DispatchError> {
    let started = std::time::Instant::now();
    let (api, version, header, buf) = match decode_header(frame)? {
        Header::Decoded {
            api,
            version,
            header,
            body,
        } => (api, version, header, body),
        Header::ApiVersionsTooNew { correlation_id, .. } => {
            return Ok(Some(apis::api_versions::unsupported_version(
                correlation_id,
            )))
        }
    };
    let ctx = RequestContext {
        broker: broker.clone(),
        header,
        api,
        version,
        peer: session.peer,
        session: session.clone(),
    };
    let line = RequestLine::of(&ctx);
    let mut result = apis::handle(ctx, buf).await;
    if let Ok(Some(response)) = &mut result {
        if let Some(Deferred(rest)) = response.deferred.take() {
            // Time and log the request when its answer is complete.
            let broker = broker.clone();
            response.deferred = Some(Deferred(Box::pin(async move {
                let result = rest.await.map(Some);
                finished(&broker, api, version, started, line, &result);
                result.map(|r| r.unwrap_or_else(|| Response::from_parts(Vec::new())))
            })));
            return result;
        }
    }
    finished(broker, api, version, started, line, &result);
    result
}

/// A request's time in RequestMetrics and its request-logger line.
fn finished(
    broker: &Broker,
    api: ApiKey,
    version: i16,
    started: std::time::Instant,
    line: Option<RequestLine>,
    result: &Result<Option<Response>, DispatchError>,
) {
    let elapsed = started.elapsed();
    if result.is_ok() {
        broker.metrics.requests.record(api, version, elapsed);
    }
    if let Some(line) = line {
        let bytes = result
            .as_ref()
            .map_or(0, |r| r.as_ref().map_or(0, Response::len));
        line.completed(elapsed, bytes, result.is_err());
    }
}

/// A request frame after its header.
enum Header {
    Decoded {
        api: ApiKey,
        version: i16,
        header: RequestHeader,
        body: Bytes,
    },
    /// ApiVersions above what the broker knows: answered with v0 (KIP-511).
    ApiVersionsTooNew { correlation_id: i32, version: i16 },
}

/// Check the API key and version against what the broker serves and decode
/// the request header.
fn decode_header(frame: Bytes) -> Result<Header, DispatchError> {
    if frame.len() < 8 {
        return Err(DispatchError::Truncated { len: frame.len() });
    }
    let key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let api = ApiKey::try_from(key).map_err(|_| DispatchError::UnknownApiKey { key })?;
    if api == ApiKey::ApiVersions && version > apis::API_VERSIONS_MAX {
        let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        return Ok(Header::ApiVersionsTooNew {
            correlation_id,
            version,
        });
    }
    match apis::supported_range(api) {
        Some((min, max)) if (min..=max).contains(&version) => {}
        _ => return Err(DispatchError::UnsupportedVersion { api, version }),
    }
    let mut body = frame;
    let header =
        RequestHeader::decode(&mut body, api.request_header_version(version)).map_err(|e| {
            DispatchError::Decode {
                api,
                version,
                source: e.into(),
            }
        })?;
    Ok(Header::Decoded {
        api,
        version,
        header,
        body,
    })
}

/// Decode a request frame (without its size prefix) as the broker does —
/// API and version checks, header, body — without handling it. The fuzz
/// target and the hostile-request tests drive the decoder through this.
///
/// # Errors
/// Every reason [`dispatch`] would close the connection before a handler
/// runs; ApiVersions above the highest served version is
/// [`DispatchError::UnsupportedVersion`] here (dispatch answers it with v0).
pub fn decode_request(frame: Bytes) -> Result<(RequestHeader, RequestKind), DispatchError> {
    match decode_header(frame)? {
        Header::Decoded {
            api,
            version,
            header,
            mut body,
        } => {
            let request = RequestKind::decode(api, &mut body, version).map_err(|e| {
                DispatchError::Decode {
                    api,
                    version,
                    source: e.into(),
                }
            })?;
            Ok((header, request))
        }
        Header::ApiVersionsTooNew { version, .. } => Err(DispatchError::UnsupportedVersion {
            api: ApiKey::ApiVersions,
            version,
        }),
    }
}
