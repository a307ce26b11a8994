//! Shared test helpers: a real moto S3 server on a free loopback port.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `moto_server`, killed on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
    pub port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Moto {
    /// Start moto on a free port and wait (deadline 30 s) until it answers.
    ///
    /// # Panics
    /// When `moto_server` is not installed: the message says how to get it.
    pub fn start() -> Moto {
        let port = free_port();
        // The venv scripts/install-test-deps.sh makes, else PATH.
        let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.test-deps/venv/bin/moto_server");
        let exe = if venv.exists() {
            venv
        } else {
            std::path::PathBuf::from("moto_server")
        };
        let child = Command::new(&exe)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start moto_server ({e}): the S3 conformance tests need it; \
                     run scripts/install-test-deps.sh (installs moto[server]) and put its venv on PATH"
                )
            });
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if moto
                .request("GET", "/", "")
                .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
            {
                return moto;
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not answer on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One raw HTTP request; the response head, or None when not connected.
    pub fn request(&self, method: &str, path: &str, body: &str) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        );
        s.write_all(req.as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        Some(out)
    }

    /// Create a bucket (path-style PUT; moto does not check signatures).
    pub fn create_bucket(&self, bucket: &str) {
        let resp = self
            .request("PUT", &format!("/{bucket}"), "")
            .expect("moto reachable");
        assert!(
            resp.starts_with("HTTP/1.1 200"),
            "create bucket {bucket}: {resp}"
        );
    }

    /// Broker-style properties pointing at this server.
    pub fn props(&self) -> std::collections::BTreeMap<String, String> {
        [
            ("rsm.config.s3.endpoint", self.endpoint.as_str()),
            ("rsm.config.s3.region", "us-east-1"),
            ("rsm.config.s3.access.key.id", "testing"),
            ("rsm.config.s3.secret.access.key", "testing"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Stop the server (fault injection: store gone mid-operation).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
