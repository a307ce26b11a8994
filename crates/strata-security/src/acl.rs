//! Placeholder: filled by the acl work.
