//! The request logger (Kafka's `kafka.request.logger`): one DEBUG line per
//! completed request on target `kafka.request.logger`, naming the API and
//! version, correlation and client ids, principal, listener, client
//! address, total time and response size.
//!
//! Only header fields and the session are logged, never a request body:
//! bodies carry secrets (SASL/SCRAM credentials, delegation tokens,
//! `AlterConfigs` passwords). Enable it with
//! `RUST_LOG=info,kafka.request.logger=debug`.

use std::time::Duration;

use kafka_protocol::messages::ApiKey;

use crate::apis::RequestContext;

/// The `tracing` target of the request logger (Kafka's logger name).
pub(crate) const TARGET: &str = "kafka.request.logger";

/// What a request's log line says about it, taken before the handler
/// consumes the request.
pub(crate) struct RequestLine {
    /// Its Debug text is Kafka's API name (`Produce`, `Fetch`, ...).
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: String,
    principal: String,
    listener: String,
    client_address: String,
}

impl RequestLine {
    /// The line's fields for `ctx`, or `None` when the request logger is
    /// off (nothing is copied then).
    pub(crate) fn of(ctx: &RequestContext) -> Option<RequestLine> {
        if !tracing::enabled!(target: TARGET, tracing::Level::DEBUG) {
            return None;
        }
        Some(RequestLine {
            api: ctx.api,
            version: ctx.version,
            correlation_id: ctx.header.correlation_id,
            client_id: ctx
                .header
                .client_id
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default(),
            principal: ctx.session.principal.clone(),
            listener: ctx.session.listener.clone(),
            client_address: ctx
                .peer
                .map(|p| p.to_string())
                .unwrap_or_else(|| "unknown".to_string()),
        })
    }

    /// Log the completed request: `total` time from decode to response
    /// built, `response_bytes` of the frame (0 when none is sent, as for
    /// `acks=0`), and whether the handler failed.
    pub(crate) fn completed(&self, total: Duration, response_bytes: u64, failed: bool) {
        tracing::debug!(
            target: TARGET,
            api = ?self.api,
            version = self.version,
            correlation_id = self.correlation_id,
            client_id = %self.client_id,
            principal = %self.principal,
            listener = %self.listener,
            client_address = %self.client_address,
            total_time_ms = total_ms(total),
            response_size = response_bytes,
            failed,
            "Completed request {:?} v{} from {}",
            self.api,
            self.version,
            self.client_address,
        );
    }
}

/// Milliseconds with a fraction, as Kafka's `totalTimeMs`.
fn total_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apis_are_named_as_kafka_names_them() {
        // The line shows the key's Debug text: it must stay Kafka's name.
        assert_eq!(format!("{:?}", ApiKey::Produce), "Produce");
        assert_eq!(
            format!("{:?}", ApiKey::SaslAuthenticate),
            "SaslAuthenticate"
        );
    }

    #[test]
    fn total_time_keeps_the_fraction() {
        assert_eq!(total_ms(Duration::from_micros(1500)), 1.5);
        assert_eq!(total_ms(Duration::ZERO), 0.0);
    }
}
