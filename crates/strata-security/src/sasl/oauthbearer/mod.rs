//! OAUTHBEARER (RFC 7628) as Kafka's `OAuthBearerSaslServer` runs it, and the
//! token validators it can use.
//!
//! The exchange: the client's initial response carries `auth=Bearer <token>`.
//! A valid token completes the exchange with an empty answer and the token's
//! expiry as the credential lifetime (KIP-368). A rejected token does *not*
//! fail yet: the server answers with a JSON error challenge
//! (`{"status":"invalid_token"}`, or `insufficient_scope` with the required
//! scope), the client acknowledges with the single byte `0x01`, and only then
//! does the exchange fail, with that JSON as the client message.
//!
//! - `initial_response`: the client initial response grammar
//!   (`OAuthBearerClientInitialResponse`).
//! - `jwt`: compact-serialization splitting and claim access shared by the
//!   validators.
//! - `unsecured`: Kafka's default, `OAuthBearerUnsecuredValidatorCallbackHandler`
//!   (alg `none` tokens; for development only).
//! - `jwks`: RS256/ES256-signed JWTs checked against a JWK set, as Kafka's
//!   `OAuthBearerValidatorCallbackHandler` does.

mod initial_response;
mod jwks;
mod jwt;
mod unsecured;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

pub use jwks::{JwksConfig, JwksError, JwksValidator};
pub use unsecured::{OAuthConfigError, UnsecuredValidatorConfig};

use super::{Clock, FailureReason, Mechanism, SaslError, SaslServer, Step};

/// A token that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedToken {
    /// The principal name (from the configured principal/sub claim).
    pub principal: String,
    /// Expiry in epoch milliseconds.
    pub lifetime_ms: i64,
    /// Issued-at in epoch milliseconds, if the token has one.
    pub start_time_ms: Option<i64>,
    /// The token's scope.
    pub scope: BTreeSet<String>,
}

/// Why a token was rejected: the RFC 7628 status sent to the client, and a
/// reason for the broker log (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {reason}")]
pub struct TokenRejection {
    /// What the client is told.
    pub status: RejectionStatus,
    /// Why, for the log.
    pub reason: String,
}

/// The RFC 7628 section 3.2.2 error status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectionStatus {
    /// `invalid_token`.
    InvalidToken,
    /// `insufficient_scope`; `scope` is the required scope as Kafka renders it
    /// (a Java list, `[a, b]`).
    InsufficientScope {
        /// The required scope.
        scope: String,
    },
}

impl fmt::Display for RejectionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectionStatus::InvalidToken => f.write_str("invalid_token"),
            RejectionStatus::InsufficientScope { .. } => f.write_str("insufficient_scope"),
        }
    }
}

impl TokenRejection {
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        TokenRejection {
            status: RejectionStatus::InvalidToken,
            reason: reason.into(),
        }
    }

    /// The JSON error challenge, byte for byte as Kafka writes it
    /// (`{"status":"insufficient_scope", "scope":"[a]"}`, with that space).
    pub fn to_json(&self) -> String {
        match &self.status {
            RejectionStatus::InvalidToken => r#"{"status":"invalid_token"}"#.to_owned(),
            RejectionStatus::InsufficientScope { scope } => format!(
                r#"{{"status":"insufficient_scope", "scope":"{}"}}"#,
                json_escape(scope)
            ),
        }
    }
}

/// Escapes `"` and `\` (Kafka does not escape; valid scope items never
/// contain either, so the output is the same for them).
fn json_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Validates OAUTHBEARER tokens.
pub trait TokenValidator: Send + Sync {
    /// Checks `token` (the compact serialization after `Bearer `).
    ///
    /// # Errors
    /// The rejection to send back to the client.
    fn validate(&self, token: &str) -> Result<ValidatedToken, TokenRejection>;
}

/// The validator an OAUTHBEARER listener uses; cheap to clone.
#[derive(Clone)]
pub struct OAuthBearerValidator {
    inner: Arc<dyn TokenValidator>,
}

impl OAuthBearerValidator {
    /// Kafka's default: unsecured (alg `none`) tokens, checked per `config`
    /// against `clock`.
    pub fn unsecured(config: UnsecuredValidatorConfig, clock: Arc<dyn Clock>) -> Self {
        Self::custom(Arc::new(unsecured::UnsecuredValidator::new(config, clock)))
    }

    /// Signed JWTs checked against a JWK set.
    pub fn jwks(validator: Arc<JwksValidator>) -> Self {
        Self::custom(validator)
    }

    /// Any other validator.
    pub fn custom(validator: Arc<dyn TokenValidator>) -> Self {
        OAuthBearerValidator { inner: validator }
    }

    /// Checks one token.
    ///
    /// # Errors
    /// The rejection to send back to the client.
    pub fn validate(&self, token: &str) -> Result<ValidatedToken, TokenRejection> {
        self.inner.validate(token)
    }
}

impl fmt::Debug for OAuthBearerValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBearerValidator")
            .finish_non_exhaustive()
    }
}

/// The OAUTHBEARER server of one exchange.
pub(crate) struct OAuthBearerServer {
    validator: OAuthBearerValidator,
    state: State,
}

enum State {
    /// Waiting for an initial response; `Some` once an error challenge was
    /// sent and the client's `0x01` acknowledgement would fail the exchange.
    AwaitingResponse(Option<TokenRejection>),
    Completed,
    Failed,
}

/// The byte a client sends to acknowledge an error challenge.
const CONTROL_A: u8 = 0x01;

impl OAuthBearerServer {
    pub(crate) fn new(validator: OAuthBearerValidator) -> Self {
        OAuthBearerServer {
            validator,
            state: State::AwaitingResponse(None),
        }
    }

    fn respond(
        &mut self,
        token: &[u8],
        pending: Option<TokenRejection>,
    ) -> Result<Step, FailureReason> {
        if let (Some(rejection), [CONTROL_A]) = (&pending, token) {
            return Err(FailureReason::TokenRejected(rejection.clone()));
        }
        let response = initial_response::parse(token)?;
        let validated = match self.validator.validate(&response.token) {
            Ok(validated) => validated,
            Err(rejection) => {
                let challenge = rejection.to_json().into_bytes();
                self.state = State::AwaitingResponse(Some(rejection));
                return Ok(Step::Challenge(challenge));
            }
        };
        if !response.authorization_id.is_empty() && response.authorization_id != validated.principal
        {
            return Err(FailureReason::AuthorizationIdMismatch {
                authorization_id: response.authorization_id,
                user: validated.principal,
            });
        }
        self.state = State::Completed;
        Ok(Step::Complete {
            authorization_id: validated.principal,
            final_token: Vec::new(),
            lifetime_ms: Some(validated.lifetime_ms),
        })
    }
}

impl SaslServer for OAuthBearerServer {
    fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        let result = match std::mem::replace(&mut self.state, State::Failed) {
            State::AwaitingResponse(pending) => self.respond(client_token, pending),
            State::Completed => {
                self.state = State::Completed;
                Err(FailureReason::UnexpectedToken { state: "completed" })
            }
            State::Failed => Err(FailureReason::UnexpectedToken { state: "failed" }),
        };
        result.map_err(|reason| SaslError::new(Mechanism::OAuthBearer, reason))
    }

    fn mechanism(&self) -> Mechanism {
        Mechanism::OAuthBearer
    }
}

#[cfg(test)]
mod tests;
