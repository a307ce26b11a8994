//! WriteTxnMarkers (key 27), version 1 (v0 is below the kafka-protocol floor): a transaction coordinator (ours
//! on another broker, or `kafka-transactions.sh abort`) asks this broker to
//! write COMMIT/ABORT markers to partitions it leads. Answered once every
//! marker is committed or failed.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{TopicName, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use strata_security::acl::AclOperation;

use super::RequestContext;
use crate::txn::coordinator::Marker;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    // Kafka: ALTER on the cluster (tried quietly), else CLUSTER_ACTION.
    if !ctx.authorize_cluster_quietly(AclOperation::Alter)
        && !ctx.authorize_cluster(AclOperation::ClusterAction)
    {
        let code = ResponseError::ClusterAuthorizationFailed.code();
        let mut resp = WriteTxnMarkersResponse::default();
        resp.markers = req
            .markers
            .into_iter()
            .map(|m| {
                let mut r = WritableTxnMarkerResult::default();
                r.producer_id = m.producer_id;
                r.topics = m
                    .topics
                    .into_iter()
                    .map(|t| {
                        let mut out = WritableTxnMarkerTopicResult::default();
                        out.name = t.name;
                        out.partitions = t
                            .partition_indexes
                            .into_iter()
                            .map(|p| {
                                let mut pr = WritableTxnMarkerPartitionResult::default();
                                pr.partition_index = p;
                                pr.error_code = code;
                                pr
                            })
                            .collect();
                        out
                    })
                    .collect();
                r
            })
            .collect();
        return resp;
    }
    let mut resp = WriteTxnMarkersResponse::default();
    for m in req.markers {
        let marker = Marker {
            producer_id: m.producer_id.0,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: m.coordinator_epoch,
            commit: m.transaction_result,
            partitions: m
                .topics
                .iter()
                .flat_map(|t| {
                    t.partition_indexes
                        .iter()
                        .map(|p| (t.name.0.to_string(), *p))
                })
                .collect(),
        };
        let written = crate::txn_markers::write_local(&ctx.broker, &marker).await;
        let mut r = WritableTxnMarkerResult::default();
        r.producer_id = m.producer_id;
        for ((topic, partition), error) in written {
            let mut p = WritableTxnMarkerPartitionResult::default();
            p.partition_index = partition;
            p.error_code = error.map_or(0, |e| e.code());
            match r.topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
                Some(t) => t.partitions.push(p),
                None => {
                    let mut t = WritableTxnMarkerTopicResult::default();
                    t.name = TopicName(topic.into());
                    t.partitions.push(p);
                    r.topics.push(t);
                }
            }
        }
        resp.markers.push(r);
    }
    resp
}
