//! The SCRAM server state machine (Kafka's `ScramSaslServer`).
//!
//! ```text
//! AwaitingClientFirst --client-first--> AwaitingClientFinal --client-final--> Completed
//!          \______________________any error_______________________/--> Failed
//! ```
//!
//! Differences from Kafka 3.9, all invisible to a well-behaved client:
//! - An unknown user gets a server-first built from a fake credential (a
//!   salt derived from the user name with a per-process secret, 4096
//!   iterations) and fails at the proof, where Kafka 3.9 fails at once. The
//!   client sees the same generic error either way, one round trip later, and
//!   cannot tell unknown users from wrong passwords.
//! - `c=` must decode to the client-first gs2 header and the client-final
//!   nonce must equal the server-first nonce (RFC 5802); Kafka checks neither
//!   strictly.
//! - `tokenauth=true` (delegation tokens) is refused: Strata has no
//!   delegation tokens, and Kafka refuses an unknown token id the same way.

use std::sync::{Arc, OnceLock};

use aws_lc_rs::{constant_time, hmac};

use super::credential::{random_base36, xor_into};
use super::messages::{self, ClientFirst};
use super::{ScramCredential, ScramMechanism};
use crate::sasl::{CredentialStore, FailureReason, Mechanism, SaslError, SaslServer, Step};

/// Iterations of the fake credential given to unknown users (Kafka's
/// default for `kafka-configs --add-config SCRAM-SHA-256=[password=...]`).
const FAKE_ITERATIONS: i32 = 4096;

/// The SCRAM server of one exchange.
pub(crate) struct ScramServer {
    mechanism: ScramMechanism,
    store: Arc<dyn CredentialStore>,
    /// Fixed server nonce for tests; random otherwise.
    fixed_server_nonce: Option<String>,
    state: State,
}

enum State {
    AwaitingClientFirst,
    AwaitingClientFinal(Box<Pending>),
    Completed,
    Failed,
}

/// What the server remembers between server-first and client-final.
struct Pending {
    client_first: ClientFirst,
    server_first: String,
    /// Client nonce followed by server nonce.
    nonce: String,
    credential: ScramCredential,
    /// False when `credential` is the fake one of an unknown user.
    known_user: bool,
}

impl ScramServer {
    pub(crate) fn new(mechanism: ScramMechanism, store: Arc<dyn CredentialStore>) -> Self {
        ScramServer {
            mechanism,
            store,
            fixed_server_nonce: None,
            state: State::AwaitingClientFirst,
        }
    }

    /// A server whose server nonce is `nonce` (RFC test vectors).
    #[cfg(test)]
    pub(crate) fn with_server_nonce(
        mechanism: ScramMechanism,
        store: Arc<dyn CredentialStore>,
        nonce: &str,
    ) -> Self {
        ScramServer {
            fixed_server_nonce: Some(nonce.to_owned()),
            ..Self::new(mechanism, store)
        }
    }

    fn client_first(&self, token: &[u8]) -> Result<(Vec<u8>, Pending), FailureReason> {
        let client_first = messages::parse_client_first(token)?;
        if client_first.token_auth() {
            return Err(FailureReason::DelegationTokenUnsupported {
                token_id: client_first.user,
            });
        }
        let user = &client_first.user;
        let (credential, known_user) = match self.store.scram_credential(self.mechanism, user) {
            Some(credential) => (credential, true),
            None => (fake_credential(self.mechanism, user)?, false),
        };
        if !client_first.authorization_id.is_empty() && client_first.authorization_id != *user {
            return Err(FailureReason::AuthorizationIdMismatch {
                authorization_id: client_first.authorization_id,
                user: client_first.user,
            });
        }
        if credential.iterations < self.mechanism.min_iterations() {
            return Err(FailureReason::IterationsBelowMinimum {
                user: client_first.user,
                iterations: credential.iterations,
                minimum: self.mechanism.min_iterations(),
            });
        }
        let server_nonce = match &self.fixed_server_nonce {
            Some(nonce) => nonce.clone(),
            None => random_base36().ok_or(FailureReason::RandomUnavailable)?,
        };
        let nonce = format!("{}{server_nonce}", client_first.nonce);
        let server_first = messages::server_first(&nonce, &credential.salt, credential.iterations);
        let challenge = server_first.clone().into_bytes();
        Ok((
            challenge,
            Pending {
                client_first,
                server_first,
                nonce,
                credential,
                known_user,
            },
        ))
    }

    fn client_final(&self, pending: &Pending, token: &[u8]) -> Result<Step, FailureReason> {
        let client_final = messages::parse_client_final(token)?;
        if client_final.nonce != pending.nonce {
            return Err(FailureReason::NonceMismatch);
        }
        if client_final.channel_binding != pending.client_first.gs2_header.as_bytes() {
            return Err(FailureReason::ChannelBindingMismatch);
        }
        let auth_message = format!(
            "{},{},{}",
            pending.client_first.bare, pending.server_first, client_final.without_proof
        );
        let m = self.mechanism;
        let user = pending.client_first.user.clone();
        let credential = &pending.credential;
        // ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); check H(ClientKey) == StoredKey.
        let mut client_key = m.hmac(&credential.stored_key, auth_message.as_bytes());
        let proof_ok = client_final.proof.len() == client_key.len() && {
            xor_into(&mut client_key, &client_final.proof);
            constant_time::verify_slices_are_equal(&m.hash(&client_key), &credential.stored_key)
                .is_ok()
        };
        if !pending.known_user {
            return Err(FailureReason::UnknownUser { user });
        }
        if !proof_ok {
            return Err(FailureReason::InvalidProof { user });
        }
        let signature = m.hmac(&credential.server_key, auth_message.as_bytes());
        Ok(Step::Complete {
            authorization_id: user,
            final_token: messages::server_final(&signature).into_bytes(),
            lifetime_ms: None,
        })
    }
}

/// A credential for a user that does not exist: a salt that is stable for
/// the user (so repeated attempts look like a real account) but unguessable
/// without the per-process secret, and random keys no proof can match.
fn fake_credential(
    mechanism: ScramMechanism,
    user: &str,
) -> Result<ScramCredential, FailureReason> {
    static SECRET: OnceLock<Option<hmac::Key>> = OnceLock::new();
    let key = SECRET
        .get_or_init(|| {
            hmac::Key::generate(hmac::HMAC_SHA256, &aws_lc_rs::rand::SystemRandom::new()).ok()
        })
        .as_ref()
        .ok_or(FailureReason::RandomUnavailable)?;
    let mut input = mechanism.mechanism_name().as_bytes().to_vec();
    input.push(0);
    input.extend_from_slice(user.as_bytes());
    let tag = hmac::sign(key, &input);
    // Same shape as Kafka's salts: the UTF-8 of a base-36 string.
    let salt: String = tag
        .as_ref()
        .iter()
        .take(26)
        .map(|b| char::from(b"0123456789abcdefghijklmnopqrstuvwxyz"[usize::from(b % 36)]))
        .collect();
    let random_key = random_base36().ok_or(FailureReason::RandomUnavailable)?;
    Ok(ScramCredential::from_salted_password(
        mechanism,
        random_key.as_bytes(),
        salt.into_bytes(),
        FAKE_ITERATIONS,
    ))
}

impl SaslServer for ScramServer {
    fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        let state = std::mem::replace(&mut self.state, State::Failed);
        let result = match state {
            State::AwaitingClientFirst => {
                self.client_first(client_token).map(|(challenge, pending)| {
                    self.state = State::AwaitingClientFinal(Box::new(pending));
                    Step::Challenge(challenge)
                })
            }
            State::AwaitingClientFinal(pending) => {
                self.client_final(&pending, client_token).inspect(|_| {
                    self.state = State::Completed;
                })
            }
            State::Completed => {
                self.state = State::Completed;
                Err(FailureReason::UnexpectedToken { state: "completed" })
            }
            State::Failed => Err(FailureReason::UnexpectedToken { state: "failed" }),
        };
        result.map_err(|reason| SaslError::new(self.mechanism.mechanism(), reason))
    }

    fn mechanism(&self) -> Mechanism {
        self.mechanism.mechanism()
    }
}

#[cfg(test)]
mod tests;
