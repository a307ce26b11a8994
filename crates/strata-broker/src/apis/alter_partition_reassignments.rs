//! AlterPartitionReassignments (key 45), version 0 (Kafka 3.9's): start or
//! cancel (null replicas) the reassignment of each partition
//! (`leadership::alter_reassignments`, KIP-455).

use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        let code = ResponseError::ClusterAuthorizationFailed.code();
        let mut resp = AlterPartitionReassignmentsResponse::default();
        resp.error_code = code;
        resp.allow_replication_factor_change = true;
        resp.responses = req
            .topics
            .into_iter()
            .map(|t| {
                let mut out = ReassignableTopicResponse::default();
                out.name = t.name;
                out.partitions = t
                    .partitions
                    .into_iter()
                    .map(|p| {
                        let mut pr = ReassignablePartitionResponse::default();
                        pr.partition_index = p.partition_index;
                        pr.error_code = code;
                        pr
                    })
                    .collect();
                out
            })
            .collect();
        return resp;
    }
    let requests: crate::leadership::ReassignRequests = req
        .topics
        .into_iter()
        .map(|t| {
            let parts = t
                .partitions
                .into_iter()
                .map(|p| {
                    let target = p.replicas.map(|rs| rs.into_iter().map(|r| r.0).collect());
                    (p.partition_index, target)
                })
                .collect();
            (t.name.to_string(), parts)
        })
        .collect();
    let timeout = Duration::from_millis(u64::try_from(req.timeout_ms).unwrap_or(0));
    let results = ctx
        .broker
        .blocking(move |b| crate::leadership::alter_reassignments(b, requests, timeout))
        .await;
    let mut resp = AlterPartitionReassignmentsResponse::default();
    resp.allow_replication_factor_change = true;
    for (topic, parts) in results {
        let mut t = ReassignableTopicResponse::default();
        t.name = kafka_protocol::messages::TopicName(StrBytes::from_string(topic));
        for (p, r) in parts {
            let mut pr = ReassignablePartitionResponse::default();
            pr.partition_index = p;
            if let Err(e) = r {
                pr.error_code = e.code();
                pr.error_message = Some(StrBytes::from_string(e.message()));
            }
            t.partitions.push(pr);
        }
        resp.responses.push(t);
    }
    resp
}
