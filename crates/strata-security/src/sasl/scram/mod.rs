//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802 / RFC 7677) as Kafka runs them.
//!
//! - `credential`: [`ScramMechanism`] (hash, iteration bounds, KRaft type
//!   id), [`ScramCredential`] with its derivation (Kafka's `ScramFormatter`)
//!   and its persisted text form (`ScramCredentialUtils`).
//! - `messages`: the message grammar Kafka's `ScramMessages` accepts.
//! - `server`: the server state machine (`ScramSaslServer`).

mod credential;
mod messages;
mod server;

pub use credential::{CredentialError, CredentialParseError, ScramCredential, ScramMechanism};
pub(crate) use messages::decode_saslname;
pub(crate) use server::ScramServer;
