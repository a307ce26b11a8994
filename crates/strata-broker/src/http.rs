//! The broker's HTTP listener (`strata.metrics.listener`): `GET /metrics`
//! answers Prometheus in its text exposition format ([`crate::scrape`]),
//! every other path under `/` is the read-only storage console
//! ([`crate::console`]).
//!
//! A deliberately small HTTP/1.1 server: one request per connection
//! (`Connection: close`), `GET` and `HEAD` only, the request head bounded
//! in size and time. Nothing it serves changes the broker. A malformed
//! request gets a 4xx answer and the connection is closed; it never reaches
//! the Kafka listeners or the logs.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::broker::Broker;
use crate::page::Page;

/// The largest request head (request line and headers) read.
const MAX_HEAD: usize = 16 * 1024;
/// A request head must arrive whole within this.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait in the accept queue.
const MAX_CONCURRENT: usize = 64;

/// What a request asks for: the method and the path split from its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub head_only: bool,
    pub path: String,
    pub query: String,
}

/// Why a request head was refused, with the status to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub status: u16,
    pub reason: &'static str,
}

/// Parse a request head (everything before the blank line).
pub(crate) fn parse_head(head: &[u8]) -> Result<Request, Refusal> {
    let bad = |reason| Refusal {
        status: 400,
        reason,
    };
    let text = std::str::from_utf8(head).map_err(|_| bad("the request head is not UTF-8"))?;
    let line = text.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not `METHOD target HTTP/1.x`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Refusal {
            status: 505,
            reason: "only HTTP/1.x is served",
        });
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            return Err(Refusal {
                status: 405,
                reason: "only GET and HEAD are served",
            })
        }
    };
    if !target.starts_with('/') {
        return Err(bad("the request target must be a path starting with /"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        head_only,
        path: path.to_string(),
        query: query.to_string(),
    })
}

/// The answer to `request` (blocking: it reads log state).
pub(crate) fn route(broker: &Broker, request: &Request) -> Page {
    if request.path == "/metrics" {
        return Page {
            status: 200,
            content_type: crate::metrics::CONTENT_TYPE,
            body: crate::scrape::render(broker),
        };
    }
    crate::console::page(broker, &request.path, &request.query)
        .unwrap_or_else(|| Page::text(404, format!("no page at {}\n", request.path)))
}

/// Serve the HTTP listener until shutdown.
pub(crate) async fn serve(
    broker: Arc<Broker>,
    socket: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT));
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => return,
            accepted = socket.accept() => accepted,
        };
        let Ok((stream, peer)) = accepted else {
            // Out of file descriptors and the like: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let broker = broker.clone();
        tokio::spawn(async move {
            if let Err(e) = serve_one(&broker, stream).await {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
            drop(permit);
        });
    }
}

async fn serve_one(broker: &Arc<Broker>, mut stream: TcpStream) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => {
            return write_page(
                &mut stream,
                &Page::text(408, "request head timed out\n"),
                false,
            )
            .await
        }
    };
    let Some(head) = head else {
        // Read (a bounded amount of) what the client is still sending, so that
        // closing does not reset the connection before it reads the answer.
        let mut sink = [0u8; 4096];
        let mut left = 1 << 20;
        while left > 0 {
            match tokio::time::timeout(Duration::from_millis(200), stream.read(&mut sink)).await {
                Ok(Ok(n)) if n > 0 => left -= n.min(left),
                _ => break,
            }
        }
        return write_page(
            &mut stream,
            &Page::text(431, "request head too large\n"),
            false,
        )
        .await;
    };
    let page = match parse_head(&head) {
        Ok(request) => {
            let head_only = request.head_only;
            let page = broker.blocking(move |b| route(b, &request)).await;
            return write_page(&mut stream, &page, head_only).await;
        }
        Err(refusal) => Page::text(refusal.status, format!("{}\n", refusal.reason)),
    };
    write_page(&mut stream, &page, false).await
}

/// Read up to the blank line ending the head; `None` when it is too large.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    loop {
        if let Some(end) = find_blank_line(&head) {
            head.truncate(end);
            return Ok(Some(head));
        }
        if head.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the client closed before the end of the request head",
            ));
        }
        head.extend_from_slice(&buf[..n]);
    }
}

fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n").or_else(|| {
        // Tolerate bare LF line ends, as most servers do.
        bytes.windows(2).position(|w| w == b"\n\n")
    })
}

async fn write_page(stream: &mut TcpStream, page: &Page, head_only: bool) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        page.status,
        reason_phrase(page.status),
        page.content_type,
        page.body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        stream.write_all(page.body.as_bytes()).await?;
    }
    stream.shutdown().await
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Fuzzing entry (`fuzz/fuzz_targets/http_request.rs`): arbitrary bytes as
/// what a peer sends the HTTP listener, through the head parser and, for a
/// parsed request, the console's path parser and percent-decoding. Must
/// never panic; every outcome is an answer or a refusal.
#[doc(hidden)]
pub fn fuzz_http_request(bytes: &[u8]) {
    let head = match find_blank_line(bytes) {
        Some(end) => &bytes[..end],
        None => bytes,
    };
    if let Ok(request) = parse_head(head) {
        let _ = crate::console::fuzz_route(&request.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_splits_path_and_query() {
        let r = parse_head(b"GET /console/topic/t/0?x=1 HTTP/1.1\r\nHost: a").unwrap();
        assert_eq!(
            r,
            Request {
                head_only: false,
                path: "/console/topic/t/0".into(),
                query: "x=1".into()
            }
        );
        assert!(parse_head(b"HEAD /metrics HTTP/1.0").unwrap().head_only);
    }

    #[test]
    fn malformed_heads_are_refused_with_their_status() {
        for (head, status) in [
            (&b"POST /metrics HTTP/1.1"[..], 405),
            (b"GET /metrics HTTP/2", 505),
            (b"GET metrics HTTP/1.1", 400),
            (b"GET /metrics", 400),
            (b"GET  /metrics HTTP/1.1", 400),
            (b"\xff\xfe", 400),
            (b"", 400),
        ] {
            assert_eq!(parse_head(head).unwrap_err().status, status, "{head:?}");
        }
    }

    #[test]
    fn the_head_ends_at_the_first_blank_line() {
        assert_eq!(
            find_blank_line(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"),
            Some(20)
        );
        assert_eq!(find_blank_line(b"GET / HTTP/1.1\nA: b\n\n"), Some(19));
        assert_eq!(find_blank_line(b"GET / HTTP/1.1\r\n"), None);
    }
}
