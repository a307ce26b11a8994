//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` does it.
//!
//! One client token, `[authzid] NUL authcid NUL passwd`, answered with an
//! empty token on success. Checks, in Kafka's order: exactly three fields
//! (Kafka counts at most four), non-empty user name, non-empty password, the
//! password (unknown user and wrong password give the same message), then the
//! authorization id, which must be empty or the user name.

use std::sync::Arc;

use super::{CredentialStore, FailureReason, Mechanism, SaslError, SaslServer, Step};

/// The PLAIN server of one exchange.
pub(crate) struct PlainServer {
    store: Arc<dyn CredentialStore>,
    state: State,
}

#[derive(Clone, Copy)]
enum State {
    AwaitingResponse,
    Completed,
    Failed,
}

impl PlainServer {
    pub(crate) fn new(store: Arc<dyn CredentialStore>) -> Self {
        PlainServer {
            store,
            state: State::AwaitingResponse,
        }
    }

    fn authenticate(&self, token: &[u8]) -> Result<Step, FailureReason> {
        let fields = split_fields(token);
        let [authzid, user, password] = fields.as_slice() else {
            return Err(FailureReason::PlainMalformed {
                tokens: fields.len(),
            });
        };
        // Kafka decodes the whole response as UTF-8 with replacement; a user
        // name with invalid bytes then simply matches no user.
        let authzid = String::from_utf8_lossy(authzid);
        let user = String::from_utf8_lossy(user).into_owned();
        if user.is_empty() {
            return Err(FailureReason::UsernameNotSpecified);
        }
        if password.is_empty() {
            return Err(FailureReason::PasswordNotSpecified { user });
        }
        match self.store.plain_password_matches(&user, password) {
            Some(true) => {}
            Some(false) => {
                return Err(FailureReason::InvalidUsernameOrPassword {
                    user,
                    known_user: true,
                })
            }
            None => {
                return Err(FailureReason::InvalidUsernameOrPassword {
                    user,
                    known_user: false,
                })
            }
        }
        if !authzid.is_empty() && authzid != user {
            return Err(FailureReason::AuthorizationIdMismatch {
                authorization_id: authzid.into_owned(),
                user,
            });
        }
        Ok(Step::Complete {
            authorization_id: user,
            final_token: Vec::new(),
            lifetime_ms: None,
        })
    }
}

/// Splits on NUL like Kafka's `extractTokens`: at most four fields, the
/// fourth holding whatever follows the third NUL.
fn split_fields(token: &[u8]) -> Vec<&[u8]> {
    let mut fields = Vec::with_capacity(4);
    let mut rest = token;
    while fields.len() < 4 {
        match rest.iter().position(|&b| b == 0) {
            Some(nul) => {
                fields.push(&rest[..nul]);
                rest = &rest[nul + 1..];
            }
            None => {
                fields.push(rest);
                break;
            }
        }
    }
    fields
}

impl SaslServer for PlainServer {
    fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError> {
        let result = match self.state {
            State::AwaitingResponse => self.authenticate(client_token),
            State::Completed => Err(FailureReason::UnexpectedToken { state: "completed" }),
            State::Failed => Err(FailureReason::UnexpectedToken { state: "failed" }),
        };
        self.state = if result.is_ok() {
            State::Completed
        } else {
            State::Failed
        };
        result.map_err(|reason| SaslError::new(Mechanism::Plain, reason))
    }

    fn mechanism(&self) -> Mechanism {
        Mechanism::Plain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::{ScramCredential, ScramMechanism};

    /// Kafka's `PlainSaslServerTest` users.
    struct Users;

    impl CredentialStore for Users {
        fn plain_password_matches(&self, user: &str, password: &[u8]) -> Option<bool> {
            let expected: &[u8] = match user {
                "userA" => b"passwordA",
                "userB" => b"passwordB",
                _ => return None,
            };
            Some(expected == password)
        }

        fn scram_credential(&self, _: ScramMechanism, _: &str) -> Option<ScramCredential> {
            None
        }
    }

    fn step(token: &[u8]) -> Result<Step, SaslError> {
        PlainServer::new(Arc::new(Users)).step(token)
    }

    fn client_message(token: &[u8]) -> String {
        match step(token) {
            Ok(ok) => panic!("expected failure, got {ok:?}"),
            Err(err) => err.client_message(),
        }
    }

    #[test]
    fn no_authorization_id_authenticates() {
        let out = step(b"\0userA\0passwordA").unwrap();
        assert_eq!(
            out,
            Step::Complete {
                authorization_id: "userA".into(),
                final_token: vec![],
                lifetime_ms: None
            }
        );
    }

    #[test]
    fn authorization_id_equal_to_user_authenticates() {
        assert!(matches!(
            step(b"userA\0userA\0passwordA"),
            Ok(Step::Complete { .. })
        ));
    }

    #[test]
    fn authorization_id_different_from_user_fails() {
        assert_eq!(
            client_message(b"userB\0userA\0passwordA"),
            "Authentication failed: Client requested an authorization id that is different from username"
        );
    }

    #[test]
    fn wrong_password_and_unknown_user_look_the_same() {
        let expected = "Authentication failed: Invalid username or password";
        assert_eq!(client_message(b"\0userA\0passwordB"), expected);
        assert_eq!(client_message(b"\0nobody\0passwordA"), expected);
        let err = step(b"\0nobody\0passwordA").unwrap_err();
        assert_eq!(
            err.reason,
            FailureReason::InvalidUsernameOrPassword {
                user: "nobody".into(),
                known_user: false
            }
        );
        assert!(!err.to_string().contains("passwordA"));
    }

    #[test]
    fn empty_fields_are_named() {
        assert_eq!(
            client_message(b"\0\0passwordA"),
            "Authentication failed: username not specified"
        );
        assert_eq!(
            client_message(b"\0userA\0"),
            "Authentication failed: password not specified"
        );
    }

    #[test]
    fn field_count_is_checked_like_kafka() {
        assert_eq!(
            client_message(b"userA\0passwordA"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 2"
        );
        assert_eq!(
            client_message(b""),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        );
        assert_eq!(
            client_message(b"a\0userA\0passwordA\0x\0y"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 4"
        );
    }

    #[test]
    fn a_second_token_is_refused() {
        let mut server = PlainServer::new(Arc::new(Users));
        server.step(b"\0userA\0passwordA").unwrap();
        let err = server.step(b"\0userA\0passwordA").unwrap_err();
        assert_eq!(
            err.reason,
            FailureReason::UnexpectedToken { state: "completed" }
        );
    }
}
