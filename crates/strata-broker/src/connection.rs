//! One client connection: size-prefixed frames in, responses out, strictly
//! in request order.
//!
//! The reading side (the connection task) reads a frame, dispatches it and
//! waits for the answer before reading the next one, like Kafka, which mutes
//! a channel while a request is in flight: requests of one connection are
//! therefore processed in order, and so are appends to a partition from one
//! producer connection. One exception: a durable Produce is appended in
//! order but its fsync is awaited by the writer ([`Deferred`]), so the next
//! request is read and appended meanwhile; its answer still goes out before
//! the next one's. Answers go through a bounded queue to a writer task
//! that coalesces small responses into one socket write and sends record
//! data of fetch responses with `sendfile(2)` ([`ResponsePart::File`]).
//!
//! Time limits ([`FrameLimits`]): a connection that has no request in flight
//! and has received no byte of a new one for `connections.max.idle.ms` is
//! closed (Kafka's idle expiry), and once a frame's first byte has arrived the
//! whole frame must arrive within `strata.request.receive.timeout.ms` (Kafka
//! has no such deadline: a sender of one byte a second keeps a Kafka
//! connection forever). Memory for a frame is reserved as its bytes arrive,
//! not when its size prefix announces them.
//!
//! Back-pressure ([`crate::request_queue`], `docs/broker.md`): a frame's
//! bytes are taken from the broker-wide `queued.max.request.bytes` budget
//! once its size prefix is in, and the whole frame takes one of
//! `queued.max.requests` slots before it is dispatched; a connection waiting
//! for either reads nothing, so its client's bytes back up into TCP. Toward
//! the client, the reader queues at most [`WRITE_BACKLOG_BYTES`] of unsent
//! responses (and at least one): a client that stops reading its socket
//! stops having its requests read, and pins at most about two responses
//! (their memory and segment files), never a thread — the writer waits for
//! socket space on the event loop (`sendfile(2)` on a non-blocking socket).
//!
//! Fairness: the writer gives up its worker thread after each
//! [`SENDFILE_CHUNK`] of a large response, so one huge fetch to a fast
//! reader is interleaved with everyone else's small ones.
//!
//! Idle connections cost little: the read buffer is allocated when bytes
//! arrive and dropped between frames, the writer's coalescing buffer only
//! while it writes, and the request being handled lives in its own
//! allocation ([`request_queue::handle`] boxes it).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::task::{Context, Poll};
use strata_log::FileSlice;
use thiserror::Error;

use tokio::io::{
    AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, Interest, ReadBuf, ReadHalf, WriteHalf,
};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use tokio_rustls::server::TlsStream;

use crate::authentication::{Authenticator, Gate};
use crate::broker::Broker;
use crate::dispatch;
use crate::listener_runtime::ListenerRuntime;
use crate::listeners::SecurityProtocol;
use crate::request_queue::{self, RequestQueue};
use crate::response::{Deferred, Response, ResponsePart};
use crate::security::session::ANONYMOUS;
use crate::security::Session;
use crate::stats::Stats;

/// Responses queued per connection before the reader waits for the writer.
const WRITE_QUEUE: usize = 16;
/// Bytes of responses a connection queues, unsent, before it reads its next
/// request (a larger response is queued alone). Small answers (produce
/// acks) still pipeline; a large fetch answer must mostly leave before the
/// connection's next request is read, as Kafka mutes a channel until its
/// response is sent.
pub(crate) const WRITE_BACKLOG_BYTES: usize = 1 << 20;
/// Largest `sendfile(2)` per call; the writer yields its worker after each.
const SENDFILE_CHUNK: usize = 1 << 20;
/// Small parts are gathered into one buffer up to this size per write.
const COALESCE_BYTES: usize = 64 * 1024;
/// How long shutdown waits for a connection's queued answers to be written.
const SHUTDOWN_WRITE_GRACE: Duration = Duration::from_secs(5);
/// A frame's buffer grows by at most this much per read, so a size prefix
/// alone (up to `socket.request.max.bytes`) reserves nothing large.
const READ_RESERVE_STEP: usize = 64 * 1024;

/// How frames may arrive on a connection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FrameLimits {
    /// `socket.request.max.bytes`.
    pub max_bytes: usize,
    /// `connections.max.idle.ms`: waiting for the first byte of a frame.
    pub idle: Duration,
    /// From a frame's first byte to its last: `strata.request.receive.timeout.ms`,
    /// capped by the idle time.
    pub receive: Duration,
}

impl FrameLimits {
    pub(crate) fn from_config(config: &crate::config::BrokerConfig) -> FrameLimits {
        let idle = Duration::from_millis(config.connections_max_idle_ms);
        FrameLimits {
            max_bytes: config.socket_request_max_bytes,
            idle,
            receive: Duration::from_millis(config.request_receive_timeout_ms).min(idle),
        }
    }
}

/// Why a connection was closed by the broker.
#[derive(Debug, Error)]
pub(crate) enum FrameError {
    #[error("request size {size} is outside [0, socket.request.max.bytes = {max}]")]
    TooLarge { size: i32, max: usize },
    #[error("connection closed in the middle of a frame ({buffered} bytes buffered)")]
    Truncated { buffered: usize },
    #[error("connection idle for {idle:?} (connections.max.idle.ms)")]
    Idle { idle: Duration },
    #[error(
        "request frame not received within {timeout:?} of its first byte \
         ({received} of {expected} bytes; strata.request.receive.timeout.ms)"
    )]
    SlowFrame {
        timeout: Duration,
        received: usize,
        /// The frame's announced size with its prefix (0 until the prefix is in).
        expected: usize,
    },
    #[error("socket read failed")]
    Io(#[from] io::Error),
}

/// The reading side of a connection, plain or TLS.
enum Reader {
    Plain(OwnedReadHalf),
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

/// The writing side of a connection, plain (with `sendfile`) or TLS.
enum Writer {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

impl Reader {
    /// Wait until the socket has bytes (or an error or EOF) to read; a TLS
    /// reader returns at once (its session buffers anyway).
    async fn ready(&self) -> io::Result<()> {
        match self {
            Reader::Plain(r) => r.readable().await,
            Reader::Tls(_) => Ok(()),
        }
    }
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Plain(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Plain(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Plain(w) => Pin::new(w).poll_flush(cx),
            Writer::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Plain(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

/// Serve one connection until the peer closes it, a frame is rejected or
/// the broker shuts down. `queue` is the broker-wide request bound.
pub(crate) async fn run(
    broker: Arc<Broker>,
    runtime: Arc<ListenerRuntime>,
    queue: Arc<RequestQueue>,
    socket: TcpStream,
    mut shutdown: watch::Receiver<bool>,
) {
    let peer = socket.peer_addr().ok();
    let _open = broker.metrics.network.opened(&runtime.listener.name);
    if let Err(error) = socket.set_nodelay(true) {
        tracing::debug!(?peer, %error, "cannot set TCP_NODELAY");
    }
    let limits = FrameLimits::from_config(&broker.config);
    let mut principal = ANONYMOUS.to_string();
    let (mut reader, writer) = match &runtime.tls {
        None => {
            let (r, w) = socket.into_split();
            (Reader::Plain(r), Writer::Plain(w))
        }
        Some(tls) => {
            let accepted = tokio::select! {
                r = tokio::time::timeout(limits.receive, tls.acceptor.accept(socket)) => r,
                _ = shutdown.changed() => return,
            };
            let stream = match accepted {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    Stats::add(&broker.stats.authentication_failures, 1);
                    tracing::warn!(?peer, listener = %runtime.listener.name, %error, "TLS handshake failed");
                    return;
                }
                Err(_elapsed) => {
                    Stats::add(&broker.stats.authentication_failures, 1);
                    tracing::warn!(?peer, listener = %runtime.listener.name, "TLS handshake timed out");
                    return;
                }
            };
            if runtime.listener.protocol == SecurityProtocol::Ssl {
                // Kafka's principal of an SSL connection: the client
                // certificate's subject through ssl.principal.mapping.rules.
                let cert = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .map(|c| c.as_ref().to_vec());
                match strata_security::tls::principal_name(cert.as_deref(), &tls.rules) {
                    Ok(name) => principal = format!("User:{name}"),
                    Err(error) => {
                        Stats::add(&broker.stats.authentication_failures, 1);
                        tracing::warn!(?peer, listener = %runtime.listener.name, %error,
                            "TLS client certificate has no principal (ssl.principal.mapping.rules)");
                        return;
                    }
                }
            }
            let (r, w) = tokio::io::split(stream);
            (Reader::Tls(r), Writer::Tls(w))
        }
    };
    let mut auth = Authenticator::new(
        runtime.clone(),
        Session {
            listener: runtime.listener.name.clone(),
            protocol: runtime.listener.protocol,
            peer,
            principal,
        },
    );
    let (tx, rx) = mpsc::channel::<Queued>(WRITE_QUEUE);
    let backlog = Arc::new(Semaphore::new(WRITE_BACKLOG_BYTES));
    let writer_task = tokio::spawn(write_loop(writer, rx, broker.clone()));
    let mut buf = BytesMut::new();
    loop {
        let frame_limits = FrameLimits {
            max_bytes: auth.max_frame(limits.max_bytes),
            ..limits
        };
        let frame = tokio::select! {
            frame = read_frame(&mut reader, &mut buf, frame_limits, &queue) => frame,
            _ = shutdown.changed() => break,
        };
        let (frame, bytes) = match frame {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(FrameError::Io(error))
                if matches!(
                    error.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
                ) =>
            {
                tracing::debug!(?peer, %error, "peer reset the connection");
                break;
            }
            Err(FrameError::Idle { idle }) => {
                Stats::add(&broker.stats.connections_expired, 1);
                tracing::debug!(?peer, ?idle, "closing idle connection");
                break;
            }
            Err(FrameError::TooLarge { size, .. }) if (size as u32) >> 16 == 0x1603 => {
                // 0x16 0x03: a TLS record header where a size prefix belongs.
                Stats::add(&broker.stats.authentication_failures, 1);
                tracing::warn!(?peer, listener = %runtime.listener.name, protocol = %runtime.listener.protocol,
                    "closing connection: the client started a TLS handshake on a listener without TLS");
                break;
            }
            Err(error) => {
                if matches!(error, FrameError::SlowFrame { .. }) {
                    Stats::add(&broker.stats.connections_expired, 1);
                }
                crate::protocol_log::protocol_error(peer, "closing connection", &error);
                break;
            }
        };
        let admission = tokio::select! {
            a = queue.admit(bytes) => a,
            _ = shutdown.changed() => break,
        };
        Stats::add(&broker.stats.requests, 1);
        let gated = match auth.gate(&broker, &frame) {
            Gate::Dispatch => None,
            Gate::Answer(response) => Some((response, false, Duration::ZERO)),
            Gate::AnswerAndClose(response, delay) => Some((response, true, delay)),
            Gate::Close => break,
        };
        if let Some((response, close, delay)) = gated {
            drop(admission);
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.changed() => break,
                }
            }
            let sent = tokio::select! {
                r = queue_response(&tx, &backlog, response) => r,
                _ = shutdown.changed() => false,
            };
            if !sent || close {
                break;
            }
            continue;
        }
        let handled = request_queue::handle(
            admission,
            dispatch::dispatch(&broker, frame, auth.session()),
        )
        .await;
        match handled {
            Ok(Some(response)) => {
                let throttle = response.throttle;
                // A client that stops reading must not hold up shutdown.
                let sent = tokio::select! {
                    r = queue_response(&tx, &backlog, response) => r,
                    _ = shutdown.changed() => false,
                };
                if !sent {
                    break; // writer failed (socket gone) or shutting down
                }
                if !throttle.is_zero() {
                    // Over a client quota: mute the channel (KIP-219).
                    tokio::select! {
                        _ = tokio::time::sleep(throttle) => {}
                        _ = shutdown.changed() => break,
                    }
                }
            }
            Ok(None) => {}
            Err(error) => {
                crate::protocol_log::protocol_error(
                    peer,
                    "closing connection after a bad request",
                    &error,
                );
                break;
            }
        }
    }
    drop(tx);
    // Let queued answers go out; during shutdown, give a stuck peer a bounded grace.
    let mut writer_task = writer_task;
    let finished = if *shutdown.borrow() {
        tokio::time::timeout(SHUTDOWN_WRITE_GRACE, &mut writer_task)
            .await
            .ok()
    } else {
        Some((&mut writer_task).await)
    };
    match finished {
        Some(Ok(Ok(()))) => {}
        Some(Ok(Err(error))) => tracing::debug!(?peer, %error, "socket write failed"),
        Some(Err(error)) => tracing::warn!(?peer, %error, "connection writer task failed"),
        None => {
            writer_task.abort();
            tracing::info!(
                ?peer,
                "dropped unsent responses of a peer that stopped reading"
            );
        }
    }
}

/// Read one frame (without its size prefix) and its share of the
/// `queued.max.request.bytes` budget, taken once the size prefix is in and
/// before the body is read. `Ok(None)` on a clean EOF.
///
/// Bytes of a following frame may already sit in `buf` (pipelined requests);
/// they count as that frame's first bytes, received now. Waiting for the
/// byte budget is the broker's doing: the frame's deadline starts again
/// after it. An empty `buf` holds no memory between frames, and none is
/// allocated until the socket is readable.
///
/// # Errors
/// [`FrameError::Idle`] when no byte arrives within `limits.idle`,
/// [`FrameError::SlowFrame`] when a started frame is not complete within
/// `limits.receive`, [`FrameError::TooLarge`], [`FrameError::Truncated`], or
/// the socket's error.
async fn read_frame(
    reader: &mut Reader,
    buf: &mut BytesMut,
    limits: FrameLimits,
    queue: &RequestQueue,
) -> Result<Option<(Bytes, Option<OwnedSemaphorePermit>)>, FrameError> {
    let idle_deadline = Instant::now() + limits.idle;
    let mut frame_deadline = (!buf.is_empty()).then(|| Instant::now() + limits.receive);
    let mut expected = 0;
    let mut reserved: Option<Option<OwnedSemaphorePermit>> = None;
    if buf.is_empty() {
        // An idle connection waits here without a buffer.
        match tokio::time::timeout_at(idle_deadline, reader.ready()).await {
            Ok(ready) => ready?,
            Err(_elapsed) => return Err(FrameError::Idle { idle: limits.idle }),
        }
    }
    loop {
        if buf.len() >= 4 {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if size < 0 || size as usize > limits.max_bytes {
                return Err(FrameError::TooLarge {
                    size,
                    max: limits.max_bytes,
                });
            }
            if reserved.is_none() {
                let bytes = queue.reserve_bytes(size as usize).await;
                if bytes.is_some() {
                    frame_deadline = Some(Instant::now() + limits.receive);
                }
                reserved = Some(bytes);
            }
            let total = 4 + size as usize;
            if buf.len() >= total {
                buf.advance(4);
                let frame = buf.split_to(size as usize).freeze();
                if buf.is_empty() {
                    // Give back what the frame's buffer still reserves.
                    *buf = BytesMut::new();
                }
                return Ok(Some((frame, reserved.flatten())));
            }
            expected = total;
            buf.reserve((total - buf.len()).min(READ_RESERVE_STEP));
        } else if buf.capacity() - buf.len() < 4096 {
            buf.reserve(8 * 1024);
        }
        // `read_buf` is cancel safe: on a timeout no received byte is lost.
        let read = tokio::time::timeout_at(
            frame_deadline.unwrap_or(idle_deadline),
            reader.read_buf(buf),
        )
        .await;
        let n = match read {
            Ok(result) => result?,
            Err(_elapsed) => {
                return Err(match frame_deadline {
                    None => FrameError::Idle { idle: limits.idle },
                    Some(_) => FrameError::SlowFrame {
                        timeout: limits.receive,
                        received: buf.len(),
                        expected,
                    },
                })
            }
        };
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(FrameError::Truncated {
                    buffered: buf.len(),
                })
            };
        }
        if frame_deadline.is_none() {
            frame_deadline = Some(Instant::now() + limits.receive);
        }
    }
}

/// A response on its way to the writer, with its share of the connection's
/// [`WRITE_BACKLOG_BYTES`] (given back once its bytes are written or
/// coalesced).
type Queued = (Response, OwnedSemaphorePermit);

/// Queue `response` for the writer once the unsent backlog leaves room for
/// it (a response larger than the whole backlog waits until it is empty).
/// `false` when the writer is gone.
async fn queue_response(
    tx: &mpsc::Sender<Queued>,
    backlog: &Arc<Semaphore>,
    response: Response,
) -> bool {
    let share = usize::try_from(response.len())
        .unwrap_or(usize::MAX)
        .clamp(1, WRITE_BACKLOG_BYTES) as u32;
    let Ok(permit) = backlog.clone().acquire_many_owned(share).await else {
        return false; // never closed
    };
    tx.send((response, permit)).await.is_ok()
}

/// Write responses in queue order, coalescing small ones.
async fn write_loop(
    mut writer: Writer,
    mut rx: mpsc::Receiver<Queued>,
    broker: Arc<Broker>,
) -> io::Result<()> {
    // Allocated while there is something to write, not while idle.
    let mut pending = BytesMut::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some((mut response, _backlog_share)) = next {
            if let Some(Deferred(rest)) = response.deferred.take() {
                // Answers before it go out now, not after its wait.
                if !pending.is_empty() {
                    writer.write_all(&pending).await?;
                    pending.clear();
                }
                response = rest.await.map_err(|error| {
                    io::Error::other(format!("a deferred response failed: {error}"))
                })?;
            }
            for part in response.parts {
                match part {
                    ResponsePart::Mem(bytes) => {
                        if pending.is_empty() && bytes.len() >= COALESCE_BYTES {
                            writer.write_all(&bytes).await?;
                        } else {
                            if pending.capacity() == 0 {
                                pending.reserve(COALESCE_BYTES);
                            }
                            pending.extend_from_slice(&bytes);
                            if pending.len() >= COALESCE_BYTES {
                                writer.write_all(&pending).await?;
                                pending.clear();
                            }
                        }
                    }
                    ResponsePart::File(slice) => {
                        if !pending.is_empty() {
                            writer.write_all(&pending).await?;
                            pending.clear();
                        }
                        match &mut writer {
                            Writer::Plain(w) => {
                                send_file(w.as_ref(), &slice, &broker.stats).await?
                            }
                            Writer::Tls(w) => copy_file(w, &slice).await?,
                        }
                    }
                }
            }
            next = rx.try_recv().ok();
        }
        if !pending.is_empty() {
            writer.write_all(&pending).await?;
        }
        pending = BytesMut::new();
    }
    writer.shutdown().await
}

/// Copy `slice` from its file through a TLS stream: the bytes must pass
/// through the encryption, so they are read into memory in chunks (Kafka
/// loses zero-copy on TLS listeners the same way).
///
/// # Errors
/// As [`send_file`].
async fn copy_file<W: AsyncWrite + Unpin>(writer: &mut W, slice: &FileSlice) -> io::Result<()> {
    const CHUNK: u64 = 256 * 1024;
    let mut position = slice.position;
    let end = slice.position + slice.len;
    while position < end {
        let len = (end - position).min(CHUNK) as usize;
        let file = slice.file.clone();
        let chunk = tokio::task::spawn_blocking(move || -> io::Result<Vec<u8>> {
            let mut chunk = vec![0u8; len];
            file.read_exact_at(&mut chunk, position)?;
            Ok(chunk)
        })
        .await
        .map_err(io::Error::other)?
        .map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file shorter than the fetched slice",
                )
            } else {
                e
            }
        })?;
        writer.write_all(&chunk).await?;
        position += len as u64;
    }
    Ok(())
}

/// Copy `slice` from its file to the socket with `sendfile(2)`.
///
/// # Errors
/// Socket errors, or `UnexpectedEof` when the file is shorter than the slice
/// (truncated underneath us): the frame length already went out, so the
/// connection must be closed.
async fn send_file(stream: &TcpStream, slice: &FileSlice, stats: &Stats) -> io::Result<()> {
    let mut offset = slice.position as libc::off_t;
    let end = slice.position + slice.len;
    let file_fd = slice.file.as_raw_fd();
    let sock_fd = stream.as_raw_fd();
    while (offset as u64) < end {
        let remaining = (end - offset as u64).min(SENDFILE_CHUNK as u64) as usize;
        stream.writable().await?;
        let result = stream.try_io(Interest::WRITABLE, || {
            // SAFETY: both descriptors are open for the duration of the call
            // (the socket is borrowed, the file is kept alive by the slice's
            // Arc) and `offset` is a valid, exclusively borrowed off_t.
            let n = unsafe { libc::sendfile(sock_fd, file_fd, &mut offset, remaining) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match result {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file shorter than the fetched slice",
                ))
            }
            Ok(n) => {
                Stats::add(&stats.sendfile_calls, 1);
                Stats::add(&stats.sendfile_bytes, n as u64);
                // `writable()` takes no cooperative budget: without this a
                // fast reader of a huge answer would keep the worker.
                if (offset as u64) < end {
                    tokio::task::yield_now().await;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
