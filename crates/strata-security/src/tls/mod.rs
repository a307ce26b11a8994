//! TLS for a broker listener, following Kafka 3.9's SSL behaviour
//! (`SslConfigs`, `DefaultSslEngineFactory`, `SslFactory`, KIP-651 PEM
//! stores, `DefaultKafkaPrincipalBuilder` and `SslPrincipalMapper`), built on
//! rustls 0.23 with the aws-lc-rs provider.
//!
//! The broker reads a listener's `ssl.*` settings into [`SslSettings`]
//! (applying `listener.name.<l>.` precedence in its lookup), builds a
//! [`TlsServer`] and accepts connections with [`TlsServer::server_config`].
//! After the handshake, [`principal_name`] turns the client's certificate (or
//! its absence) into the principal name. A dynamic keystore update calls
//! [`TlsServer::reload`]. The sockets, and kTLS, are the broker's.
//!
//! # Layout
//! - `settings`: the `ssl.*` properties, defaults and combination rules.
//! - `store`: reading PKCS12 and PEM keystores and truststores.
//! - `pem`: the PEM block reader.
//! - `server`: the rustls `ServerConfig` with a swappable certificate.
//! - `principal`: `ssl.principal.mapping.rules` and the connection principal.
//! - `dn`, `der`: subject DNs printed as Java prints them.
//! - `error`: [`TlsConfigError`] and [`PrincipalMappingError`].

mod der;
mod dn;
mod error;
mod pem;
mod principal;
mod server;
mod settings;
mod store;

#[cfg(test)]
mod tests;

pub use error::{PrincipalMappingError, TlsConfigError};
pub use principal::{principal_name, PrincipalMappingRules, ANONYMOUS};
pub use server::TlsServer;
pub use settings::{prop, ClientAuth, SslSettings, StoreType, TlsVersion};
