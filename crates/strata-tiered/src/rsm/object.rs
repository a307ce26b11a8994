//! [`ObjectStoreRsm`]: the storage plug-in over any `object_store` back end
//! (local directory or S3-API bucket), objects named by [`super::layout`].

use std::path::Path as FsPath;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use super::layout::{all_suffixes, index_suffix, object_key, LOG_SUFFIX};
use super::{IndexType, LogSegmentData, RemoteStorageManager};
use crate::bridge::Bridge;
use crate::error::RemoteStorageError;
use crate::metadata::RemoteLogSegmentMetadata;

/// Files at least this large are uploaded in parts, so a 1 GiB segment is
/// never one request (and S3's 5 GiB single-put limit never applies).
const MULTIPART_THRESHOLD: usize = 16 * 1024 * 1024;
const MULTIPART_CHUNK: usize = 8 * 1024 * 1024;

/// One stored object, as `strata tier fsck` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteObject {
    /// Key relative to the plug-in's root.
    pub key: String,
    pub size: u64,
}

/// A [`RemoteStorageManager`] over an `object_store`.
#[derive(Debug)]
pub struct ObjectStoreRsm {
    store: Arc<dyn ObjectStore>,
    /// Key prefix of everything this plug-in writes (`kafka-tiered-storage`
    /// for a local directory, the URI's prefix for a bucket).
    root: String,
    bridge: Arc<Bridge>,
}

impl ObjectStoreRsm {
    pub fn new(
        store: Arc<dyn ObjectStore>,
        root: impl Into<String>,
        bridge: Arc<Bridge>,
    ) -> ObjectStoreRsm {
        let root = root.into().trim_matches('/').to_string();
        ObjectStoreRsm {
            store,
            root,
            bridge,
        }
    }

    /// The underlying store (benchmarks compare against raw reads of it).
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn bridge(&self) -> &Arc<Bridge> {
        &self.bridge
    }

    /// Full object path of a key relative to the root.
    pub fn path(&self, key: &str) -> Path {
        if self.root.is_empty() {
            Path::from(key)
        } else {
            Path::from(format!("{}/{}", self.root, key))
        }
    }

    fn segment_path(&self, md: &RemoteLogSegmentMetadata, suffix: &str) -> Path {
        self.path(&object_key(&md.segment_id, md.start_offset, suffix))
    }

    fn upload(&self, local: &FsPath, target: Path) -> Result<(), RemoteStorageError> {
        let data = std::fs::read(local).map_err(|source| RemoteStorageError::LocalIo {
            path: local.to_path_buf(),
            source,
        })?;
        self.put(target, Bytes::from(data))
    }

    fn put(&self, target: Path, data: Bytes) -> Result<(), RemoteStorageError> {
        let store = Arc::clone(&self.store);
        let key = target.to_string();
        self.bridge
            .run(async move {
                if data.len() < MULTIPART_THRESHOLD {
                    store.put(&target, PutPayload::from(data)).await.map(|_| ())
                } else {
                    let upload = store.put_multipart(&target).await?;
                    let mut writer = WriteMultipart::new_with_chunk_size(upload, MULTIPART_CHUNK);
                    writer.put(data);
                    writer.finish().await.map(|_| ())
                }
            })?
            .map_err(|source| RemoteStorageError::Store {
                op: "put",
                key,
                source,
            })
    }

    fn get_all(&self, target: Path) -> Result<Bytes, RemoteStorageError> {
        let store = Arc::clone(&self.store);
        let key = target.to_string();
        self.bridge
            .run(async move {
                let got = store.get(&target).await?;
                got.bytes().await
            })?
            .map_err(|source| store_error("get", key, source))
    }

    fn delete_path(&self, target: Path) -> Result<(), RemoteStorageError> {
        let store = Arc::clone(&self.store);
        let key = target.to_string();
        match self
            .bridge
            .run(async move { store.delete(&target).await })?
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(source) => Err(RemoteStorageError::Store {
                op: "delete",
                key,
                source,
            }),
        }
    }
}

fn store_error(op: &'static str, key: String, source: object_store::Error) -> RemoteStorageError {
    match source {
        object_store::Error::NotFound { .. } => RemoteStorageError::NotFound { key },
        source => RemoteStorageError::Store { op, key, source },
    }
}

impl RemoteStorageManager for ObjectStoreRsm {
    fn copy_log_segment_data(
        &self,
        md: &RemoteLogSegmentMetadata,
        data: &LogSegmentData,
    ) -> Result<Option<Vec<u8>>, RemoteStorageError> {
        let result = (|| {
            // Companions first, `.log` last: a `.log` object implies the
            // rest were written (fsck relies on it for half copies).
            self.upload(
                &data.offset_index,
                self.segment_path(md, index_suffix(IndexType::Offset)),
            )?;
            self.upload(
                &data.time_index,
                self.segment_path(md, index_suffix(IndexType::Timestamp)),
            )?;
            if let Some(txn) = &data.transaction_index {
                self.upload(
                    txn,
                    self.segment_path(md, index_suffix(IndexType::Transaction)),
                )?;
            }
            if let Some(snapshot) = &data.producer_snapshot {
                self.upload(
                    snapshot,
                    self.segment_path(md, index_suffix(IndexType::ProducerSnapshot)),
                )?;
            }
            if !data.leader_epoch_index.is_empty() {
                self.put(
                    self.segment_path(md, index_suffix(IndexType::LeaderEpoch)),
                    Bytes::from(data.leader_epoch_index.clone()),
                )?;
            }
            self.upload(&data.log_segment, self.segment_path(md, LOG_SUFFIX))
        })();
        if let Err(err) = result {
            if let Err(cleanup) = self.delete_log_segment_data(md) {
                tracing::warn!(segment = %md.segment_id, error = %cleanup, "cleanup after failed copy failed");
            }
            return Err(err);
        }
        Ok(None)
    }

    fn fetch_log_segment(
        &self,
        md: &RemoteLogSegmentMetadata,
        start: u64,
        end: Option<u64>,
    ) -> Result<Bytes, RemoteStorageError> {
        let size = u64::try_from(md.segment_size_in_bytes).unwrap_or(0);
        let end = end.map_or(size, |e| e.min(size));
        if start > size || start > end {
            return Err(RemoteStorageError::InvalidRange {
                start,
                end: Some(end),
                size,
            });
        }
        if start == end {
            return Ok(Bytes::new());
        }
        let target = self.segment_path(md, LOG_SUFFIX);
        let store = Arc::clone(&self.store);
        let key = target.to_string();
        self.bridge
            .run(async move { store.get_range(&target, start..end).await })?
            .map_err(|source| store_error("get_range", key, source))
    }

    fn fetch_index(
        &self,
        md: &RemoteLogSegmentMetadata,
        kind: IndexType,
    ) -> Result<Bytes, RemoteStorageError> {
        self.get_all(self.segment_path(md, index_suffix(kind)))
    }

    fn delete_log_segment_data(
        &self,
        md: &RemoteLogSegmentMetadata,
    ) -> Result<(), RemoteStorageError> {
        // `.log` first: once it is gone the segment counts as half-deleted
        // for fsck, never as a complete copy.
        for suffix in all_suffixes() {
            self.delete_path(self.segment_path(md, suffix))?;
        }
        Ok(())
    }

    fn list_objects(&self) -> Result<Vec<RemoteObject>, RemoteStorageError> {
        let store = Arc::clone(&self.store);
        let root = if self.root.is_empty() {
            None
        } else {
            Some(Path::from(self.root.as_str()))
        };
        let key = self.root.clone();
        let listed = self
            .bridge
            .run(async move {
                let top = store.list_with_delimiter(root.as_ref()).await?;
                let mut objects = top.objects;
                for dir in top.common_prefixes {
                    objects.extend(store.list_with_delimiter(Some(&dir)).await?.objects);
                }
                Ok::<_, object_store::Error>(objects)
            })?
            .map_err(|source| store_error("list", key, source))?;
        let strip = if self.root.is_empty() {
            String::new()
        } else {
            format!("{}/", self.root)
        };
        Ok(listed
            .into_iter()
            .map(|meta| {
                let full = meta.location.to_string();
                RemoteObject {
                    key: full.strip_prefix(&strip).unwrap_or(&full).to_string(),
                    size: meta.size,
                }
            })
            .collect())
    }

    fn delete_object(&self, key: &str) -> Result<(), RemoteStorageError> {
        self.delete_path(self.path(key))
    }
}
