//! The etcd client as the cluster uses it: keys relative to the prefix,
//! a whole-prefix read, conditional transactions, leases and the watch
//! stream. Every call has a deadline, so an unreachable etcd is an error
//! after `request_timeout`, never a hang.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, WatchOptions,
    WatchStream,
};

use super::layout::RawValue;
use super::ClusterError;

/// An etcd connection scoped to one prefix.
#[derive(Clone)]
pub(crate) struct MetaStore {
    /// One client per endpoint: a call goes to the current one and moves on
    /// to the next when a member does not answer.
    clients: Vec<Client>,
    current: Arc<AtomicUsize>,
    prefix: String,
    endpoints: String,
    request_timeout: Duration,
}

impl std::fmt::Debug for MetaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaStore")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// One operation of a transaction, on a key relative to the prefix.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Put(String, Vec<u8>),
    /// A put bound to a lease (deleted when the lease expires).
    PutLeased(String, Vec<u8>, i64),
    Delete(String),
    DeletePrefix(String),
}

/// One condition of a transaction.
#[derive(Clone, Debug)]
pub(crate) enum Cond {
    /// The key was last written at this revision (0: it does not exist).
    ModRevision(String, i64),
    /// The key was created at this revision (0: it does not exist).
    CreateRevision(String, i64),
}

impl MetaStore {
    /// Connect to `endpoints` (comma-separated URLs).
    ///
    /// # Errors
    /// No endpoint answered within `request_timeout`.
    pub(crate) async fn connect(
        endpoints: &[String],
        prefix: &str,
        request_timeout: Duration,
    ) -> Result<MetaStore, ClusterError> {
        let options = ConnectOptions::new()
            .with_connect_timeout(request_timeout)
            .with_timeout(request_timeout)
            .with_keep_alive(Duration::from_secs(2), request_timeout);
        let joined = endpoints.join(",");
        let mut clients = Vec::new();
        for endpoint in endpoints {
            let client = Client::connect([endpoint], Some(options.clone()))
                .await
                .map_err(|source| ClusterError::Etcd {
                    op: "connecting",
                    endpoints: joined.clone(),
                    source,
                })?;
            clients.push(client);
        }
        let mut prefix = prefix.trim_end_matches('/').to_string();
        prefix.push('/');
        Ok(MetaStore {
            clients,
            current: Arc::new(AtomicUsize::new(0)),
            prefix,
            endpoints: joined,
            request_timeout,
        })
    }

    pub(crate) fn endpoints(&self) -> &str {
        &self.endpoints
    }

    fn full(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Run `f` against the current member, moving on to the next member
    /// when one is down or does not answer, until `request_timeout` has
    /// passed. Every write is a conditional transaction, so a write retried
    /// after an answer was lost fails its condition instead of applying twice.
    async fn call<T, F, Fut>(&self, op: &'static str, f: F) -> Result<T, ClusterError>
    where
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        let n = self.clients.len();
        let per_attempt = (self.request_timeout / n as u32).max(Duration::from_secs(1));
        let mut last = None;
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            let i = self.current.load(Ordering::Relaxed) % n;
            let attempt = per_attempt.min(deadline - now);
            match tokio::time::timeout(attempt, f(self.clients[i].clone())).await {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) if !member_unavailable(&e) => {
                    return Err(ClusterError::Etcd {
                        op,
                        endpoints: self.endpoints.clone(),
                        source: e,
                    })
                }
                Ok(Err(e)) => last = Some(e),
                Err(_) => {}
            }
            let _ =
                self.current
                    .compare_exchange(i, (i + 1) % n, Ordering::Relaxed, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(match last {
            Some(source) => ClusterError::Etcd {
                op,
                endpoints: self.endpoints.clone(),
                source,
            },
            None => ClusterError::Timeout {
                op,
                endpoints: self.endpoints.clone(),
                after: self.request_timeout,
            },
        })
    }

    /// Every key under the prefix (relative names) and the store's revision.
    pub(crate) async fn load(&self) -> Result<(BTreeMap<String, RawValue>, i64), ClusterError> {
        let resp = self
            .call("reading the cluster metadata", |mut c| {
                let key = self.prefix.clone();
                async move { c.get(key, Some(GetOptions::new().with_prefix())).await }
            })
            .await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        let mut out = BTreeMap::new();
        for kv in resp.kvs() {
            if let Some(key) = self.relative(kv.key()) {
                out.insert(
                    key,
                    RawValue {
                        value: kv.value().to_vec(),
                        create_revision: kv.create_revision(),
                        mod_revision: kv.mod_revision(),
                    },
                );
            }
        }
        Ok((out, revision))
    }

    /// One key (relative name), if it exists.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<RawValue>, ClusterError> {
        let resp = self
            .call("reading the cluster metadata", |mut c| {
                let key = self.full(key);
                async move { c.get(key, None).await }
            })
            .await?;
        Ok(resp.kvs().first().map(|kv| RawValue {
            value: kv.value().to_vec(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
        }))
    }

    /// `key` without the prefix, if it is under it and UTF-8.
    pub(crate) fn relative(&self, key: &[u8]) -> Option<String> {
        std::str::from_utf8(key)
            .ok()?
            .strip_prefix(&self.prefix)
            .map(str::to_string)
    }

    /// Run `ops` if every condition holds: `Ok(Some(revision))` with the
    /// revision the transaction wrote at, `Ok(None)` when a condition failed.
    pub(crate) async fn txn(&self, when: &[Cond], ops: &[Op]) -> Result<Option<i64>, ClusterError> {
        let compares: Vec<Compare> = when
            .iter()
            .map(|c| match c {
                Cond::ModRevision(k, r) => {
                    Compare::mod_revision(self.full(k), CompareOp::Equal, *r)
                }
                Cond::CreateRevision(k, r) => {
                    Compare::create_revision(self.full(k), CompareOp::Equal, *r)
                }
            })
            .collect();
        let txn_ops: Vec<TxnOp> = ops
            .iter()
            .map(|o| match o {
                Op::Put(k, v) => TxnOp::put(self.full(k), v.clone(), None),
                Op::PutLeased(k, v, lease) => TxnOp::put(
                    self.full(k),
                    v.clone(),
                    Some(PutOptions::new().with_lease(*lease)),
                ),
                Op::Delete(k) => TxnOp::delete(self.full(k), None),
                Op::DeletePrefix(k) => TxnOp::delete(
                    self.full(k),
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                ),
            })
            .collect();
        let resp = self
            .call("writing the cluster metadata", |mut c| {
                let txn = Txn::new().when(compares.clone()).and_then(txn_ops.clone());
                async move { c.txn(txn).await }
            })
            .await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        Ok(resp.succeeded().then_some(revision))
    }

    /// A new lease of `ttl_s` seconds.
    pub(crate) async fn grant(&self, ttl_s: i64) -> Result<i64, ClusterError> {
        let resp = self
            .call("granting a lease", |mut c| async move {
                c.lease_grant(ttl_s, None).await
            })
            .await?;
        Ok(resp.id())
    }

    /// Renew `lease` once; `Ok(false)` when etcd no longer knows it (expired).
    pub(crate) async fn keep_alive_once(&self, lease: i64) -> Result<bool, ClusterError> {
        // Opening the keep-alive stream sends one renewal and reads its
        // answer; the client reports "no such lease" as an error, which the
        // lease's remaining time confirms.
        self.call("renewing the broker's lease", |mut c| async move {
            match c.lease_keep_alive(lease).await {
                Ok(_) => Ok(true),
                Err(etcd_client::Error::LeaseKeepAliveError(_)) => {
                    let left = c.lease_time_to_live(lease, None).await?;
                    Ok(left.ttl() > 0)
                }
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// Revoke `lease` (its keys go at once).
    pub(crate) async fn revoke(&self, lease: i64) -> Result<(), ClusterError> {
        self.call("revoking a lease", |mut c| async move {
            c.lease_revoke(lease).await
        })
        .await
        .map(drop)
    }

    /// Watch every key under the prefix from `revision` on.
    pub(crate) async fn watch(&self, revision: i64) -> Result<WatchStream, ClusterError> {
        self.call("watching the cluster metadata", |mut c| {
            let key = self.prefix.clone();
            async move {
                let options = WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(revision);
                c.watch(key, Some(options)).await
            }
        })
        .await
    }
}

/// An error that says the member did not take the request (down, refusing
/// connections, or without a leader), so another member may.
fn member_unavailable(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(status) => matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Unknown
        ),
        _ => false,
    }
}
