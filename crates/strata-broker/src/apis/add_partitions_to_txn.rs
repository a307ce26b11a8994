//! AddPartitionsToTxn (key 24), versions 0–5. v0–3 come from producers
//! (one transaction, partitions added to it); v4+ come from partition
//! leaders verifying a transactional batch (KIP-890 `VerifyOnly`), several
//! transactions per request. Unknown partitions fail with
//! UNKNOWN_TOPIC_OR_PARTITION, internal topics with TOPIC_AUTHORIZATION_FAILED
//! (use AddOffsetsToTxn), and then the others get OPERATION_NOT_ATTEMPTED.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::txn::metadata::TxnPartition;

fn flatten(topics: &[AddPartitionsToTxnTopic]) -> Vec<TxnPartition> {
    topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.0.to_string(), *p)))
        .collect()
}

fn results(per_partition: Vec<(TxnPartition, i16)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, partition), code) in per_partition {
        let mut r = AddPartitionsToTxnPartitionResult::default();
        r.partition_index = partition;
        r.partition_error_code = code;
        match out.iter_mut().find(|t| t.name.0.as_str() == topic) {
            Some(t) => t.results_by_partition.push(r),
            None => {
                let mut t = AddPartitionsToTxnTopicResult::default();
                t.name = kafka_protocol::messages::TopicName(topic.into());
                t.results_by_partition.push(r);
                out.push(t);
            }
        }
    }
    out
}

/// Add (or, with `verify_only`, check) `partitions` for one transaction.
async fn one(
    ctx: &RequestContext,
    id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: Vec<TxnPartition>,
    verify_only: bool,
) -> Vec<(TxnPartition, i16)> {
    let broker = &ctx.broker;
    // Producers (v0–3) need WRITE on the transactional id and on every
    // topic; brokers (v4+) were authorized for the whole request.
    let from_client = ctx.version < 4;
    if from_client && !ctx.authorize(AclOperation::Write, ResourceType::TransactionalId, id) {
        let code = ResponseError::TransactionalIdAuthorizationFailed.code();
        return partitions.into_iter().map(|p| (p, code)).collect();
    }
    let writable = if from_client {
        ctx.authorized_names(
            AclOperation::Write,
            ResourceType::Topic,
            partitions
                .iter()
                .map(|(t, _)| t.as_str())
                .filter(|t| !crate::topics::is_internal(t)),
        )
    } else {
        Default::default()
    };
    let mut bad = Vec::new();
    for (t, p) in &partitions {
        let code = match broker.topics.get(t) {
            _ if crate::topics::is_internal(t) && !verify_only => {
                Some(ResponseError::TopicAuthorizationFailed)
            }
            _ if from_client && !writable.contains(t) => {
                Some(ResponseError::TopicAuthorizationFailed)
            }
            Some(info) if *p >= 0 && *p < info.partitions => None,
            _ => Some(ResponseError::UnknownTopicOrPartition),
        };
        if let Some(code) = code {
            bad.push(((t.clone(), *p), code));
        }
    }
    if !bad.is_empty() {
        return partitions
            .into_iter()
            .map(|p| {
                let code = bad
                    .iter()
                    .find(|(q, _)| *q == p)
                    .map_or(ResponseError::OperationNotAttempted, |(_, c)| *c);
                (p, code.code())
            })
            .collect();
    }
    if verify_only {
        let r = broker
            .txn
            .verify(broker, id, producer_id, epoch, &partitions)
            .await;
        return match r {
            Ok(each) => partitions
                .into_iter()
                .zip(each)
                .map(|(p, r)| (p, r.err().map_or(0, |e| e.code())))
                .collect(),
            Err(e) => partitions.into_iter().map(|p| (p, e.code())).collect(),
        };
    }
    let r = broker
        .txn
        .add_partitions(broker, id, producer_id, epoch, &partitions)
        .await;
    let code = match r {
        Ok(()) => 0,
        // v0–1 clients do not know PRODUCER_FENCED.
        Err(ResponseError::ProducerFenced) if ctx.version < 2 => {
            ResponseError::InvalidProducerEpoch.code()
        }
        Err(e) => e.code(),
    };
    partitions.into_iter().map(|p| (p, code)).collect()
}

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let mut resp = AddPartitionsToTxnResponse::default();
    if ctx.version >= 4 && !ctx.authorize_cluster(AclOperation::ClusterAction) {
        // v4+ only comes from brokers verifying transactional batches.
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return resp;
    }
    if ctx.version < 4 {
        let per = one(
            ctx,
            req.v3_and_below_transactional_id.0.as_str(),
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            flatten(&req.v3_and_below_topics),
            false,
        )
        .await;
        resp.results_by_topic_v3_and_below = results(per);
        return resp;
    }
    for t in req.transactions {
        let per = one(
            ctx,
            t.transactional_id.0.as_str(),
            t.producer_id.0,
            t.producer_epoch,
            flatten(&t.topics),
            t.verify_only,
        )
        .await;
        let mut r = AddPartitionsToTxnResult::default();
        r.transactional_id = t.transactional_id;
        r.topic_results = results(per);
        resp.results_by_transaction.push(r);
    }
    resp
}
