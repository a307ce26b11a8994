//! The etcd client as the cluster uses it: keys relative to the prefix,
//! a whole-prefix read, conditional transactions, leases and the watch
//! stream. Every call has a deadline, so an unreachable etcd is an error
//! after `request_timeout`, never a hang.

use std::collections::BTreeMap;
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
    client: Client,
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
        let client = Client::connect(endpoints, Some(options))
            .await
            .map_err(|source| ClusterError::Etcd {
                op: "connecting",
                endpoints: joined.clone(),
                source,
            })?;
        let mut prefix = prefix.trim_end_matches('/').to_string();
        prefix.push('/');
        Ok(MetaStore {
            client,
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

    fn err(&self, op: &'static str) -> impl FnOnce(etcd_client::Error) -> ClusterError + '_ {
        move |source| ClusterError::Etcd {
            op,
            endpoints: self.endpoints.clone(),
            source,
        }
    }

    async fn deadline<T>(
        &self,
        op: &'static str,
        fut: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, ClusterError> {
        match tokio::time::timeout(self.request_timeout, fut).await {
            Ok(r) => r.map_err(self.err(op)),
            Err(_) => Err(ClusterError::Timeout {
                op,
                endpoints: self.endpoints.clone(),
                after: self.request_timeout,
            }),
        }
    }

    /// Every key under the prefix (relative names) and the store's revision.
    pub(crate) async fn load(&self) -> Result<(BTreeMap<String, RawValue>, i64), ClusterError> {
        let mut client = self.client.clone();
        let resp = self
            .deadline(
                "reading the cluster metadata",
                client.get(self.prefix.clone(), Some(GetOptions::new().with_prefix())),
            )
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
        let mut client = self.client.clone();
        let resp = self
            .deadline(
                "reading the cluster metadata",
                client.get(self.full(key), None),
            )
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
        let mut client = self.client.clone();
        let resp = self
            .deadline(
                "writing the cluster metadata",
                client.txn(Txn::new().when(compares).and_then(txn_ops)),
            )
            .await?;
        let revision = resp.header().map_or(0, |h| h.revision());
        Ok(resp.succeeded().then_some(revision))
    }

    /// A new lease of `ttl_s` seconds.
    pub(crate) async fn grant(&self, ttl_s: i64) -> Result<i64, ClusterError> {
        let mut client = self.client.clone();
        let resp = self
            .deadline("granting a lease", client.lease_grant(ttl_s, None))
            .await?;
        Ok(resp.id())
    }

    /// Renew `lease` once; `Ok(false)` when etcd no longer knows it (expired).
    pub(crate) async fn keep_alive_once(&self, lease: i64) -> Result<bool, ClusterError> {
        let mut client = self.client.clone();
        let fut = async move {
            let (mut keeper, mut stream) = client.lease_keep_alive(lease).await?;
            keeper.keep_alive().await?;
            match stream.message().await? {
                Some(resp) => Ok(resp.ttl() > 0),
                None => Ok(false),
            }
        };
        self.deadline("renewing the broker's lease", fut).await
    }

    /// Revoke `lease` (its keys go at once).
    pub(crate) async fn revoke(&self, lease: i64) -> Result<(), ClusterError> {
        let mut client = self.client.clone();
        self.deadline("revoking a lease", client.lease_revoke(lease))
            .await
            .map(drop)
    }

    /// Watch every key under the prefix from `revision` on (with progress
    /// notifications, so a silent etcd is told apart from a quiet one).
    pub(crate) async fn watch(&self, revision: i64) -> Result<WatchStream, ClusterError> {
        let mut client = self.client.clone();
        self.deadline(
            "watching the cluster metadata",
            client.watch(
                self.prefix.clone(),
                Some(
                    WatchOptions::new()
                        .with_prefix()
                        .with_start_revision(revision)
                        .with_progress_notify(),
                ),
            ),
        )
        .await
    }
}
