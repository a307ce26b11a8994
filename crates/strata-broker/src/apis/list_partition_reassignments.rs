//! ListPartitionReassignments (key 46), version 0: the partitions being
//! reassigned (`Topics` null: all) with their replicas, adding and
//! removing replicas (`leadership::list_reassignments`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    BrokerId, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::AclOperation;

use super::RequestContext;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    if !ctx.authorize_cluster(AclOperation::Describe) {
        let mut resp = ListPartitionReassignmentsResponse::default();
        resp.error_code = ResponseError::ClusterAuthorizationFailed.code();
        resp.topics = req
            .topics
            .unwrap_or_default()
            .into_iter()
            .map(|t| {
                let mut out = OngoingTopicReassignment::default();
                out.name = t.name;
                out.partitions = t
                    .partition_indexes
                    .into_iter()
                    .map(|p| {
                        let mut o = OngoingPartitionReassignment::default();
                        o.partition_index = p;
                        o
                    })
                    .collect();
                out
            })
            .collect();
        return resp;
    }
    let wanted = req.topics.map(|ts| {
        ts.into_iter()
            .map(|t| (t.name.to_string(), t.partition_indexes))
            .collect()
    });
    let ongoing = ctx
        .broker
        .blocking(move |b| crate::leadership::list_reassignments(b, wanted))
        .await;
    let ids = |v: &[i32]| v.iter().map(|r| BrokerId(*r)).collect::<Vec<_>>();
    let mut resp = ListPartitionReassignmentsResponse::default();
    for (topic, parts) in ongoing {
        let mut t = OngoingTopicReassignment::default();
        t.name = TopicName(StrBytes::from_string(topic));
        for (p, record) in parts {
            let mut o = OngoingPartitionReassignment::default();
            o.partition_index = p;
            o.replicas = ids(&record.replicas);
            o.adding_replicas = ids(&record.adding_replicas);
            o.removing_replicas = ids(&record.removing_replicas);
            t.partitions.push(o);
        }
        resp.topics.push(t);
    }
    resp
}
