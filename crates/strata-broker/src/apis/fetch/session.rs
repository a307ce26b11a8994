//! The Fetch handler's side of incremental fetch sessions
//! (`crate::fetch_sessions` holds the cache and the rules): which
//! partitions a request reads, and how its answer is cut down, sized for
//! the quota and committed to the session.

use std::sync::Arc;

use kafka_protocol::messages::FetchRequest;
use uuid::Uuid;

use super::{encode, encode_fetch_response, FetchResponseData, PartitionData, TopicData, Wanted};
use crate::api_error::ApiError;
use crate::apis::{quotas, RequestContext};
use crate::broker::Broker;
use crate::error_code::NONE;
use crate::fetch_sessions::{
    CachedPartition, Context, OrderedPartitions, PartitionAnswer, PartitionKey, PartitionRequest,
    RequestedPartition, SessionError, TopicKey, INVALID_SESSION_ID,
};
use crate::response::Response;
use crate::topics::TopicInfo;

/// One partition to read.
pub(super) struct Target {
    pub key: PartitionKey,
    pub request: PartitionRequest,
    /// Consecutive targets of one group are one topic of the response.
    pub group: usize,
}

fn topic_key(version: i16, name: &str, id: Uuid) -> TopicKey {
    if version >= 13 {
        TopicKey::Id(id)
    } else {
        TopicKey::Name(Arc::from(name))
    }
}

/// The targets a request lists, in its order (one group per topic entry).
fn listed(version: i16, req: &FetchRequest) -> Vec<Target> {
    let mut out = Vec::new();
    for (group, t) in req.topics.iter().enumerate() {
        let topic = topic_key(version, t.topic.as_str(), t.topic_id);
        for p in &t.partitions {
            out.push(Target {
                key: PartitionKey {
                    topic: topic.clone(),
                    partition: p.partition,
                },
                request: PartitionRequest {
                    fetch_offset: p.fetch_offset,
                    partition_max_bytes: p.partition_max_bytes,
                    current_leader_epoch: p.current_leader_epoch,
                    log_start_offset: p.log_start_offset,
                    last_fetched_epoch: p.last_fetched_epoch,
                },
                group,
            });
        }
    }
    out
}

/// Classify the request against the session cache (and apply an
/// incremental request's changes to its session).
pub(super) fn context(broker: &Broker, version: i16, req: &FetchRequest) -> Context {
    let fetch: Vec<RequestedPartition> = if req.session_epoch > 0 {
        listed(version, req)
            .into_iter()
            .map(|t| RequestedPartition {
                key: t.key,
                request: t.request,
            })
            .collect()
    } else {
        Vec::new()
    };
    let forgotten: Vec<PartitionKey> = req
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            let topic = topic_key(version, t.topic.as_str(), t.topic_id);
            t.partitions.iter().map(move |&partition| PartitionKey {
                topic: topic.clone(),
                partition,
            })
        })
        .collect();
    let sessions = &broker.fetch_sessions;
    let now = sessions.now_ms();
    sessions.lock().new_context(
        now,
        version,
        req.session_id,
        req.session_epoch,
        &fetch,
        &forgotten,
    )
}

/// What the request reads: its own partitions, or its session's (in the
/// session's order, parameters from the cache).
///
/// # Errors
/// The session error of an [`Context::Error`].
pub(super) fn targets(
    context: &Context,
    version: i16,
    req: &FetchRequest,
) -> Result<Vec<Target>, SessionError> {
    match context {
        Context::Sessionless | Context::Full { .. } => Ok(listed(version, req)),
        Context::Incremental { partitions, .. } => {
            let mut group = 0;
            Ok(partitions
                .iter()
                .enumerate()
                .map(|(i, (key, cached))| {
                    if i > 0 && partitions[i - 1].0.topic != key.topic {
                        group += 1;
                    }
                    Target {
                        key: key.clone(),
                        request: cached.request,
                        group,
                    }
                })
                .collect())
        }
        Context::Error(e) => Err(*e),
    }
}

/// The Kafka error of a session error in session `session_id` at `epoch`.
pub(super) fn api_error(e: SessionError, session_id: i32, epoch: i32) -> ApiError {
    match e {
        SessionError::IdNotFound => ApiError::FetchSessionIdNotFound { session_id },
        SessionError::InvalidEpoch => ApiError::InvalidFetchSessionEpoch { session_id, epoch },
        SessionError::TopicIdError => ApiError::FetchSessionTopicIdError { session_id },
    }
}

/// The topic a key names, if it exists here (by id from v13).
pub(super) fn topic_info(broker: &Broker, topic: &TopicKey) -> Option<TopicInfo> {
    match topic {
        TopicKey::Id(id) => broker.topics.get_by_id(*id),
        TopicKey::Name(name) => broker.topics.get(name),
    }
}

/// The response's name and id of a topic (an unknown one as requested).
pub(super) fn topic_names(topic: &TopicKey, info: Option<&TopicInfo>) -> (String, Uuid) {
    match (info, topic) {
        (Some(i), _) => (i.name.clone(), i.id),
        (None, TopicKey::Id(id)) => (String::new(), *id),
        (None, TopicKey::Name(name)) => (name.to_string(), Uuid::nil()),
    }
}

fn answer_of(p: &PartitionData) -> PartitionAnswer {
    PartitionAnswer {
        records_len: p.records.len(),
        high_watermark: p.high_watermark,
        log_start_offset: p.log_start_offset,
        last_stable_offset: p.last_stable_offset,
        error_code: p.error_code,
        preferred_replica: p.preferred_read_replica >= 0,
        diverging: p.diverging_epoch.is_some(),
    }
}

fn session_error_response(
    ctx: &RequestContext,
    e: SessionError,
    session_id: i32,
    epoch: i32,
) -> Response {
    encode_fetch_response(
        ctx.header.correlation_id,
        ctx.version,
        FetchResponseData {
            throttle_time_ms: 0,
            error_code: api_error(e, session_id, epoch).code(),
            session_id,
            topics: Vec::new(),
        },
    )
}

/// Build, size, throttle and commit the answer (Kafka's
/// `getResponseSize`, `getThrottledResponse` and
/// `updateAndGenerateResponseData`): an incremental answer lists only the
/// partitions that changed; a consumer over its quota gets an empty
/// throttled answer and its session stays as it was; otherwise a full
/// request opens its session and an incremental one records what it was
/// told.
pub(super) fn respond(
    ctx: &RequestContext,
    context: &Context,
    targets: &[Target],
    mut topics: Vec<TopicData>,
    wanted: &[Wanted],
    answers: Vec<PartitionData>,
    consumer: bool,
) -> Response {
    let broker = &ctx.broker;
    let sessions = &broker.fetch_sessions;
    let summary: Vec<(PartitionKey, PartitionAnswer)> = targets
        .iter()
        .zip(&answers)
        .map(|(t, a)| (t.key.clone(), answer_of(a)))
        .collect();
    let (session_id, listed) = match context {
        Context::Incremental {
            session_id, epoch, ..
        } => match sessions.lock().select(*session_id, *epoch, &summary, false) {
            Ok(listed) => (*session_id, listed),
            Err(e) => return session_error_response(ctx, e, *session_id, *epoch),
        },
        _ => (INVALID_SESSION_ID, vec![true; answers.len()]),
    };
    let new_session = match context {
        Context::Full { .. } => {
            let mut cached = OrderedPartitions::default();
            for (t, (_, a)) in targets.iter().zip(&summary) {
                let mut c = CachedPartition::new(t.request);
                c.high_watermark = a.high_watermark;
                c.log_start_offset = a.log_start_offset;
                c.last_stable_offset = a.last_stable_offset;
                cached.insert(t.key.clone(), c);
            }
            Some(cached)
        }
        _ => None,
    };
    for ((w, answer), listed) in wanted.iter().zip(answers).zip(&listed) {
        if *listed {
            topics[w.topic_idx].partitions.push(answer);
        }
    }
    if matches!(context, Context::Incremental { .. }) {
        topics.retain(|t| !t.partitions.is_empty());
    }
    let mut response = encode_fetch_response(
        ctx.header.correlation_id,
        ctx.version,
        FetchResponseData {
            throttle_time_ms: 0,
            error_code: NONE,
            session_id,
            topics,
        },
    );
    if consumer {
        let throttle = quotas::record_fetch(ctx, response.len());
        if !throttle.is_zero() {
            let code = match context {
                Context::Incremental { epoch, .. } => {
                    match sessions.lock().select(session_id, *epoch, &[], false) {
                        Ok(_) => NONE,
                        Err(e) => {
                            return session_error_response(ctx, e, session_id, *epoch);
                        }
                    }
                }
                _ => NONE,
            };
            return quotas::throttled_fetch(ctx, throttle, code, session_id);
        }
    }
    match (context, new_session) {
        (Context::Full { uses_topic_ids }, Some(cached)) => {
            let now = sessions.now_ms();
            let id = sessions
                .lock()
                .maybe_create_session(now, !consumer, *uses_topic_ids, cached);
            if id != INVALID_SESSION_ID {
                encode::set_session_id(&mut response, ctx.version, id);
            }
        }
        (Context::Incremental { epoch, .. }, _) => {
            if let Err(e) = sessions.lock().select(session_id, *epoch, &summary, true) {
                return session_error_response(ctx, e, session_id, *epoch);
            }
        }
        _ => {}
    }
    response
}
