//! Placeholder: filled by the sasl work.
