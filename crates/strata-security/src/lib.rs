//! Strata's security building blocks, kept free of the broker so each is a
//! pure, separately tested piece:
//!
//! - [`tls`]: a listener's `ssl.*` settings (Kafka's names, PEM and PKCS12
//!   stores) turned into a `rustls` server configuration, and the client
//!   certificate's subject mapped to a principal (`ssl.principal.mapping.rules`).
//! - [`sasl`]: the server side of SASL PLAIN, SCRAM-SHA-256/512 and
//!   OAUTHBEARER, with Kafka's JAAS and credential formats.
//! - [`acl`]: ACL bindings and Kafka's standard authorizer semantics.
//! - [`quota`]: client quotas (precedence, rate sensors, throttle time,
//!   AlterClientQuotas / DescribeClientQuotas semantics).
//!
//! The broker owns the sockets, the persistence and the wire protocol; this
//! crate owns the decisions.

pub mod acl;
pub mod quota;
pub mod sasl;
pub mod tls;
