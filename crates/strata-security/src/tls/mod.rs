//! TLS for a broker listener (stub while being written).
mod der;
mod dn;
mod error;
mod principal;

pub use error::{PrincipalMappingError, TlsConfigError};
pub use principal::{principal_name, PrincipalMappingRules, ANONYMOUS};
