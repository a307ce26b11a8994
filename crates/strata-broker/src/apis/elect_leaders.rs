//! ElectLeaders (key 43), versions 0–2: preferred (v0, and `ElectionType`
//! 0) or unclean (1) leader elections (`leadership::elect_leaders`).
//! v1+ carry a top-level error code: an unknown election type is refused
//! there with INVALID_REQUEST.

use std::time::Duration;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;

use super::RequestContext;
use crate::cluster::ElectionType;
use crate::error_code::NONE;

pub(crate) async fn handle(ctx: &RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse {
    if !ctx.authorize_cluster(AclOperation::Alter) {
        let code = ResponseError::ClusterAuthorizationFailed.code();
        let mut resp = ElectLeadersResponse::default();
        resp.error_code = code;
        for tp in req.topic_partitions.unwrap_or_default() {
            let mut t = ReplicaElectionResult::default();
            t.topic = tp.topic;
            t.partition_result = tp
                .partitions
                .into_iter()
                .map(|p| {
                    let mut pr = PartitionResult::default();
                    pr.partition_id = p;
                    pr.error_code = code;
                    pr
                })
                .collect();
            resp.replica_election_results.push(t);
        }
        return resp;
    }
    let mut resp = ElectLeadersResponse::default();
    let kind = if ctx.version == 0 {
        Some(ElectionType::Preferred)
    } else {
        ElectionType::from_wire(req.election_type)
    };
    let Some(kind) = kind else {
        resp.error_code = ResponseError::InvalidRequest.code();
        return resp;
    };
    let partitions = req.topic_partitions.map(|tps| {
        tps.into_iter()
            .map(|tp| (tp.topic.to_string(), tp.partitions))
            .collect()
    });
    let timeout = Duration::from_millis(u64::try_from(req.timeout_ms).unwrap_or(0));
    let results = ctx
        .broker
        .blocking(move |b| crate::leadership::elect_leaders(b, kind, partitions, timeout))
        .await;
    for (topic, parts) in results {
        let mut t = ReplicaElectionResult::default();
        t.topic = TopicName(StrBytes::from_string(topic));
        for (p, r) in parts {
            let mut pr = PartitionResult::default();
            pr.partition_id = p;
            match r {
                Ok(()) => pr.error_code = NONE,
                Err(e) => {
                    pr.error_code = e.code();
                    pr.error_message = Some(StrBytes::from_string(e.message()));
                }
            }
            t.partition_result.push(pr);
        }
        resp.replica_election_results.push(t);
    }
    resp
}
