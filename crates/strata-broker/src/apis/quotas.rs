//! Client quotas on the request path (Kafka's ClientQuotaManager): a
//! Produce request's size and a consumer Fetch response's size are recorded
//! against the (user, client-id) quota that applies (precedence and rates
//! are `strata_security::quota`'s); over the quota, the response carries
//! `throttle_time_ms` and the connection is muted for as long (KIP-219). A
//! throttled fetch answers no data and its bytes are un-recorded, as Kafka
//! does, so a throttled consumer is not charged for what it did not get.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use strata_security::quota::QuotaType;

use super::fetch::{encode_fetch_response, FetchResponseData};
use super::RequestContext;
use crate::response::Response;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The quota user of a principal: its name (`User:alice` -> `alice`).
fn user_of(ctx: &RequestContext) -> &str {
    let p = ctx.session.principal.as_str();
    p.split_once(':').map_or(p, |(_, name)| name)
}

fn client_id_of(ctx: &RequestContext) -> &str {
    ctx.header.client_id.as_ref().map_or("", |c| c.as_str())
}

fn record(ctx: &RequestContext, t: QuotaType, bytes: u64) -> Duration {
    let state = ctx.broker.security.snapshot();
    if state.quotas.is_empty() {
        return Duration::ZERO;
    }
    let mut sensors = ctx
        .broker
        .quota_sensors
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let ms = sensors.record(
        &state.quotas,
        t,
        user_of(ctx),
        client_id_of(ctx),
        bytes as f64,
        now_ms(),
    );
    Duration::from_millis(ms.max(0) as u64)
}

/// Record a Produce request of `size` bytes; the throttle it earned.
pub(super) fn record_produce(ctx: &RequestContext, size: usize) -> Duration {
    record(ctx, QuotaType::Produce, size as u64)
}

/// Record a consumer's Fetch response of `size` bytes. Over the quota it
/// is un-recorded and the throttle returned: the caller then answers
/// [`throttled_fetch`] instead (Kafka's `getThrottledResponse`).
pub(super) fn record_fetch(ctx: &RequestContext, size: u64) -> Duration {
    let throttle = record(ctx, QuotaType::Fetch, size);
    if throttle.is_zero() {
        return throttle;
    }
    let state = ctx.broker.security.snapshot();
    let mut sensors = ctx
        .broker
        .quota_sensors
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    sensors.unrecord(
        &state.quotas,
        QuotaType::Fetch,
        user_of(ctx),
        client_id_of(ctx),
        size as f64,
        now_ms(),
    );
    throttle
}

/// The empty answer of a throttled Fetch; an incremental session keeps its
/// id (KAFKA-6946), `error_code` says whether its epoch still holds.
pub(super) fn throttled_fetch(
    ctx: &RequestContext,
    throttle: Duration,
    error_code: i16,
    session_id: i32,
) -> Response {
    let mut throttled = encode_fetch_response(
        ctx.header.correlation_id,
        ctx.version,
        FetchResponseData {
            throttle_time_ms: i32::try_from(throttle.as_millis()).unwrap_or(i32::MAX),
            error_code,
            session_id,
            topics: Vec::new(),
        },
    );
    throttled.throttle = throttle;
    throttled
}
