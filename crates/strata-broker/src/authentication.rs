//! The SASL exchange of one connection (Kafka's `SaslServerAuthenticator`),
//! run by the connection before any request reaches the APIs.
//!
//! On a SASL listener a new connection may send ApiVersions, then
//! SaslHandshake naming a mechanism, then SaslAuthenticate requests carrying
//! the mechanism's tokens until the mechanism completes; any other request
//! before that closes the connection, as Kafka does. SaslHandshake v0 (the
//! pre-KIP-152 form) is followed by raw size-prefixed tokens instead.
//! A failed authentication is answered with SASL_AUTHENTICATION_FAILED
//! after `connection.failed.authentication.delay.ms` (doubled per recent
//! failure from the same address) and the connection is closed; the failure
//! is logged with the address and the reason, never a secret.
//!
//! Re-authentication (KIP-368): with `connections.max.reauth.ms` set, the
//! session lifetime goes back in SaslAuthenticate (the smaller of the
//! setting and the credential's own lifetime); the client must re-run the
//! exchange on the same connection before it ends, as the same principal,
//! or its next request closes the connection.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use strata_security::sasl::{self, Mechanism, SaslServer, Step};
use tokio::time::Instant;

use crate::broker::Broker;
use crate::dispatch;
use crate::listener_runtime::ListenerRuntime;
use crate::response::{encode_with, Response};
use crate::security::Session;
use crate::stats::Stats;

/// Kafka's UNSUPPORTED_SASL_MECHANISM.
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// Kafka's ILLEGAL_SASL_STATE.
const ILLEGAL_SASL_STATE: i16 = 34;
/// Kafka's SASL_AUTHENTICATION_FAILED.
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// What the connection does with a frame.
pub(crate) enum Gate {
    /// An authenticated request (or ApiVersions): dispatch it.
    Dispatch,
    /// Answered here; keep reading.
    Answer(Response),
    /// Answer (after a delay) and close the connection.
    AnswerAndClose(Response, Duration),
    /// Close without an answer.
    Close,
}

enum State {
    /// Authenticated, or a listener without SASL.
    Ready,
    /// Waiting for SaslHandshake (ApiVersions allowed).
    AwaitHandshake,
    /// A mechanism is running.
    Exchange {
        server: Box<dyn SaslServer>,
        mechanism: Mechanism,
        /// SaslHandshake v0: tokens arrive as raw frames.
        raw: bool,
        /// Re-authentication of an authenticated session.
        reauth: bool,
    },
}

/// One connection's authentication state.
pub(crate) struct Authenticator {
    runtime: Arc<ListenerRuntime>,
    state: State,
    session: Arc<Session>,
    /// When the session ends without re-authentication.
    expires_at: Option<Instant>,
    /// The mechanism of the first authentication (re-authentication must reuse it).
    mechanism: Option<Mechanism>,
}

impl Authenticator {
    pub(crate) fn new(runtime: Arc<ListenerRuntime>, session: Session) -> Authenticator {
        let state = if runtime.sasl.is_some() {
            State::AwaitHandshake
        } else {
            State::Ready
        };
        Authenticator {
            runtime,
            state,
            session: Arc::new(session),
            expires_at: None,
            mechanism: None,
        }
    }

    /// The session requests run under.
    pub(crate) fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The largest frame accepted now: `sasl.server.max.receive.size` until
    /// the first authentication completes (Kafka's limit on unauthenticated
    /// peers), `socket.request.max.bytes` after.
    pub(crate) fn max_frame(&self, normal: usize) -> usize {
        if self.mechanism.is_none() && self.runtime.sasl.is_some() {
            normal.min(self.runtime.sasl_max_receive_size)
        } else {
            normal
        }
    }

    /// Decide what happens to `frame`.
    pub(crate) fn gate(&mut self, broker: &Arc<Broker>, frame: &Bytes) -> Gate {
        if let State::Exchange { raw: true, .. } = self.state {
            return self.raw_token(broker, frame);
        }
        let Some(api) = frame
            .get(..2)
            .and_then(|b| ApiKey::try_from(i16::from_be_bytes([b[0], b[1]])).ok())
        else {
            return Gate::Dispatch; // dispatch reports the bad frame
        };
        let Some(sasl) = &self.runtime.sasl else {
            return Gate::Dispatch; // not a SASL listener: the APIs answer ILLEGAL_SASL_STATE
        };
        let _ = sasl;
        match (&self.state, api) {
            (State::Ready, ApiKey::SaslHandshake) => self.handshake(broker, frame, true),
            (State::Ready, _) => {
                if self.expires_at.is_some_and(|at| Instant::now() >= at) {
                    tracing::info!(peer = ?self.session.peer, principal = %self.session.principal,
                        "closing connection: its SASL session expired without re-authentication (connections.max.reauth.ms)");
                    return Gate::Close;
                }
                Gate::Dispatch
            }
            (State::AwaitHandshake, ApiKey::ApiVersions) => Gate::Dispatch,
            (State::AwaitHandshake, ApiKey::SaslHandshake) => self.handshake(broker, frame, false),
            (State::Exchange { .. }, ApiKey::SaslAuthenticate) => self.authenticate(broker, frame),
            (_, api) => {
                tracing::warn!(peer = ?self.session.peer, listener = %self.session.listener, ?api,
                    "closing connection: request before SASL authentication completed");
                Gate::Close
            }
        }
    }

    fn handshake(&mut self, broker: &Arc<Broker>, frame: &Bytes, reauth: bool) -> Gate {
        let Ok((header, RequestKind::SaslHandshake(req))) = dispatch::decode_request(frame.clone())
        else {
            return Gate::Close;
        };
        let version = header.request_api_version;
        let sasl = self
            .runtime
            .sasl
            .as_ref()
            .expect("handshake on a SASL listener");
        let mut resp = SaslHandshakeResponse::default();
        resp.mechanisms = sasl
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        let wanted = req.mechanism.as_str().parse::<Mechanism>().ok();
        let chosen = wanted
            .filter(|m| sasl.mechanisms.contains(m) && (!reauth || self.mechanism == Some(*m)));
        let Some(mechanism) = chosen else {
            resp.error_code = if reauth && wanted.is_some() {
                ILLEGAL_SASL_STATE
            } else {
                UNSUPPORTED_SASL_MECHANISM
            };
            Stats::add(&broker.stats.authentication_failures, 1);
            tracing::warn!(peer = ?self.session.peer, listener = %self.session.listener,
                mechanism = %req.mechanism.as_str(), reauth, "SASL handshake refused: mechanism not enabled on this listener");
            return match encode_with(header.correlation_id, ApiKey::SaslHandshake, version, &resp) {
                Ok(bytes) => Gate::AnswerAndClose(Response::from_bytes(bytes), Duration::ZERO),
                Err(_) => Gate::Close,
            };
        };
        let server = sasl::new_server(mechanism, sasl.credentials.clone(), &sasl.oauth);
        self.state = State::Exchange {
            server,
            mechanism,
            raw: version == 0,
            reauth,
        };
        match encode_with(header.correlation_id, ApiKey::SaslHandshake, version, &resp) {
            Ok(bytes) => Gate::Answer(Response::from_bytes(bytes)),
            Err(_) => Gate::Close,
        }
    }

    fn authenticate(&mut self, broker: &Arc<Broker>, frame: &Bytes) -> Gate {
        let Ok((header, RequestKind::SaslAuthenticate(req))) =
            dispatch::decode_request(frame.clone())
        else {
            return Gate::Close;
        };
        let version = header.request_api_version;
        let encode = |resp: &SaslAuthenticateResponse| {
            encode_with(
                header.correlation_id,
                ApiKey::SaslAuthenticate,
                version,
                resp,
            )
            .map(Response::from_bytes)
        };
        let mut resp = SaslAuthenticateResponse::default();
        match self.step(broker, &req.auth_bytes) {
            Ok((token, lifetime_ms)) => {
                resp.auth_bytes = Bytes::from(token);
                resp.session_lifetime_ms = lifetime_ms;
                match encode(&resp) {
                    Ok(r) => Gate::Answer(r),
                    Err(_) => Gate::Close,
                }
            }
            Err(failure) => {
                resp.error_code = SASL_AUTHENTICATION_FAILED;
                resp.error_message = Some(StrBytes::from_string(failure.client_message));
                match encode(&resp) {
                    Ok(r) => Gate::AnswerAndClose(r, failure.delay),
                    Err(_) => Gate::Close,
                }
            }
        }
    }

    /// SaslHandshake v0: the frame is a raw token, answered raw.
    fn raw_token(&mut self, broker: &Arc<Broker>, frame: &Bytes) -> Gate {
        match self.step(broker, frame) {
            Ok((token, _)) => {
                let mut out = BytesMut::with_capacity(4 + token.len());
                out.put_i32(token.len() as i32);
                out.extend_from_slice(&token);
                Gate::Answer(Response::from_bytes(out.freeze()))
            }
            Err(_) => Gate::Close, // v0 has no error response: Kafka closes too
        }
    }

    /// Feed a token to the running mechanism. `Ok((answer, session
    /// lifetime ms))`; the lifetime is 0 until the exchange completes.
    fn step(&mut self, broker: &Arc<Broker>, token: &[u8]) -> Result<(Vec<u8>, i64), Failure> {
        let State::Exchange {
            server,
            mechanism,
            reauth,
            ..
        } = &mut self.state
        else {
            return Err(self.fail(broker, "no SASL exchange running".into(), None));
        };
        let (mechanism, reauth) = (*mechanism, *reauth);
        match server.step(token) {
            Ok(Step::Challenge(challenge)) => Ok((challenge, 0)),
            Ok(Step::Complete {
                authorization_id,
                final_token,
                lifetime_ms,
            }) => {
                let principal = format!("User:{authorization_id}");
                if reauth && principal != self.session.principal {
                    let message = format!(
                        "Cannot change principals during re-authentication from {}: {principal}",
                        self.session.principal
                    );
                    return Err(self.fail(broker, message.clone(), Some(message)));
                }
                let max_reauth_ms = self.runtime.sasl.as_ref().map_or(0, |s| s.max_reauth_ms);
                let session_ms = session_lifetime_ms(max_reauth_ms, lifetime_ms, now_ms());
                self.expires_at = (session_ms > 0)
                    .then(|| Instant::now() + Duration::from_millis(session_ms as u64));
                self.session = Arc::new(Session {
                    principal: principal.clone(),
                    ..(*self.session).clone()
                });
                self.mechanism = Some(mechanism);
                self.state = State::Ready;
                self.runtime
                    .failures
                    .clear(self.session.peer.map(|p| p.ip()));
                Stats::add(&broker.stats.authentications, 1);
                tracing::debug!(peer = ?self.session.peer, listener = %self.session.listener,
                    %principal, %mechanism, reauth, session_ms, "SASL authentication succeeded");
                Ok((final_token, session_ms))
            }
            Err(error) => {
                let client = error.client_message();
                Err(self.fail(broker, error.to_string(), Some(client)))
            }
        }
    }

    fn fail(&mut self, broker: &Arc<Broker>, detail: String, client: Option<String>) -> Failure {
        Stats::add(&broker.stats.authentication_failures, 1);
        let delay = self.runtime.failures.record(
            self.session.peer.map(|p| p.ip()),
            self.runtime.failure_delay,
        );
        tracing::warn!(peer = ?self.session.peer, listener = %self.session.listener,
            reason = %detail, delay_ms = delay.as_millis() as u64, "SASL authentication failed");
        self.state = State::AwaitHandshake;
        Failure {
            client_message: client.unwrap_or_else(|| "Authentication failed".into()),
            delay,
        }
    }
}

/// A failed step: what the client is told and when.
struct Failure {
    client_message: String,
    delay: Duration,
}

/// KIP-368's session lifetime: 0 without `connections.max.reauth.ms`;
/// otherwise the setting, shortened to the credential's own remaining
/// lifetime (an OAUTHBEARER token's `exp`).
fn session_lifetime_ms(max_reauth_ms: i64, credential_expiry_ms: Option<i64>, now_ms: i64) -> i64 {
    if max_reauth_ms <= 0 {
        return 0;
    }
    match credential_expiry_ms {
        Some(expiry) => max_reauth_ms.min((expiry - now_ms).max(1)),
        None => max_reauth_ms,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_lifetime_follows_kip_368() {
        assert_eq!(session_lifetime_ms(0, Some(10_000), 0), 0);
        assert_eq!(session_lifetime_ms(60_000, None, 0), 60_000);
        assert_eq!(session_lifetime_ms(60_000, Some(5_000), 1_000), 4_000);
        assert_eq!(session_lifetime_ms(60_000, Some(500_000), 1_000), 60_000);
        assert_eq!(session_lifetime_ms(60_000, Some(500), 1_000), 1);
    }
}
