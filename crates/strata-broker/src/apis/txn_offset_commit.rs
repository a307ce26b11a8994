//! TxnOffsetCommit (key 28), versions 0–4: offsets committed inside a
//! transaction. The group coordinator writes them as a transactional batch
//! of the producer to the group's `__consumer_offsets` partition; they
//! become visible when the transaction's COMMIT marker reaches that
//! partition and are dropped on ABORT. The transaction coordinator first
//! confirms the partition is in the transaction (KIP-890).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::error_code::code_of;
use crate::group::api::{CommitPartition, CommitRequest};

/// KIP-890: the group's `__consumer_offsets` partition must be in the
/// producer's ongoing transaction (added by AddOffsetsToTxn); errors are
/// converted as Kafka's `TxnOffsetCommit` does.
async fn verify(ctx: &RequestContext, req: &TxnOffsetCommitRequest) -> Result<(), ResponseError> {
    use ResponseError as E;
    let broker = &ctx.broker;
    if !broker.config.txn.verification_enable {
        return Ok(());
    }
    let partition = broker.offsets_partition_of(req.group_id.0.as_str());
    let answer = crate::txn_verify::ask_coordinator(
        broker,
        req.transactional_id.0.as_str(),
        req.producer_id.0,
        req.producer_epoch,
        &[partition],
    )
    .await;
    match answer.into_iter().next().unwrap_or(Ok(())) {
        Ok(()) => Ok(()),
        Err(e) => Err(match e {
            E::NetworkException => E::CoordinatorLoadInProgress,
            E::UnknownTopicOrPartition | E::NotEnoughReplicas | E::NotEnoughReplicasAfterAppend => {
                E::CoordinatorNotAvailable
            }
            E::NotLeaderOrFollower | E::KafkaStorageError => E::NotCoordinator,
            E::ProducerFenced => E::InvalidProducerEpoch,
            E::TransactionAbortable if ctx.version < 4 => E::InvalidTxnState,
            other => other,
        }),
    }
}

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let broker = &ctx.broker;
    // WRITE on the transactional id, then READ on the group: either
    // failure answers every partition; then READ on each topic, before
    // its existence.
    let refused = if !ctx.authorize(
        AclOperation::Write,
        ResourceType::TransactionalId,
        req.transactional_id.0.as_str(),
    ) {
        Some(ResponseError::TransactionalIdAuthorizationFailed)
    } else if !ctx.authorize(
        AclOperation::Read,
        ResourceType::Group,
        req.group_id.0.as_str(),
    ) {
        Some(ResponseError::GroupAuthorizationFailed)
    } else {
        None
    };
    let readable = match refused {
        Some(_) => Default::default(),
        None => ctx.authorized_names(
            AclOperation::Read,
            ResourceType::Topic,
            req.topics.iter().map(|t| t.name.as_str()),
        ),
    };
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    for (ti, t) in req.topics.iter().enumerate() {
        let topic = t.name.to_string();
        let allowed = readable.contains(&topic);
        let count = broker.topics.get(&topic).map_or(0, |info| info.partitions);
        for (pi, p) in t.partitions.iter().enumerate() {
            let slot = match refused {
                Some(e) => Err(e),
                None if !allowed => Err(ResponseError::TopicAuthorizationFailed),
                None if (0..count).contains(&p.partition_index) => Ok(()),
                None => Err(ResponseError::UnknownTopicOrPartition),
            };
            let known = slot.is_ok();
            slots.push((ti, pi, slot));
            if known {
                partitions.push(CommitPartition {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if ctx.version >= 2 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(|m| m.to_string()),
                    commit_timestamp: -1,
                });
            }
        }
    }
    let v3 = ctx.version >= 3;
    let commit = CommitRequest {
        group_id: req.group_id.to_string(),
        generation_id: if v3 { req.generation_id } else { -1 },
        member_id: if v3 {
            req.member_id.to_string()
        } else {
            String::new()
        },
        group_instance_id: if v3 {
            req.group_instance_id.as_ref().map(|s| s.to_string())
        } else {
            None
        },
        retention_time_ms: -1,
        partitions,
        txn: Some((req.producer_id.0, req.producer_epoch)),
    };
    let verified = if commit.partitions.is_empty() {
        Ok(())
    } else {
        verify(ctx, &req).await
    };
    let mut results = match verified {
        Err(e) => vec![Some(e); commit.partitions.len()],
        Ok(()) if commit.partitions.is_empty() => Vec::new(),
        Ok(()) => broker.groups.commit(broker, commit).await,
    }
    .into_iter();
    let mut topics: Vec<TxnOffsetCommitResponseTopic> = req
        .topics
        .iter()
        .map(|t| {
            let mut out = TxnOffsetCommitResponseTopic::default();
            out.name = t.name.clone();
            out
        })
        .collect();
    for (ti, pi, slot) in slots {
        let mut error = match slot {
            Ok(()) => results.next().flatten(),
            Err(e) => Some(e),
        };
        if ctx.version < 2 && error == Some(ResponseError::CoordinatorLoadInProgress) {
            error = Some(ResponseError::CoordinatorNotAvailable);
        }
        let mut p = TxnOffsetCommitResponsePartition::default();
        p.partition_index = req.topics[ti].partitions[pi].partition_index;
        p.error_code = code_of(error);
        topics[ti].partitions.push(p);
    }
    let mut resp = TxnOffsetCommitResponse::default();
    resp.topics = topics;
    resp
}
