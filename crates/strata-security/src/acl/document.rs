//! The JSON document in which the broker persists its ACLs.
//!
//! Format (version 1):
//! ```json
//! {"version":1,"acls":[
//!   {"pattern":{"resource_type":"TOPIC","name":"orders","pattern_type":"PREFIXED"},
//!    "entry":{"principal":"User:alice","host":"*","operation":"READ","permission":"ALLOW"}}
//! ]}
//! ```
//! Enum values are Kafka's names (read case-insensitively). Unknown fields are
//! refused, so a typo is an error rather than a silently dropped restriction.
//! Every entry must pass [`validate_new`], the CreateAcls check, so the file
//! holds nothing the API could not have created.

use serde::{Deserialize, Serialize};

use super::error::AclDocumentError;
use super::mutate::validate_new;
use super::types::AclBinding;

/// The persisted set of ACLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclDocument {
    /// The bindings, in the order they were created.
    pub acls: Vec<AclBinding>,
}

/// The on-disk shape.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    version: u64,
    acls: Vec<AclBinding>,
}

/// Reads only the version, so a newer document fails with a version error
/// rather than a shape error.
#[derive(Deserialize)]
struct VersionProbe {
    version: u64,
}

impl AclDocument {
    /// The version this code writes and reads.
    pub const VERSION: u64 = 1;

    /// A document holding `acls`.
    pub fn new(acls: Vec<AclBinding>) -> Self {
        AclDocument { acls }
    }

    /// The document as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct WireRef<'a> {
            version: u64,
            acls: &'a [AclBinding],
        }
        let wire = WireRef {
            version: Self::VERSION,
            acls: &self.acls,
        };
        // Serializing plain structs of strings and names to a String cannot fail.
        serde_json::to_string_pretty(&wire).unwrap_or_default()
    }

    /// Parses and checks a document.
    ///
    /// # Errors
    /// [`AclDocumentError::Json`] for malformed JSON or shape,
    /// [`AclDocumentError::UnsupportedVersion`] for a version other than 1,
    /// [`AclDocumentError::InvalidBinding`] for the first entry CreateAcls
    /// would refuse.
    pub fn from_json(text: &str) -> Result<AclDocument, AclDocumentError> {
        let probe: VersionProbe =
            serde_json::from_str(text).map_err(|source| AclDocumentError::Json { source })?;
        if probe.version != Self::VERSION {
            return Err(AclDocumentError::UnsupportedVersion {
                found: probe.version,
                supported: Self::VERSION,
            });
        }
        let wire: Wire =
            serde_json::from_str(text).map_err(|source| AclDocumentError::Json { source })?;
        for (index, b) in wire.acls.iter().enumerate() {
            validate_new(b).map_err(|source| AclDocumentError::InvalidBinding {
                index,
                binding: b.to_string(),
                source,
            })?;
        }
        Ok(AclDocument { acls: wire.acls })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::types::{
        AccessControlEntry, AclOperation, PatternType, PermissionType, ResourcePattern,
        ResourceType,
    };

    fn sample() -> AclDocument {
        AclDocument::new(vec![
            AclBinding::new(
                ResourcePattern::new(ResourceType::Topic, "orders", PatternType::Prefixed),
                AccessControlEntry::new(
                    "User:alice",
                    "*",
                    AclOperation::Read,
                    PermissionType::Allow,
                ),
            ),
            AclBinding::new(
                ResourcePattern::new(ResourceType::Cluster, "kafka-cluster", PatternType::Literal),
                AccessControlEntry::new(
                    "User:*",
                    "10.0.0.1",
                    AclOperation::IdempotentWrite,
                    PermissionType::Deny,
                ),
            ),
        ])
    }

    #[test]
    fn round_trips() {
        let doc = sample();
        let text = doc.to_json();
        assert!(text.contains("\"version\": 1"));
        assert!(text.contains("\"IDEMPOTENT_WRITE\""));
        assert_eq!(
            AclDocument::from_json(&text).expect("own output parses"),
            doc
        );
        assert_eq!(
            AclDocument::from_json(&AclDocument::default().to_json()).expect("empty"),
            AclDocument::default()
        );
    }

    #[test]
    fn reads_the_documented_format() {
        let text = r#"{"version":1,"acls":[
          {"pattern":{"resource_type":"topic","name":"orders","pattern_type":"PREFIXED"},
           "entry":{"principal":"User:alice","host":"*","operation":"Read","permission":"ALLOW"}}]}"#;
        let doc = AclDocument::from_json(text).expect("valid");
        assert_eq!(doc.acls, sample().acls[..1]);
    }

    #[test]
    fn errors_are_clear() {
        let err = AclDocument::from_json("{\"version\":2,\"acls\":{}}").expect_err("version 2");
        assert!(
            matches!(err, AclDocumentError::UnsupportedVersion { found: 2, .. }),
            "{err}"
        );
        let err = AclDocument::from_json("not json").expect_err("garbage");
        assert!(matches!(err, AclDocumentError::Json { .. }));
        let err = AclDocument::from_json(&sample().to_json().replace("\"READ\"", "\"SMELL\""))
            .expect_err("bad op");
        assert!(
            err.to_string().contains("unknown operation \"SMELL\""),
            "{err}"
        );
        let err = AclDocument::from_json(&sample().to_json().replace("\"host\"", "\"hots\""))
            .expect_err("typo");
        assert!(err.to_string().contains("hots"), "{err}");
        let err = AclDocument::from_json(&sample().to_json().replace("kafka-cluster", "other"))
            .expect_err("cluster");
        match err {
            AclDocumentError::InvalidBinding { index, source, .. } => {
                assert_eq!(index, 1);
                assert!(matches!(
                    source,
                    crate::acl::AclError::InvalidClusterName { .. }
                ));
            }
            other => panic!("unexpected error {other}"),
        }
        let err = AclDocument::from_json(&sample().to_json().replace("\"ALLOW\"", "\"ANY\""))
            .expect_err("any");
        assert!(
            err.to_string().contains("Invalid permissionType ANY"),
            "{err}"
        );
    }
}
