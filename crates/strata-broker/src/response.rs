//! What the connection writes back: a response frame as a list of parts,
//! in memory or a file region for `sendfile(2)`, and the encoder that
//! builds a frame (size prefix, response header, body). Both the handlers
//! (`apis`) and the writer (`connection`) use these, so they live below
//! both.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::{Encodable, HeaderVersion};
use strata_log::FileSlice;

use crate::error::DispatchError;

/// A piece of a response frame.
#[derive(Debug)]
pub(crate) enum ResponsePart {
    /// Bytes encoded in memory.
    Mem(Bytes),
    /// A region of a segment file, sent with `sendfile(2)`.
    File(FileSlice),
}

/// A complete response frame, size prefix included.
#[derive(Debug)]
pub(crate) struct Response {
    pub parts: Vec<ResponsePart>,
    /// A client quota was exceeded: after this response is written the
    /// connection reads nothing for this long (Kafka mutes the channel,
    /// KIP-219); the response carries the same `throttle_time_ms`.
    pub throttle: Duration,
    /// The frame is not known yet (`parts` is empty): it is what this
    /// future gives, once the request's work outside the connection is done
    /// (a durable Produce's fsync). The connection reads its next request
    /// meanwhile; the writer keeps the answers in request order.
    pub deferred: Option<Deferred>,
}

/// A response still being completed (see [`Response::deferred`]). An error
/// closes the connection, as a request that cannot be answered does.
pub(crate) struct Deferred(
    pub Pin<Box<dyn Future<Output = Result<Response, DispatchError>> + Send>>,
);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deferred")
    }
}

impl Response {
    pub(crate) fn from_bytes(frame: Bytes) -> Response {
        Response::from_parts(vec![ResponsePart::Mem(frame)])
    }

    pub(crate) fn from_parts(parts: Vec<ResponsePart>) -> Response {
        Response {
            parts,
            throttle: Duration::ZERO,
            deferred: None,
        }
    }

    /// A response whose frame `future` gives later.
    pub(crate) fn deferred(
        future: impl Future<Output = Result<Response, DispatchError>> + Send + 'static,
    ) -> Response {
        Response {
            deferred: Some(Deferred(Box::pin(future))),
            ..Response::from_parts(Vec::new())
        }
    }

    /// Bytes of the whole frame.
    pub(crate) fn len(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| match p {
                ResponsePart::Mem(b) => b.len() as u64,
                ResponsePart::File(f) => f.len,
            })
            .sum()
    }
}

/// Encode `body` as a response frame: size prefix, response header (v0 or
/// v1 by the response's flexibility), body.
///
/// # Errors
/// [`DispatchError::Encode`] when `body` does not fit `version`.
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
