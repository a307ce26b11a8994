//! Topic-level mutations shared by the admin APIs and auto-creation:
//! create, delete, add partitions, change configs. Each runs blocking (call
//! through `Broker::blocking`) under the `admin` lock so the topic store and
//! the log directories change together.
//!
//! Crash safety: a crash between the store update and the directory changes
//! is repaired at startup by `reconcile`, which adopts any partition
//! directory the store does not know and recreates any the store expects.
//! Deletion renames the directories first, so a crash mid-delete leaves the
//! topic (possibly with fewer partitions' data), never a half-known one.

use std::collections::BTreeMap;

use strata_log::{LogConfig, TopicPartition};

use crate::api_error::ApiError;
use crate::broker::{effective_config, Broker};
use crate::cluster_admin;
use crate::placement::{assign_replicas, BrokerMetadata, PlacementError};
use crate::topics::{self, TopicInfo};

impl Broker {
    fn admin_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.admin.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replica lists for `partitions` new partitions starting at `start`.
    pub(crate) fn place_replicas(
        &self,
        partitions: i32,
        replication_factor: i16,
        start: i32,
    ) -> Result<Vec<Vec<i32>>, ApiError> {
        // Before placing anything: a request for 2^31-1 partitions must be an
        // error, not an attempt to build 2^31-1 assignments and directories.
        let existing: i64 = self
            .topics
            .list()
            .iter()
            .map(|t| i64::from(t.partitions))
            .sum();
        if partitions > 0 && existing + i64::from(partitions) > self.config.max_partitions as i64 {
            return Err(ApiError::InvalidPartitions {
                reason: "the broker would hold more partitions than strata.max.partitions allows",
            });
        }
        let me = [BrokerMetadata {
            id: self.config.node_id,
            rack: self.config.rack.clone(),
        }];
        assign_replicas(&me, partitions, replication_factor, None, start).map_err(|e| match e {
            PlacementError::InvalidPartitions => ApiError::InvalidPartitions {
                reason: "number of partitions must be larger than 0",
            },
            PlacementError::InvalidReplicationFactor => ApiError::InvalidReplicationFactor {
                reason: "replication factor must be larger than 0",
            },
            PlacementError::NotEnoughBrokers { .. } => ApiError::InvalidReplicationFactor {
                reason: "replication factor larger than available brokers (1)",
            },
            PlacementError::InconsistentRacks => ApiError::InvalidReplicaAssignment {
                reason: "not all brokers have rack information",
            },
        })
    }

    /// Create a topic and its partition logs (blocking).
    ///
    /// # Errors
    /// Invalid name / partition count / configs, existing topic, store or log failure.
    pub(crate) fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicInfo, ApiError> {
        if let Some(cluster) = &self.cluster {
            let _admin = self.admin_lock();
            return cluster_admin::create_topic(
                self,
                cluster,
                name,
                partitions,
                replication_factor,
                configs,
                validate_only,
            );
        }
        if let Some(reason) = topics::invalid_topic_name_reason(name) {
            return Err(ApiError::InvalidTopic { reason });
        }
        self.place_replicas(partitions, replication_factor, 0)?;
        // Defaults read under the admin lock: a dynamic broker config change
        // cannot slip between them and the new logs.
        let _admin = self.admin_lock();
        let config = LogConfig::with_overrides(&self.log_defaults(), &configs)
            .map_err(ApiError::InvalidConfig)?;
        crate::tiered::validate_topic(self, &config, None)?;
        if self.topics.get(name).is_some() {
            return Err(ApiError::TopicAlreadyExists);
        }
        if validate_only {
            return Ok(TopicInfo {
                name: name.to_string(),
                id: uuid::Uuid::nil(),
                partitions,
                leader_epoch: 0,
                configs,
            });
        }
        let info = self
            .topics
            .create(name, partitions, configs, None)
            .map_err(ApiError::store)?;
        for p in 0..partitions {
            self.logs
                .get_or_create_log(&TopicPartition::new(name, p), config.clone(), Some(info.id))
                .map_err(ApiError::Log)?;
        }
        tracing::info!(topic = name, partitions, id = %info.id, "created topic");
        Ok(info)
    }

    /// Auto-create `name` with broker defaults if allowed; `None` if not.
    pub(crate) fn auto_create_topic(&self, name: &str) -> Option<Result<TopicInfo, ApiError>> {
        if !self.config.auto_create_topics_enable || topics::is_internal(name) {
            return None;
        }
        let (partitions, rf) = (
            self.config.num_partitions,
            self.config.default_replication_factor,
        );
        match self.create_topic(name, partitions, rf, BTreeMap::new(), false) {
            Err(ApiError::TopicAlreadyExists) => self.topics.get(name).map(Ok),
            other => Some(other),
        }
    }

    /// Delete a topic: forget it in the store, then rename its partition
    /// directories for asynchronous deletion.
    ///
    /// A topic with an offline partition is refused with
    /// KAFKA_STORAGE_ERROR and kept whole: its data on the offline dir
    /// could not be removed, and the next start would adopt it back. The
    /// store changes first, so a failed store write (its dir full, say)
    /// refuses the request with nothing renamed; a rename that fails after
    /// it takes that dir offline and the directory stays (logged).
    ///
    /// # Errors
    /// Unknown topic, an offline partition, a store write failure.
    pub(crate) fn delete_topic(&self, name: &str) -> Result<TopicInfo, ApiError> {
        let _admin = self.admin_lock();
        if let Some(cluster) = &self.cluster {
            return cluster_admin::delete_topic(self, cluster, name);
        }
        let info = self
            .topics
            .get(name)
            .ok_or(ApiError::UnknownTopicOrPartition)?;
        for p in 0..info.partitions {
            if let Err(e @ ApiError::PartitionOffline { .. }) = self.partition_log(&info, p) {
                tracing::warn!(topic = name, error = %strata_log::ErrorChain(&e), "refusing to delete a topic with an offline partition");
                return Err(e);
            }
        }
        self.topics.delete(name).map_err(ApiError::store)?;
        for p in 0..info.partitions {
            let tp = TopicPartition::new(name, p);
            if let Err(e) = self.logs.async_delete(&tp) {
                tracing::error!(
                    %tp,
                    error = %strata_log::ErrorChain(&e),
                    "deleted topic's partition directory could not be renamed for deletion; its log dir is now offline"
                );
            }
        }
        tracing::info!(topic = name, id = %info.id, "deleted topic");
        Ok(info)
    }

    /// Grow a topic to `count` partitions.
    pub(crate) fn add_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<TopicInfo, ApiError> {
        let _admin = self.admin_lock();
        if let Some(cluster) = &self.cluster {
            return cluster_admin::add_partitions(self, cluster, name, count, validate_only);
        }
        let info = self
            .topics
            .get(name)
            .ok_or(ApiError::UnknownTopicOrPartition)?;
        if count <= info.partitions {
            return Err(ApiError::InvalidPartitions {
                reason: if count == info.partitions {
                    "topic already has the requested number of partitions"
                } else {
                    "topic currently has more partitions than requested"
                },
            });
        }
        self.place_replicas(count - info.partitions, 1, info.partitions)?;
        if validate_only {
            return Ok(info);
        }
        let config = self.topic_config(&info);
        for p in info.partitions..count {
            self.logs
                .get_or_create_log(&TopicPartition::new(name, p), config.clone(), Some(info.id))
                .map_err(ApiError::Log)?;
        }
        let info = self
            .topics
            .update(name, |t| t.partitions = count)
            .map_err(ApiError::store)?;
        tracing::info!(topic = name, partitions = count, "added partitions");
        Ok(info)
    }

    /// Replace a topic's config overrides with `change(current)`, validated
    /// as a whole; applied to every partition log without a restart.
    pub(crate) fn alter_topic_configs(
        &self,
        name: &str,
        validate_only: bool,
        change: impl Fn(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, ApiError>,
    ) -> Result<(), ApiError> {
        let _admin = self.admin_lock();
        if let Some(cluster) = &self.cluster {
            return cluster_admin::alter_topic_configs(self, cluster, name, validate_only, change);
        }
        let info = self
            .topics
            .get(name)
            .ok_or(ApiError::UnknownTopicOrPartition)?;
        let new = change(&info.configs)?;
        let defaults = self.log_defaults();
        let new_config =
            LogConfig::with_overrides(&defaults, &new).map_err(ApiError::InvalidConfig)?;
        crate::tiered::validate_topic(
            self,
            &new_config,
            Some(&effective_config(&defaults, &info)),
        )?;
        if validate_only {
            return Ok(());
        }
        let info = self
            .topics
            .update(name, |t| t.configs = new)
            .map_err(ApiError::store)?;
        let config = effective_config(&defaults, &info);
        for p in 0..info.partitions {
            if let Some(log) = self.logs.get_log(&TopicPartition::new(name, p)) {
                log.update_config(config.clone());
            }
        }
        tracing::info!(topic = name, configs = ?info.configs, "altered topic configs");
        Ok(())
    }
}
