//! Metadata (key 3): the one broker, the topics with their ids, partitions,
//! leader epochs and internal flag; auto-creates missing topics when both
//! `auto.create.topics.enable` and the request allow it.

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use strata_security::acl::{AclOperation, ResourceType};

use super::RequestContext;
use crate::api_error::ApiError;
use crate::broker::Broker;
use crate::cluster::Snapshot;
use crate::topics::{self, TopicInfo};

pub(crate) async fn handle(ctx: &RequestContext, req: MetadataRequest) -> MetadataResponse {
    let broker = &ctx.broker;
    let allow_auto_create = ctx.version < 4 || req.allow_auto_topic_creation;
    // (entry, whether the principal may DESCRIBE it: only those get
    // authorized operations)
    let mut topics_out: Vec<(MetadataResponseTopic, bool)> = Vec::new();
    let requested = match req.topics {
        Some(list) if !(ctx.version == 0 && list.is_empty()) => Some(list),
        _ => None,
    };
    match requested {
        None => {
            // All topics: those the principal may not DESCRIBE are left
            // out silently (a filter, so denials are not logged at INFO).
            for info in broker.topics.list() {
                if ctx.authorize_quietly(AclOperation::Describe, ResourceType::Topic, &info.name) {
                    topics_out.push((topic_entry(broker, &info), true));
                }
            }
        }
        Some(list) => {
            for t in list {
                let entry = match (&t.name, t.topic_id.is_nil()) {
                    (Some(name), _) => by_name(ctx, name.as_str(), allow_auto_create).await,
                    (None, false) => match broker.topics.get_by_id(t.topic_id) {
                        Some(info)
                            if !ctx.authorize(
                                AclOperation::Describe,
                                ResourceType::Topic,
                                &info.name,
                            ) =>
                        {
                            // Ids are not secret: the id, but no name.
                            (
                                error_entry(None, info.id, &ApiError::TopicAuthorizationFailed),
                                false,
                            )
                        }
                        Some(info) => (topic_entry(broker, &info), true),
                        None => (
                            error_entry(None, t.topic_id, &ApiError::UnknownTopicId),
                            false,
                        ),
                    },
                    (None, true) => (
                        error_entry(
                            None,
                            t.topic_id,
                            &ApiError::InvalidRequest {
                                reason: "topic without name or id",
                            },
                        ),
                        false,
                    ),
                };
                topics_out.push(entry);
            }
        }
    }
    let mut resp = MetadataResponse::default();
    resp.brokers = broker
        .live_brokers(&ctx.session.listener)
        .into_iter()
        .map(|e| {
            let mut b = MetadataResponseBroker::default();
            b.node_id = BrokerId(e.id);
            b.host = StrBytes::from_string(e.host);
            b.port = i32::from(e.port);
            b.rack = e.rack.map(StrBytes::from_string);
            b
        })
        .collect();
    resp.controller_id = BrokerId(broker.controller_id());
    resp.cluster_id = Some(StrBytes::from_string(broker.cluster_id.clone()));
    if (8..=10).contains(&ctx.version) && req.include_cluster_authorized_operations {
        resp.cluster_authorized_operations = if ctx.authorize_cluster(AclOperation::Describe) {
            ctx.authorized_operations(ResourceType::Cluster, super::authorize::CLUSTER)
        } else {
            0
        };
    }
    let with_operations = ctx.version >= 8 && req.include_topic_authorized_operations;
    resp.topics = topics_out
        .into_iter()
        .map(|(mut t, described)| {
            if with_operations && described {
                let name = t.name.as_ref().map_or("", |n| n.0.as_str());
                t.topic_authorized_operations =
                    ctx.authorized_operations(ResourceType::Topic, name);
            }
            t
        })
        .collect();
    resp
}

/// A topic asked for by name: DESCRIBE first (a denied name is answered
/// TOPIC_AUTHORIZATION_FAILED with a zero id whether or not it exists),
/// then auto-creation, which needs CREATE on the cluster or the topic.
/// The flag says whether the principal may DESCRIBE the topic.
async fn by_name(
    ctx: &RequestContext,
    name: &str,
    allow_auto_create: bool,
) -> (MetadataResponseTopic, bool) {
    let broker = &ctx.broker;
    let denied = || {
        error_entry(
            Some(name),
            uuid::Uuid::nil(),
            &ApiError::TopicAuthorizationFailed,
        )
    };
    if !ctx.authorize(AclOperation::Describe, ResourceType::Topic, name) {
        return (denied(), false);
    }
    if let Some(info) = broker.topics.get(name) {
        return (topic_entry(broker, &info), true);
    }
    let auto_create = allow_auto_create && broker.config.auto_create_topics_enable;
    if auto_create
        && !ctx.authorize_cluster_quietly(AclOperation::Create)
        && !ctx.authorize(AclOperation::Create, ResourceType::Topic, name)
    {
        return (denied(), false);
    }
    if let Some(reason) = topics::invalid_topic_name_reason(name) {
        return (
            error_entry(
                Some(name),
                uuid::Uuid::nil(),
                &ApiError::InvalidTopic { reason },
            ),
            true,
        );
    }
    if auto_create {
        let owned = name.to_string();
        let created = broker.blocking(move |b| b.auto_create_topic(&owned)).await;
        match created {
            Some(Ok(info)) => return (topic_entry(broker, &info), true),
            Some(Err(e)) => {
                tracing::warn!(topic = name, error = %strata_log::ErrorChain(&e), "auto-creating topic failed");
                return (error_entry(Some(name), uuid::Uuid::nil(), &e), true);
            }
            None => {}
        }
    }
    (
        error_entry(
            Some(name),
            uuid::Uuid::nil(),
            &ApiError::UnknownTopicOrPartition,
        ),
        true,
    )
}

fn topic_entry(broker: &Broker, info: &TopicInfo) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.name = Some(TopicName(StrBytes::from_string(info.name.clone())));
    t.topic_id = info.id;
    t.is_internal = topics::is_internal(&info.name);
    if let Some(cluster) = &broker.cluster {
        let snapshot = cluster.applied();
        t.partitions = (0..info.partitions)
            .map(|p| cluster_partition(broker, &snapshot, info, p))
            .collect();
        return t;
    }
    let node = BrokerId(broker.config.node_id);
    let epoch = broker.leader_epoch(info, 0);
    t.partitions = (0..info.partitions)
        .map(|p| {
            let mut part = MetadataResponsePartition::default();
            part.partition_index = p;
            part.leader_id = node;
            part.leader_epoch = epoch;
            part.replica_nodes = vec![node];
            part.isr_nodes = vec![node];
            if broker.partition_offline(info, p) {
                // KRaftMetadataCache: the only replica's dir is offline, so
                // the partition has no leader and lists it as offline.
                part.error_code = ApiError::LeaderNotAvailable.code();
                part.leader_id = BrokerId(-1);
                part.offline_replicas = vec![node];
            }
            part
        })
        .collect();
    t
}

/// A partition as the controller's state has it (Kafka's
/// `KRaftMetadataCache`): no leader is LEADER_NOT_AVAILABLE, replicas whose
/// broker is not live are offline; a partition not assigned yet has no
/// leader and no replicas.
fn cluster_partition(
    broker: &Broker,
    snapshot: &Snapshot,
    info: &TopicInfo,
    p: i32,
) -> MetadataResponsePartition {
    let mut part = MetadataResponsePartition::default();
    part.partition_index = p;
    let Some(state) = snapshot
        .partition(&info.name, p)
        .filter(|s| s.value.topic_id == info.id)
    else {
        part.error_code = ApiError::LeaderNotAvailable.code();
        part.leader_id = BrokerId(-1);
        return part;
    };
    let state = &state.value;
    let ids = |v: &[i32]| v.iter().map(|r| BrokerId(*r)).collect::<Vec<_>>();
    part.leader_id = BrokerId(state.leader);
    part.leader_epoch = state.leader_epoch;
    part.replica_nodes = ids(&state.replicas);
    part.isr_nodes = ids(&state.isr);
    let offline: Vec<i32> = state
        .replicas
        .iter()
        .copied()
        .filter(|r| {
            !snapshot.is_live(*r)
                || (*r == broker.config.node_id && broker.partition_offline(info, p))
        })
        .collect();
    part.offline_replicas = ids(&offline);
    if state.leader < 0 || offline.contains(&state.leader) {
        part.error_code = ApiError::LeaderNotAvailable.code();
        part.leader_id = BrokerId(-1);
    }
    part
}

fn error_entry(name: Option<&str>, id: uuid::Uuid, e: &ApiError) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.error_code = e.code();
    t.name = name.map(|n| TopicName(StrBytes::from_string(n.to_string())));
    t.topic_id = id;
    t
}
