//! The one error type of a SASL exchange step.
//!
//! Kafka distinguishes two kinds of failure (`SaslServerAuthenticator`):
//! a `SaslAuthenticationException`, whose message goes to the client as is,
//! and any other `SaslException`, for which the client only learns
//! "Authentication failed during authentication due to invalid credentials
//! with SASL mechanism <M>" so that nothing (such as whether a user exists)
//! leaks. [`FailureReason::is_explicit`] tells them apart.

use super::oauthbearer::TokenRejection;
use super::Mechanism;

/// A failed SASL exchange: which mechanism, and why.
///
/// `Display` is the detail for the broker log (user names may appear, never
/// passwords, keys or tokens); [`SaslError::client_message`] is the text for
/// `SaslAuthenticateResponse.error_message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("SASL/{mechanism} authentication failed: {reason}")]
pub struct SaslError {
    /// The mechanism of the exchange.
    pub mechanism: Mechanism,
    /// What went wrong.
    pub reason: FailureReason,
}

/// Why an exchange failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FailureReason {
    /// PLAIN: the token did not split into `authzid NUL authcid NUL passwd`.
    #[error("PLAIN response has {tokens} NUL-separated fields, expected 3")]
    PlainMalformed {
        /// How many fields were found (Kafka stops counting at 4).
        tokens: usize,
    },
    /// PLAIN: empty user name.
    #[error("no user name given")]
    UsernameNotSpecified,
    /// PLAIN: empty password.
    #[error("no password given for user {user:?}")]
    PasswordNotSpecified {
        /// The user name given.
        user: String,
    },
    /// PLAIN: unknown user or wrong password (the client is not told which).
    #[error("invalid password for user {user:?} (known user: {known_user})")]
    InvalidUsernameOrPassword {
        /// The user name given.
        user: String,
        /// Whether the user exists (for the log only).
        known_user: bool,
    },
    /// The client asked to act as someone other than whom it authenticated as.
    #[error("authorization id {authorization_id:?} differs from authenticated user {user:?}")]
    AuthorizationIdMismatch {
        /// The authorization id the client asked for.
        authorization_id: String,
        /// The authenticated user (or the token's principal).
        user: String,
    },
    /// SCRAM: a message does not follow the grammar.
    #[error("malformed SCRAM {message}: {detail}")]
    MalformedScramMessage {
        /// Which message (`client-first`, `client-final`).
        message: &'static str,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// SCRAM: the client asked for channel binding (`p=` or `y` gs2 flag),
    /// which Kafka does not offer.
    #[error("client requested channel binding, which is not supported")]
    ChannelBindingUnsupported,
    /// SCRAM: `c=` in client-final is not the base64 of the client-first gs2 header.
    #[error("channel binding data in client-final does not match the gs2 header")]
    ChannelBindingMismatch,
    /// SCRAM: the client asked for delegation-token authentication
    /// (`tokenauth=true`), which Strata does not support.
    #[error("delegation token authentication requested for token id {token_id:?}, not supported")]
    DelegationTokenUnsupported {
        /// The token id the client gave as user name.
        token_id: String,
    },
    /// SCRAM: the stored credential has fewer iterations than the mechanism's minimum.
    #[error(
        "credential of user {user:?} has {iterations} iterations, below the minimum {minimum}"
    )]
    IterationsBelowMinimum {
        /// The user.
        user: String,
        /// The credential's iteration count.
        iterations: i32,
        /// The mechanism's minimum.
        minimum: i32,
    },
    /// SCRAM: the nonce in client-final is not the one of server-first.
    #[error("client-final nonce does not match the server-first nonce")]
    NonceMismatch,
    /// SCRAM: the user does not exist; the exchange ran with a fake
    /// credential up to the proof so the client could not tell.
    #[error("unknown user {user:?}")]
    UnknownUser {
        /// The user name given.
        user: String,
    },
    /// SCRAM: the client proof is wrong (wrong password).
    #[error("invalid client proof for user {user:?}")]
    InvalidProof {
        /// The user.
        user: String,
    },
    /// OAUTHBEARER: the client initial response does not follow RFC 7628.
    #[error("malformed OAUTHBEARER client initial response: {detail}")]
    MalformedOAuthBearerResponse {
        /// What is wrong with it.
        detail: &'static str,
    },
    /// OAUTHBEARER: the token was rejected; the client was sent the JSON
    /// error and acknowledged it with `0x01`.
    #[error("token rejected: {0}")]
    TokenRejected(TokenRejection),
    /// The system random generator failed (server nonce or fake salt).
    #[error("the system random generator failed")]
    RandomUnavailable,
    /// A token arrived after the exchange had completed or failed.
    #[error("unexpected SASL token after the exchange {state}")]
    UnexpectedToken {
        /// `completed` or `failed`.
        state: &'static str,
    },
}

impl FailureReason {
    /// Whether Kafka tells the client this reason (a
    /// `SaslAuthenticationException`) rather than its generic message.
    pub fn is_explicit(&self) -> bool {
        matches!(
            self,
            FailureReason::PlainMalformed { .. }
                | FailureReason::UsernameNotSpecified
                | FailureReason::PasswordNotSpecified { .. }
                | FailureReason::InvalidUsernameOrPassword { .. }
                | FailureReason::AuthorizationIdMismatch { .. }
                | FailureReason::TokenRejected(_)
        )
    }
}

impl SaslError {
    pub(crate) fn new(mechanism: Mechanism, reason: FailureReason) -> Self {
        SaslError { mechanism, reason }
    }

    /// What Kafka puts in `SaslAuthenticateResponse.error_message` (error
    /// code `SASL_AUTHENTICATION_FAILED`) for a first authentication.
    pub fn client_message(&self) -> String {
        self.message_for("authentication")
    }

    /// The same message for a KIP-152 re-authentication, where Kafka's
    /// generic text says "re-authentication".
    pub fn reauthentication_client_message(&self) -> String {
        self.message_for("re-authentication")
    }

    fn message_for(&self, phase: &str) -> String {
        match &self.reason {
            FailureReason::PlainMalformed { tokens } => {
                format!("Invalid SASL/PLAIN response: expected 3 tokens, got {tokens}")
            }
            FailureReason::UsernameNotSpecified => {
                "Authentication failed: username not specified".to_owned()
            }
            FailureReason::PasswordNotSpecified { .. } => {
                "Authentication failed: password not specified".to_owned()
            }
            FailureReason::InvalidUsernameOrPassword { .. } => {
                "Authentication failed: Invalid username or password".to_owned()
            }
            FailureReason::AuthorizationIdMismatch { authorization_id, user } => {
                if self.mechanism == Mechanism::OAuthBearer {
                    format!(
                        "Authentication failed: Client requested an authorization id ({authorization_id}) \
                         that is different from the token's principal name ({user})"
                    )
                } else {
                    "Authentication failed: Client requested an authorization id that is different from username"
                        .to_owned()
                }
            }
            FailureReason::TokenRejected(rejection) => rejection.to_json(),
            _ => format!(
                "Authentication failed during {phase} due to invalid credentials with SASL mechanism {}",
                self.mechanism
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_message_names_the_mechanism_and_hides_the_reason() {
        let err = SaslError::new(
            Mechanism::ScramSha256,
            FailureReason::UnknownUser { user: "bob".into() },
        );
        assert_eq!(
            err.client_message(),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
        assert_eq!(
            err.reauthentication_client_message(),
            "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
        assert!(err.to_string().contains("unknown user"));
    }

    #[test]
    fn authorization_id_message_depends_on_mechanism() {
        let reason = FailureReason::AuthorizationIdMismatch {
            authorization_id: "admin".into(),
            user: "alice".into(),
        };
        let plain = SaslError::new(Mechanism::Plain, reason.clone());
        assert_eq!(
            plain.client_message(),
            "Authentication failed: Client requested an authorization id that is different from username"
        );
        let oauth = SaslError::new(Mechanism::OAuthBearer, reason);
        assert_eq!(
            oauth.client_message(),
            "Authentication failed: Client requested an authorization id (admin) that is different from the token's principal name (alice)"
        );
    }
}
