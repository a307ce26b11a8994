//! One client connection: size-prefixed frames in, responses out, strictly
//! in request order.
//!
//! The reading side (the connection task) reads a frame, dispatches it and
//! waits for the answer before reading the next one, like Kafka, which mutes
//! a channel while a request is in flight: requests of one connection are
//! therefore processed in order, and so are appends to a partition from one
//! producer connection. Answers go through a bounded queue to a writer task
//! that coalesces small responses into one socket write and sends record
//! data of fetch responses with `sendfile(2)` ([`ResponsePart::File`]).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use strata_log::FileSlice;
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::broker::Broker;
use crate::dispatch;
use crate::stats::Stats;

/// Responses queued per connection before the reader waits for the writer.
const WRITE_QUEUE: usize = 16;
/// Small parts are gathered into one buffer up to this size per write.
const COALESCE_BYTES: usize = 64 * 1024;
/// How long shutdown waits for a connection's queued answers to be written.
const SHUTDOWN_WRITE_GRACE: Duration = Duration::from_secs(5);

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
}

impl Response {
    pub(crate) fn from_bytes(frame: Bytes) -> Response {
        Response {
            parts: vec![ResponsePart::Mem(frame)],
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
    #[error("socket read failed")]
    Io(#[from] io::Error),
}

/// Serve one connection until the peer closes it, a frame is rejected or
/// the broker shuts down.
pub(crate) async fn run(
    broker: Arc<Broker>,
    socket: TcpStream,
    mut shutdown: watch::Receiver<bool>,
) {
    let peer = socket.peer_addr().ok();
    if let Err(error) = socket.set_nodelay(true) {
        tracing::debug!(?peer, %error, "cannot set TCP_NODELAY");
    }
    let (mut reader, writer) = socket.into_split();
    let (tx, rx) = mpsc::channel::<Response>(WRITE_QUEUE);
    let writer_task = tokio::spawn(write_loop(writer, rx, broker.clone()));
    let max = broker.config.socket_request_max_bytes;
    let mut buf = BytesMut::with_capacity(8 * 1024);
    loop {
        let frame = tokio::select! {
            frame = read_frame(&mut reader, &mut buf, max) => frame,
            _ = shutdown.changed() => break,
        };
        let frame = match frame {
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
            Err(error) => {
                tracing::info!(?peer, %error, "closing connection");
                break;
            }
        };
        Stats::add(&broker.stats.requests, 1);
        match dispatch::dispatch(&broker, frame, peer).await {
            Ok(Some(response)) => {
                // A client that stops reading must not hold up shutdown.
                let sent = tokio::select! {
                    r = tx.send(response) => r.is_ok(),
                    _ = shutdown.changed() => false,
                };
                if !sent {
                    break; // writer failed (socket gone) or shutting down
                }
            }
            Ok(None) => {}
            Err(error) => {
                tracing::info!(?peer, %error, "closing connection after a bad request");
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

/// Read one frame (without its size prefix). `Ok(None)` on a clean EOF.
pub(crate) async fn read_frame(
    reader: &mut OwnedReadHalf,
    buf: &mut BytesMut,
    max: usize,
) -> Result<Option<Bytes>, FrameError> {
    loop {
        if buf.len() >= 4 {
            let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if size < 0 || size as usize > max {
                return Err(FrameError::TooLarge { size, max });
            }
            let total = 4 + size as usize;
            if buf.len() >= total {
                buf.advance(4);
                return Ok(Some(buf.split_to(size as usize).freeze()));
            }
            buf.reserve(total - buf.len());
        } else if buf.capacity() - buf.len() < 4096 {
            buf.reserve(8 * 1024);
        }
        if reader.read_buf(buf).await? == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(FrameError::Truncated {
                    buffered: buf.len(),
                })
            };
        }
    }
}

/// Write responses in queue order, coalescing small ones.
async fn write_loop(
    mut writer: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Response>,
    broker: Arc<Broker>,
) -> io::Result<()> {
    let mut pending = BytesMut::with_capacity(COALESCE_BYTES);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(response) = next {
            for part in response.parts {
                match part {
                    ResponsePart::Mem(bytes) => {
                        if pending.is_empty() && bytes.len() >= COALESCE_BYTES {
                            writer.write_all(&bytes).await?;
                        } else {
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
                        send_file(writer.as_ref(), &slice, &broker.stats).await?;
                    }
                }
            }
            next = rx.try_recv().ok();
        }
        if !pending.is_empty() {
            writer.write_all(&pending).await?;
            pending.clear();
        }
    }
    writer.shutdown().await
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
        let remaining = (end - offset as u64).min(1 << 30) as usize;
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
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
