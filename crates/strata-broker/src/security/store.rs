//! What the security APIs change and every broker must agree on: ACLs,
//! SCRAM credentials and client quotas. Kept in one small JSON document
//! next to the topic store, rewritten atomically (temp file, fsync, rename,
//! fsync of the directory) before a change is acknowledged, and swapped in
//! memory as one immutable [`SecurityState`] that requests read without a
//! lock held across their work.
//!
//! Format: `<first log dir>/strata-security.json`
//! ```text
//! {
//!   "version": 1,
//!   "acls": [ {"pattern": {...}, "entry": {...}} ],          // strata_security::acl::AclDocument entries
//!   "scram": { "alice": { "SCRAM-SHA-512": "salt=..,stored_key=..,server_key=..,iterations=4096" } },
//!   "quotas": { ... }                                          // strata_security::quota::QuotaConfigs
//! }
//! ```
//! Invariants: credentials are stored salted as Kafka stores them (never a
//! password); a missing file is the empty document.
//!
//! In cluster mode the same document is the etcd key `security`: a change
//! is a compare-and-swap on the revision it was read at (retried on the
//! newer document when another broker changed it first), and every broker
//! takes the newer document from its metadata watch ([`SecurityStore::apply_cluster`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use strata_security::acl::{AclBinding, Authorizer, AuthorizerConfig};
use strata_security::quota::QuotaConfigs;
use strata_security::sasl::{ScramCredential, ScramMechanism};

/// File name of the store inside the first log directory.
pub const SECURITY_FILE: &str = "strata-security.json";
const FORMAT_VERSION: u32 = 1;

/// Why the security store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SecurityStoreError {
    #[error("{op} {path}")]
    Io {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a security store document")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} has format version {version}; this Strata reads version {FORMAT_VERSION}")]
    Version { path: PathBuf, version: u32 },
    #[error("cannot write the security document to etcd")]
    Cluster(#[source] crate::cluster::ClusterError),
    #[error("the security document in etcd kept changing under this update ({attempts} attempts)")]
    Contended { attempts: u32 },
    #[error("{path}: SCRAM credential of {user} ({mechanism}) is unreadable: {reason}")]
    Credential {
        path: PathBuf,
        user: String,
        mechanism: String,
        reason: String,
    },
}

/// The persisted document.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Document {
    pub version: u32,
    #[serde(default)]
    pub acls: Vec<AclBinding>,
    /// user -> mechanism name -> Kafka's credential text.
    #[serde(default)]
    pub scram: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pub quotas: QuotaConfigs,
}

/// One consistent view of the store.
#[derive(Debug)]
pub(crate) struct SecurityState {
    pub authorizer: Authorizer,
    /// user -> mechanism -> credential.
    pub scram: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
    pub quotas: QuotaConfigs,
    /// The document it was built from (what the next change starts from).
    pub document: Document,
    /// Cluster mode: the etcd revision of `document` (0: absent).
    pub revision: i64,
}

/// The store: an immutable current state, replaced whole on each change.
///
/// Locking: `write` serialises changes (read-modify-persist-swap); `state`
/// is only held to clone or replace the `Arc`.
#[derive(Debug)]
pub(crate) struct SecurityStore {
    path: Option<PathBuf>,
    /// Cluster mode: changes go to etcd.
    cluster: Option<Arc<crate::cluster::Cluster>>,
    config: AuthorizerConfig,
    state: RwLock<Arc<SecurityState>>,
    write: Mutex<()>,
}

impl SecurityStore {
    /// Open the store in `dir` (a missing file is empty).
    ///
    /// # Errors
    /// The file cannot be read or is not a valid document.
    pub(crate) fn open(
        dir: &Path,
        config: AuthorizerConfig,
    ) -> Result<SecurityStore, SecurityStoreError> {
        let path = dir.join(SECURITY_FILE);
        let doc = load(&path)?;
        let state = build(&path, &config, doc, 0)?;
        Ok(SecurityStore {
            path: Some(path),
            cluster: None,
            config,
            state: RwLock::new(Arc::new(state)),
            write: Mutex::new(()),
        })
    }

    /// A store kept in memory only (until the broker opens its own).
    pub(crate) fn in_memory(config: AuthorizerConfig) -> SecurityStore {
        let state = build(Path::new(""), &config, Document::default(), 0)
            .expect("the empty document is valid");
        SecurityStore {
            path: None,
            cluster: None,
            config,
            state: RwLock::new(Arc::new(state)),
            write: Mutex::new(()),
        }
    }

    /// The current state.
    pub(crate) fn snapshot(&self) -> Arc<SecurityState> {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Cluster mode: the document is etcd's `security` key, first read from
    /// `first` (the snapshot the broker starts from).
    ///
    /// # Errors
    /// The document in etcd does not parse or build.
    pub(crate) fn clustered(
        cluster: Arc<crate::cluster::Cluster>,
        config: AuthorizerConfig,
        first: &crate::cluster::Versioned<Option<String>>,
    ) -> Result<SecurityStore, SecurityStoreError> {
        let store = SecurityStore {
            path: None,
            cluster: Some(cluster),
            state: RwLock::new(Arc::new(
                build(Path::new(""), &config, Document::default(), 0)
                    .expect("the empty document is valid"),
            )),
            config,
            write: Mutex::new(()),
        };
        store.apply_cluster(first)?;
        Ok(store)
    }

    /// Cluster mode: take etcd's document when it is newer than ours.
    ///
    /// # Errors
    /// The document does not parse or build (the current one stays).
    pub(crate) fn apply_cluster(
        &self,
        value: &crate::cluster::Versioned<Option<String>>,
    ) -> Result<(), SecurityStoreError> {
        if value.mod_revision <= self.snapshot().revision {
            return Ok(());
        }
        let path = PathBuf::from("etcd:security");
        let doc = match &value.value {
            None => Document {
                version: FORMAT_VERSION,
                ..Document::default()
            },
            Some(text) => parse(&path, text.as_bytes())?,
        };
        let state = build(&path, &self.config, doc, value.mod_revision)?;
        let mut current = self.state.write().unwrap_or_else(|p| p.into_inner());
        if value.mod_revision > current.revision {
            *current = Arc::new(state);
        }
        Ok(())
    }

    /// Change the document with `f`, persist it, then make it current.
    /// `f` returns `(changed, result)`; an unchanged document is not written.
    /// Blocking (file I/O, or an etcd round trip in cluster mode): call it
    /// off the async executor.
    ///
    /// # Errors
    /// Persisting failed (the old state stays current) or the new document
    /// does not build.
    pub(crate) fn update<R>(
        &self,
        mut f: impl FnMut(&mut Document) -> (bool, R),
    ) -> Result<R, SecurityStoreError> {
        let _write = self.write.lock().unwrap_or_else(|p| p.into_inner());
        const ATTEMPTS: u32 = 20;
        for _ in 0..ATTEMPTS {
            let current = self.snapshot();
            let mut doc = current.document.clone();
            let (changed, result) = f(&mut doc);
            if !changed {
                return Ok(result);
            }
            doc.version = FORMAT_VERSION;
            let path = self.path.clone().unwrap_or_default();
            let mut state = build(&path, &self.config, doc, current.revision)?;
            if let Some(path) = &self.path {
                persist(path, &state.document)?;
            }
            if let Some(cluster) = &self.cluster {
                let bytes = serde_json::to_vec(&state.document).map_err(|source| {
                    SecurityStoreError::Parse {
                        path: path.clone(),
                        source,
                    }
                })?;
                let runtime = tokio::runtime::Handle::current();
                let written = runtime
                    .block_on(cluster.put_security(current.revision, bytes))
                    .map_err(SecurityStoreError::Cluster)?;
                if !written {
                    // Another broker changed it first: wait for the newer
                    // document to arrive through the watch, then redo `f` on it.
                    let latest = runtime.block_on(cluster.security_document());
                    match latest {
                        Ok(v) => self.apply_cluster(&v)?,
                        Err(e) => return Err(SecurityStoreError::Cluster(e)),
                    }
                    continue;
                }
                // The watch brings the written revision; until then the
                // revision read stays, so a CAS on it fails and re-reads.
                state.revision = current.revision;
            }
            *self.state.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(state);
            return Ok(result);
        }
        Err(SecurityStoreError::Contended { attempts: ATTEMPTS })
    }
}

fn build(
    path: &Path,
    config: &AuthorizerConfig,
    doc: Document,
    revision: i64,
) -> Result<SecurityState, SecurityStoreError> {
    let mut scram = BTreeMap::new();
    for (user, creds) in &doc.scram {
        let mut by_mechanism = BTreeMap::new();
        for (name, text) in creds {
            let bad = |reason: String| SecurityStoreError::Credential {
                path: path.to_path_buf(),
                user: user.clone(),
                mechanism: name.clone(),
                reason,
            };
            let mechanism = [ScramMechanism::Sha256, ScramMechanism::Sha512]
                .into_iter()
                .find(|m| m.mechanism_name() == name)
                .ok_or_else(|| bad("unknown mechanism".into()))?;
            let credential: ScramCredential = text.parse().map_err(|e| bad(format!("{e}")))?;
            by_mechanism.insert(mechanism, credential);
        }
        scram.insert(user.clone(), by_mechanism);
    }
    Ok(SecurityState {
        authorizer: Authorizer::new(config.clone(), doc.acls.iter().cloned()),
        scram,
        quotas: doc.quotas.clone(),
        document: doc,
        revision,
    })
}

fn load(path: &Path) -> Result<Document, SecurityStoreError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Document {
                version: FORMAT_VERSION,
                ..Document::default()
            })
        }
        Err(source) => {
            return Err(SecurityStoreError::Io {
                path: path.to_path_buf(),
                op: "reading",
                source,
            })
        }
    };
    parse(path, &bytes)
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Document, SecurityStoreError> {
    let doc: Document =
        serde_json::from_slice(bytes).map_err(|source| SecurityStoreError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    if doc.version != FORMAT_VERSION {
        return Err(SecurityStoreError::Version {
            path: path.to_path_buf(),
            version: doc.version,
        });
    }
    Ok(doc)
}

fn persist(path: &Path, doc: &Document) -> Result<(), SecurityStoreError> {
    let bytes = serde_json::to_vec_pretty(doc).map_err(|source| SecurityStoreError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    strata_log::fs::write_atomically(&strata_log::fs::StdFs, path, &bytes).map_err(|source| {
        SecurityStoreError::Io {
            path: path.to_path_buf(),
            op: "writing",
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_security::acl::{
        AccessControlEntry, AclOperation, PatternType, PermissionType, ResourcePattern,
        ResourceType,
    };

    fn binding() -> AclBinding {
        AclBinding::new(
            ResourcePattern::new(ResourceType::Topic, "orders", PatternType::Literal),
            AccessControlEntry::new("User:alice", "*", AclOperation::Read, PermissionType::Allow),
        )
    }

    #[test]
    fn changes_persist_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let config = AuthorizerConfig::default();
        let store = SecurityStore::open(dir.path(), config.clone()).unwrap();
        assert!(store.snapshot().authorizer.acls().is_empty());
        let cred = ScramCredential::from_password(
            ScramMechanism::Sha512,
            "alice-secret",
            vec![7; 16],
            4096,
        )
        .unwrap();
        store
            .update(|doc| {
                doc.acls.push(binding());
                doc.scram.entry("alice".into()).or_default().insert(
                    ScramMechanism::Sha512.mechanism_name().to_string(),
                    cred.to_string(),
                );
                (true, ())
            })
            .unwrap();
        let reopened = SecurityStore::open(dir.path(), config).unwrap();
        let snap = reopened.snapshot();
        assert_eq!(snap.authorizer.acls(), &[binding()]);
        assert_eq!(snap.scram["alice"][&ScramMechanism::Sha512], cred);
        let text = std::fs::read_to_string(dir.path().join(SECURITY_FILE)).unwrap();
        assert!(!text.contains("alice-secret"));
    }

    #[test]
    fn a_corrupt_document_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SECURITY_FILE),
            b"{\"version\":1,\"acls\":[{}]}",
        )
        .unwrap();
        let err = SecurityStore::open(dir.path(), AuthorizerConfig::default()).unwrap_err();
        assert!(err.to_string().contains(SECURITY_FILE), "{err}");
        std::fs::write(dir.path().join(SECURITY_FILE), b"{\"version\":9}").unwrap();
        let err = SecurityStore::open(dir.path(), AuthorizerConfig::default()).unwrap_err();
        assert!(matches!(
            err,
            SecurityStoreError::Version { version: 9, .. }
        ));
    }
}
