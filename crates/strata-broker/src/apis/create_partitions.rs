//! CreatePartitions (key 37), versions 0–3: grow a topic's partition count
//! (never shrink), optional explicit assignments, `validate_only`.

use std::collections::BTreeSet;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;

pub(crate) async fn handle(
    ctx: &RequestContext,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let validate_only = req.validate_only;
    let mut names = BTreeSet::new();
    let dups: BTreeSet<String> = req
        .topics
        .iter()
        .filter(|t| !names.insert(t.name.to_string()))
        .map(|t| t.name.to_string())
        .collect();
    let alterable = ctx.authorized_names(
        AclOperation::Alter,
        ResourceType::Topic,
        req.topics.iter().map(|t| t.name.as_str()),
    );
    ctx.broker
        .blocking(move |b| {
            let mut resp = CreatePartitionsResponse::default();
            for t in req.topics {
                let name = t.name.to_string();
                let result = if dups.contains(&name) {
                    Err(ApiError::InvalidRequest {
                        reason: "duplicate topic name in request",
                    })
                } else if !alterable.contains(&name) {
                    Err(ApiError::TopicAuthorizationFailed)
                } else {
                    check_assignments(b.config.node_id, &t)
                        .and_then(|_| b.add_partitions(&name, t.count, validate_only))
                };
                let mut r = CreatePartitionsTopicResult::default();
                r.name = t.name;
                if let Err(e) = result {
                    r.error_code = e.code();
                    r.error_message = Some(StrBytes::from_string(e.message()));
                }
                resp.results.push(r);
            }
            resp
        })
        .await
}

fn check_assignments(
    node_id: i32,
    t: &kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic,
) -> Result<(), ApiError> {
    let Some(assignments) = &t.assignments else {
        return Ok(());
    };
    for a in assignments {
        let ids: BTreeSet<i32> = a.broker_ids.iter().map(|id| id.0).collect();
        if a.broker_ids.is_empty()
            || ids.len() != a.broker_ids.len()
            || ids.iter().any(|&i| i != node_id)
        {
            return Err(ApiError::InvalidReplicaAssignment {
                reason: "replica assignment names an unknown broker or repeats one",
            });
        }
    }
    Ok(())
}
