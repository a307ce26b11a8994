//! Who is on the other end of a connection: its listener, address and
//! principal, as Kafka's `RequestContext` carries them to every API.

use std::net::SocketAddr;

use crate::listeners::SecurityProtocol;

/// The principal of an unauthenticated PLAINTEXT or certificate-less SSL
/// connection (Kafka's `KafkaPrincipal.ANONYMOUS`).
pub(crate) const ANONYMOUS: &str = "User:ANONYMOUS";

/// One connection's identity, fixed once it has authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Session {
    /// Listener name (upper case).
    pub listener: String,
    pub protocol: SecurityProtocol,
    pub peer: Option<SocketAddr>,
    /// `Type:name`, e.g. `User:alice`.
    pub principal: String,
}
