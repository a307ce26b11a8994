//! Where an OAUTHBEARER listener gets its JSON Web Key Set when it
//! validates signed tokens (Kafka's `OAuthBearerValidatorCallbackHandler`):
//! `sasl.oauthbearer.jwks.endpoint.url`, a `file:` path (as Kafka allows for
//! tests and air-gapped setups) or a plain `http://` URL, read at start and
//! again every `sasl.oauthbearer.jwks.endpoint.refresh.ms` (a refresh that
//! fails keeps the keys in use).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Kafka's secured validator callback handler classes (3.9 and the older package).
pub(crate) const VALIDATOR_CLASSES: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
];

/// The largest JWK set accepted.
const MAX_JWKS_BYTES: usize = 1 << 20;
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Read the JWK set at `url`.
///
/// # Errors
/// The URL's scheme is not `file:` or `http://`, or reading it failed; the
/// message says which.
pub(crate) fn fetch(url: &str) -> Result<String, String> {
    if let Some(path) = url
        .strip_prefix("file://")
        .or_else(|| url.strip_prefix("file:"))
    {
        return std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"));
    }
    if let Some(rest) = url.strip_prefix("http://") {
        return http_get(rest).map_err(|e| format!("fetching {url}: {e}"));
    }
    Err(format!(
        "{url}: only file: and http:// JWKS endpoints are served (https is not yet)"
    ))
}

/// A minimal HTTP/1.0 GET of `host[:port]/path`: the body of a 200 answer.
fn http_get(rest: &str) -> Result<String, String> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let mut stream = TcpStream::connect(&addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    stream
        .take(MAX_JWKS_BYTES as u64 + 16 * 1024)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| "no HTTP header end".to_string())?;
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("HTTP status {status:?}"));
    }
    if body.len() > MAX_JWKS_BYTES {
        return Err(format!("JWK set larger than {MAX_JWKS_BYTES} bytes"));
    }
    Ok(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_file_and_http_endpoints() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, r#"{"keys":[]}"#).unwrap();
        assert_eq!(
            fetch(&format!("file://{}", path.display())).unwrap(),
            r#"{"keys":[]}"#
        );
        assert!(fetch("https://idp.example/jwks")
            .unwrap_err()
            .contains("https"));
        assert!(fetch("file:///no/such/file")
            .unwrap_err()
            .contains("/no/such/file"));

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for answer in [
                "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"keys\":[1]}",
                "HTTP/1.0 404 Not Found\r\n\r\nnope",
            ] {
                let (mut s, _) = listener.accept().unwrap();
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut buf).unwrap();
                    assert!(n > 0, "request ended early");
                    got.extend_from_slice(&buf[..n]);
                }
                assert!(got.starts_with(b"GET /jwks HTTP/1.0\r\n"));
                s.write_all(answer.as_bytes()).unwrap();
            }
        });
        assert_eq!(
            fetch(&format!("http://{addr}/jwks")).unwrap(),
            "{\"keys\":[1]}"
        );
        assert!(fetch(&format!("http://{addr}/jwks"))
            .unwrap_err()
            .contains("404"));
        server.join().unwrap();
    }
}
