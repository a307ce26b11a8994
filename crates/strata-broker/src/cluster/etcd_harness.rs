//! Test helper (compiled into the cluster unit tests only): a real etcd on loopback for the cluster tests, one member
//! ([`Etcd`]) or three wired into one cluster ([`EtcdCluster`]), plus a
//! check that the helper itself starts, restarts and loses quorum as the
//! etcd-failure tests assume.
//!
//! Each member runs `etcd` (`STRATA_ETCD`, else `/usr/bin/etcd`, else `etcd`
//! on `PATH`; `scripts/install-test-deps.sh` installs it) on two free loopback
//! ports chosen once, so a restart on the same data dir is the same member at
//! the same address. A member is ready when its client port accepts TCP and
//! `GET /health` answers `{"health":"true"}`, which etcd says only once the
//! member has a leader and can commit. Its output goes to `etcd.log` beside
//! the data dir; a member that does not become ready panics with that log.
//!
//! The waits block the calling thread (up to [`READY_TIMEOUT`]). A broker
//! started inside a current-thread tokio test does not run while they block:
//! start etcd before the broker, or call the helper from `spawn_blocking` or
//! a multi-threaded runtime when the broker must keep serving meanwhile.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a member may take to become healthy.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Loopback is fast and tests kill members on purpose: a new leader in about
/// half a second instead of etcd's default one to ten seconds.
const TUNING: [&str; 4] = ["--heartbeat-interval", "50", "--election-timeout", "500"];
const POLL: Duration = Duration::from_millis(50);
const HTTP_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a clean stop may take before the member is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// One etcd member with its own data dir; killed on drop.
pub struct Etcd {
    name: String,
    client_port: u16,
    peer_port: u16,
    /// `--initial-cluster`: every member's `name=peer URL`.
    initial_cluster: String,
    cluster_token: String,
    /// Holds `data/` (the member's data dir) and `etcd.log`.
    dir: TempDir,
    child: Option<Child>,
}

impl Etcd {
    /// Starts a one-member etcd and waits until it is healthy.
    ///
    /// # Panics
    /// If etcd cannot be spawned or is not healthy within [`READY_TIMEOUT`].
    pub fn start() -> Etcd {
        let mut etcd = Etcd::new("etcd0", "strata-test");
        etcd.spawn();
        etcd.wait_ready();
        etcd
    }

    /// Starts three members forming one etcd cluster (quorum: two) and waits
    /// until each is healthy.
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn cluster3() -> EtcdCluster {
        let mut members: Vec<Etcd> = (0..3)
            .map(|i| Etcd::new(&format!("etcd{i}"), "strata-test-3"))
            .collect();
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        for m in &mut members {
            m.initial_cluster = initial.clone();
        }
        // Every member first: none is healthy before a quorum runs.
        for m in &mut members {
            m.spawn();
        }
        for m in &members {
            m.wait_ready();
        }
        EtcdCluster { members }
    }

    /// A member not yet started, in a cluster of itself alone.
    fn new(name: &str, cluster_token: &str) -> Etcd {
        let dir = tempfile::Builder::new()
            .prefix("strata-etcd-")
            .tempdir()
            .expect("temporary directory for etcd");
        let mut etcd = Etcd {
            name: name.to_string(),
            client_port: free_port(),
            peer_port: free_port(),
            initial_cluster: String::new(),
            cluster_token: cluster_token.to_string(),
            dir,
            child: None,
        };
        etcd.initial_cluster = format!("{name}={}", etcd.peer_url());
        etcd
    }

    /// The client URL, `http://127.0.0.1:PORT`: the form
    /// `strata.metadata.etcd.endpoints` takes.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// Stops the member cleanly (SIGTERM, sent with kill(1) since std has no
    /// signal API): a leader hands leadership over first, so no request in
    /// flight waits out etcd's request timeout (about six seconds here).
    /// SIGKILL if it has not exited within ten seconds. Its data dir stays.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            sleep(POLL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Crashes the member (SIGKILL); its data dir stays. A request in flight
    /// to a killed leader fails after etcd's request timeout.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the member if it runs, starts it again on the same data dir and
    /// ports, and waits until it is healthy (a cluster member: until a quorum
    /// runs).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
        self.wait_ready();
    }

    /// Whether the process is running (not whether it is healthy).
    pub fn running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// `GET /health` answered `"health":"true"`: the member has a leader
    /// and can commit.
    pub fn healthy(&self) -> bool {
        http_get(self.client_port, "/health")
            .map(|body| body.contains(r#""health":"true""#))
            .unwrap_or(false)
    }

    fn spawn(&mut self) {
        assert!(
            self.child.is_none(),
            "etcd {} is already running",
            self.name
        );
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("etcd log file");
        let binary = etcd_binary();
        let child = Command::new(&binary)
            .args(["--name", &self.name])
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["--listen-client-urls", &self.endpoint()])
            .args(["--advertise-client-urls", &self.endpoint()])
            .args(["--listen-peer-urls", &self.peer_url()])
            .args(["--initial-advertise-peer-urls", &self.peer_url()])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-token", &self.cluster_token])
            // Ignored once the data dir holds a member: a restart rejoins.
            .args(["--initial-cluster-state", "new"])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .args(TUNING)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("etcd log file")))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {} ({e}): run scripts/install-test-deps.sh",
                    binary.display()
                )
            });
        self.child = Some(child);
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if self.port_accepts() && self.healthy() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd {} not healthy within {READY_TIMEOUT:?}; its log:\n{}",
                self.name,
                self.log_tail()
            );
            sleep(POLL);
        }
    }

    fn port_accepts(&self) -> bool {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.client_port));
        TcpStream::connect_timeout(&addr, HTTP_TIMEOUT).is_ok()
    }

    fn log_tail(&self) -> String {
        let bytes = std::fs::read(self.log_path()).unwrap_or_default();
        let start = bytes.len().saturating_sub(8_000);
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Three etcd members forming one cluster; see [`Etcd::cluster3`].
pub struct EtcdCluster {
    members: Vec<Etcd>,
}

impl EtcdCluster {
    /// Every member's client URL, comma-joined (the form
    /// `strata.metadata.etcd.endpoints` takes).
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(Etcd::endpoint)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops member `i` cleanly (see [`Etcd::stop`]).
    pub fn stop(&mut self, i: usize) {
        self.members[i].stop();
    }

    /// Crashes member `i` (SIGKILL; etcd syncs its log before it answers, so
    /// nothing committed is lost).
    pub fn kill(&mut self, i: usize) {
        self.members[i].kill();
    }

    /// Starts member `i` again on its data dir. Waits until it is healthy
    /// when a quorum (two of three) is running with it; otherwise returns
    /// once it is spawned, since it cannot be healthy alone.
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub fn start(&mut self, i: usize) {
        self.members[i].spawn();
        let mut running = 0;
        for m in &mut self.members {
            running += usize::from(m.running());
        }
        if running > self.members.len() / 2 {
            self.members[i].wait_ready();
        }
    }

    /// Member `i`, e.g. for its own endpoint or health.
    pub fn member(&mut self, i: usize) -> &mut Etcd {
        &mut self.members[i]
    }
}

/// `STRATA_ETCD`, else `/usr/bin/etcd` (Debian's etcd-server), else `etcd`
/// from `PATH`.
fn etcd_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("STRATA_ETCD") {
        return PathBuf::from(path);
    }
    let debian = Path::new("/usr/bin/etcd");
    if debian.is_file() {
        debian.to_path_buf()
    } else {
        PathBuf::from("etcd")
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// The body of a `GET path` on 127.0.0.1:`port`, when the answer is 200.
fn http_get(port: u16, path: &str) -> Option<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT).ok()?;
    stream.set_read_timeout(Some(HTTP_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(HTTP_TIMEOUT)).ok()?;
    // HTTP/1.0: the server closes the connection after the answer, so the
    // body is everything up to EOF.
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?;
    (status == "200").then(|| body.to_string())
}

#[test]
fn etcd_restarts_on_its_data_dir() {
    let mut etcd = Etcd::start();
    assert!(etcd.endpoint().starts_with("http://127.0.0.1:"));
    let member_dir = etcd.data_dir().join("member");
    assert!(member_dir.is_dir(), "etcd keeps its data in the temp dir");

    etcd.kill();
    assert!(!etcd.running());
    assert!(!etcd.healthy());
    etcd.restart();
    assert!(etcd.healthy());
    etcd.stop();
    assert!(!etcd.running());
    etcd.restart();
    assert!(etcd.healthy());
    assert!(member_dir.is_dir());
}

/// Polls `condition` until it holds; panics with `what` after [`READY_TIMEOUT`].
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + READY_TIMEOUT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        sleep(POLL);
    }
}

#[test]
fn three_members_keep_quorum_with_one_down_not_two() {
    let mut cluster = Etcd::cluster3();
    assert_eq!(cluster.endpoints().split(',').count(), 3);

    // If member 0 led, the other two elect a leader within an election timeout.
    cluster.stop(0);
    wait_until("two of three members to serve", || {
        cluster.member(1).healthy() && cluster.member(2).healthy()
    });

    cluster.kill(1);
    wait_until("one member of three to lose its leader", || {
        !cluster.member(2).healthy()
    });

    cluster.start(0); // a quorum again: waits until member 0 is healthy
    assert!(cluster.member(0).healthy());
    cluster.start(1);
    wait_until("all three members to serve", || {
        (0..3).all(|i| cluster.member(i).healthy())
    });
}
