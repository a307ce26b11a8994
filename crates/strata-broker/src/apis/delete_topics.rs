//! DeleteTopics (key 20), versions 1–6: by name (v1–5 `topic_names`, v6
//! `topics` with a name or an id). Partition directories are renamed
//! `<tp>.<uuid>-delete` at once and removed after `file.delete.delay.ms`.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};
use uuid::Uuid;

use super::RequestContext;
use crate::api_error::ApiError;

pub(crate) async fn handle(ctx: &RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let targets: Vec<(Option<String>, Uuid)> = if ctx.version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name.map(|n| n.to_string()), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n.to_string()), Uuid::nil()))
            .collect()
    };
    let denials: Vec<Option<Option<String>>> = targets
        .iter()
        .map(|(n, id)| denial(ctx, n.as_deref(), *id))
        .collect();
    let version = ctx.version;
    let resp = ctx
        .broker
        .blocking(move |b| {
            let mut resp = DeleteTopicsResponse::default();
            for ((name, id), denied) in targets.into_iter().zip(denials) {
                if let Some(shown) = denied {
                    let e = ApiError::TopicAuthorizationFailed;
                    let mut r = DeletableTopicResult::default();
                    r.name = shown.map(|n| TopicName(StrBytes::from_string(n)));
                    if version >= 6 {
                        r.topic_id = id;
                    }
                    r.error_code = e.code();
                    if version >= 5 {
                        r.error_message = Some(StrBytes::from_string(e.message()));
                    }
                    resp.responses.push(r);
                    continue;
                }
                let resolved = match (&name, id.is_nil()) {
                    (Some(n), _) => b.topics.get(n).ok_or(ApiError::UnknownTopicOrPartition),
                    (None, false) => b.topics.get_by_id(id).ok_or(ApiError::UnknownTopicId),
                    (None, true) => Err(ApiError::InvalidRequest {
                        reason: "topic without name or id",
                    }),
                };
                let result = resolved.and_then(|info| b.delete_topic(&info.name));
                let mut r = DeletableTopicResult::default();
                r.name = name.clone().map(|n| TopicName(StrBytes::from_string(n)));
                if version >= 6 {
                    r.topic_id = id;
                }
                match result {
                    Ok(info) => {
                        r.name = Some(TopicName(StrBytes::from_string(info.name)));
                        if version >= 6 {
                            r.topic_id = info.id;
                        }
                    }
                    Err(e) => {
                        r.error_code = e.code();
                        if version >= 5 {
                            r.error_message = Some(StrBytes::from_string(e.message()));
                        }
                    }
                }
                resp.responses.push(r);
            }
            resp
        })
        .await;
    resp
}

/// Kafka's checks (its controller's order): DELETE on the cluster allows
/// every topic; otherwise a name needs DESCRIBE (before its existence is
/// looked at) and, if the topic exists, DELETE. A topic id that exists
/// needs DELETE; its name is shown in the refusal only with DESCRIBE.
/// `Some(name to show)` when refused, `None` to go ahead.
fn denial(ctx: &RequestContext, name: Option<&str>, id: Uuid) -> Option<Option<String>> {
    if ctx.authorize_cluster_quietly(AclOperation::Delete) {
        return None;
    }
    let describe = |n: &str| ctx.authorize(AclOperation::Describe, ResourceType::Topic, n);
    let delete = |n: &str| ctx.authorize(AclOperation::Delete, ResourceType::Topic, n);
    match name {
        Some(n) => {
            if !describe(n) || (ctx.broker.topics.get(n).is_some() && !delete(n)) {
                Some(Some(n.to_string()))
            } else {
                None
            }
        }
        None if id.is_nil() => None,
        None => {
            let info = ctx.broker.topics.get_by_id(id)?;
            (!delete(&info.name)).then(|| describe(&info.name).then_some(info.name.clone()))
        }
    }
}
