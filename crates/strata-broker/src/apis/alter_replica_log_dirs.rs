//! AlterReplicaLogDirs (key 34), versions 1–2: move replicas between this
//! broker's log dirs (Kafka `ReplicaManager.alterReplicaLogDirs`). The move
//! itself runs in the log manager (`strata_log` `log_dir_move`); this
//! answers per partition:
//!
//! - LOG_DIR_NOT_FOUND: the path is not one of the configured `log.dirs`;
//! - KAFKA_STORAGE_ERROR: that dir (or any dir: no future log is created
//!   while a dir is offline, as Kafka) is offline;
//! - REPLICA_NOT_AVAILABLE: the partition is not hosted here; the dir is
//!   remembered and the partition is created there if it comes later;
//! - NONE: the move started, was already under way, or the replica already
//!   lives there (a move elsewhere in progress is then cancelled).

use std::collections::BTreeMap;
use std::path::Path;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, TopicName,
};
use strata_log::{LogDirMove, TopicPartition};
use strata_security::acl::AclOperation;

use super::RequestContext;
use crate::error_code::log_error_code;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AlterReplicaLogDirsRequest,
) -> AlterReplicaLogDirsResponse {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        // Kafka's error response: every partition, nothing moved.
        let code = ResponseError::ClusterAuthorizationFailed.code();
        return answer(req, |_, _| code);
    }
    ctx.broker
        .blocking(move |b| {
            answer(req, |tp, path| match b.logs.alter_log_dir(tp, path) {
                Ok(LogDirMove::Remembered) => ResponseError::ReplicaNotAvailable.code(),
                Ok(outcome) => {
                    tracing::info!(%tp, dir = %path.display(), ?outcome, "AlterReplicaLogDirs");
                    0
                }
                Err(e) => {
                    tracing::info!(%tp, dir = %path.display(), error = %strata_log::ErrorChain(&e), "AlterReplicaLogDirs refused");
                    log_error_code(&e).code()
                }
            })
        })
        .await
}

/// One result per requested partition, grouped by topic, with the error
/// code `code` gives each (partition, target dir).
fn answer(
    req: AlterReplicaLogDirsRequest,
    mut code: impl FnMut(&TopicPartition, &Path) -> i16,
) -> AlterReplicaLogDirsResponse {
    let mut by_topic: BTreeMap<TopicName, Vec<AlterReplicaLogDirPartitionResult>> = BTreeMap::new();
    for dir in req.dirs {
        let path = Path::new(dir.path.as_str());
        for t in dir.topics {
            for p in t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p);
                let mut r = AlterReplicaLogDirPartitionResult::default();
                r.partition_index = p;
                r.error_code = code(&tp, path);
                by_topic.entry(t.name.clone()).or_default().push(r);
            }
        }
    }
    let mut resp = AlterReplicaLogDirsResponse::default();
    resp.results = by_topic
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = AlterReplicaLogDirTopicResult::default();
            t.topic_name = name;
            t.partitions = partitions;
            t
        })
        .collect();
    resp
}
