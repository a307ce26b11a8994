//! The broker's side of security: which settings a listener uses
//! ([`SecurityConfig`]), who a connection is ([`session`]), and the
//! persisted ACLs, SCRAM credentials and quotas ([`store`]). The SASL
//! exchange is `crate::authentication`; a listener's TLS and SASL setup is
//! `crate::listener_runtime`.
//!
//! The decisions themselves (TLS settings, SASL mechanisms, ACL semantics)
//! live in the `strata-security` crate; this module wires them to sockets,
//! stores and Kafka's settings.

pub(crate) mod config;
pub(crate) mod session;
pub(crate) mod store;

pub use config::SecurityConfig;
pub(crate) use session::Session;
