//! The server side of Kafka's SASL mechanisms, as pure state machines.
//!
//! The broker drives one [`SaslServer`] per connection: it creates it with
//! [`new_server`] once `SaslHandshake` names an enabled mechanism, feeds every
//! `SaslAuthenticate.auth_bytes` to [`SaslServer::step`] and sends back what
//! the step returns. Nothing here touches sockets, clocks or stores directly:
//! credentials come from a [`CredentialStore`], time from a [`Clock`].
//!
//! Behaviour follows Kafka 3.9 (`PlainSaslServer`, `ScramSaslServer`,
//! `OAuthBearerSaslServer` and their callback handlers):
//!
//! - **PLAIN** (RFC 4616): one token, empty answer on success.
//! - **SCRAM-SHA-256/512** (RFC 5802/7677): client-first → server-first,
//!   client-final → server-final (`v=`); Kafka never sends `e=`, a failure is
//!   an error carrying Kafka's generic message.
//! - **OAUTHBEARER** (RFC 7628): a rejected token is answered with a JSON
//!   error *challenge*; the client acknowledges with `0x01` and only then
//!   does the exchange fail.
//!
//! Errors: every failure is a [`SaslError`]; [`SaslError::client_message`] is
//! what Kafka puts in `SaslAuthenticateResponse.error_message` (generic unless
//! Kafka deliberately tells the client more), its `Display` is the detail for
//! the broker log. Neither ever contains a password, key or token.
//!
//! # Layout
//! - `error`: [`SaslError`] and [`FailureReason`].
//! - `plain`: the PLAIN server.
//! - `scram`: [`ScramMechanism`], [`ScramCredential`] (with Kafka's
//!   persisted text form), the message grammar and the SCRAM server.
//! - `oauthbearer`: the client initial response, the token validators
//!   (unsecured JWS, JWKS-signed JWT) and the OAUTHBEARER server.
//! - `jaas`: parsing `sasl.jaas.config` values and the options the
//!   mechanisms read from them.

mod error;
mod jaas;
mod oauthbearer;
mod plain;
mod scram;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use error::{FailureReason, SaslError};
pub use jaas::{
    parse_jaas, plain_users, ControlFlag, JaasConfig, JaasError, LoginModule, PLAIN_LOGIN_MODULE,
};
pub use oauthbearer::{
    JwksConfig, JwksError, JwksValidator, OAuthBearerValidator, OAuthConfigError, RejectionStatus,
    TokenRejection, TokenValidator, UnsecuredValidatorConfig, ValidatedToken,
};
pub use scram::{CredentialError, CredentialParseError, ScramCredential, ScramMechanism};

/// A SASL mechanism Strata's broker can enable (`sasl.enabled.mechanisms`).
///
/// `Display` and `FromStr` use Kafka's mechanism names (`PLAIN`,
/// `SCRAM-SHA-256`, `SCRAM-SHA-512`, `OAUTHBEARER`); parsing is exact and
/// case-sensitive, as Kafka's `SaslHandshake` comparison is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    /// SASL/PLAIN (RFC 4616).
    Plain,
    /// SCRAM-SHA-256 (RFC 7677).
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
    /// OAUTHBEARER (RFC 7628).
    OAuthBearer,
}

impl Mechanism {
    /// Every mechanism, in a stable order.
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::ScramSha256,
        Mechanism::ScramSha512,
        Mechanism::OAuthBearer,
    ];

    /// Kafka's name of the mechanism.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The SCRAM variant, if this is a SCRAM mechanism.
    pub fn scram(self) -> Option<ScramMechanism> {
        match self {
            Mechanism::ScramSha256 => Some(ScramMechanism::Sha256),
            Mechanism::ScramSha512 => Some(ScramMechanism::Sha512),
            Mechanism::Plain | Mechanism::OAuthBearer => None,
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mechanism name that is not one of Kafka's supported names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported SASL mechanism {name:?}")]
pub struct UnknownMechanism {
    /// The name as given.
    pub name: String,
}

impl FromStr for Mechanism {
    type Err = UnknownMechanism;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mechanism::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMechanism { name: s.to_owned() })
    }
}

/// What a [`SaslServer`] answers to one client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes to the client and wait for its next token.
    Challenge(Vec<u8>),
    /// Authenticated. `final_token` goes back in the last SaslAuthenticate
    /// response (may be empty).
    Complete {
        /// The authenticated user: the principal is `User:<authorization_id>`.
        authorization_id: String,
        /// The last server message (SCRAM's server-final; empty otherwise).
        final_token: Vec<u8>,
        /// Credential lifetime for KIP-368: the OAUTHBEARER token's `exp` in
        /// epoch milliseconds, `None` otherwise.
        lifetime_ms: Option<i64>,
    },
}

/// One authentication exchange on one connection.
///
/// After `step` returns [`Step::Complete`] or an error the exchange is over;
/// any further token is refused with [`FailureReason::UnexpectedToken`].
pub trait SaslServer: Send {
    /// Feed the client's next token (`SaslAuthenticate.auth_bytes`); get the
    /// server's answer.
    ///
    /// # Errors
    /// Authentication failed; see [`SaslError::client_message`] for what the
    /// client is told.
    fn step(&mut self, client_token: &[u8]) -> Result<Step, SaslError>;

    /// The mechanism this exchange runs.
    fn mechanism(&self) -> Mechanism;
}

/// Where the mechanisms look users up (the broker implements it over its
/// stores: the PLAIN JAAS users, the SCRAM credentials from the metadata log).
pub trait CredentialStore: Send + Sync {
    /// Whether `password` is `user`'s PLAIN password; `None` = unknown user.
    /// Implementations should compare in constant time.
    fn plain_password_matches(&self, user: &str, password: &[u8]) -> Option<bool>;

    /// `user`'s credential for `mechanism`, if any.
    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential>;
}

/// The source of "now" for token expiry checks, injectable for tests.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        // A clock before 1970 is a broken host; treat it as the epoch.
        now.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A fresh server for one exchange of `mechanism` on one connection.
///
/// `store` answers PLAIN and SCRAM look-ups; `oauth` validates OAUTHBEARER
/// tokens (ignored by the other mechanisms).
pub fn new_server(
    mechanism: Mechanism,
    store: Arc<dyn CredentialStore>,
    oauth: &OAuthBearerValidator,
) -> Box<dyn SaslServer> {
    match mechanism {
        Mechanism::Plain => Box::new(plain::PlainServer::new(store)),
        Mechanism::ScramSha256 => Box::new(scram::ScramServer::new(ScramMechanism::Sha256, store)),
        Mechanism::ScramSha512 => Box::new(scram::ScramServer::new(ScramMechanism::Sha512, store)),
        Mechanism::OAuthBearer => Box::new(oauthbearer::OAuthBearerServer::new(oauth.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanism_names_round_trip() {
        for m in Mechanism::ALL {
            assert_eq!(m.to_string().parse::<Mechanism>(), Ok(m));
        }
        assert_eq!("SCRAM-SHA-256".parse(), Ok(Mechanism::ScramSha256));
        assert!("scram-sha-256".parse::<Mechanism>().is_err());
        assert!("GSSAPI".parse::<Mechanism>().is_err());
    }
}
