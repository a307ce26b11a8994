//! Placeholder: filled by the tls work.
