//! SCRAM mechanisms and stored credentials (Kafka's `ScramMechanism`,
//! `ScramFormatter`, `ScramCredential`, `ScramCredentialUtils`).
//!
//! RFC 5802 derivation, with Kafka's "normalisation" (the password's UTF-8
//! bytes, no SASLprep):
//!
//! ```text
//! SaltedPassword = Hi(password, salt, i)        (PBKDF2 with HMAC-H, one block)
//! ClientKey      = HMAC(SaltedPassword, "Client Key")
//! StoredKey      = H(ClientKey)
//! ServerKey      = HMAC(SaltedPassword, "Server Key")
//! ```
//!
//! The server keeps `salt, StoredKey, ServerKey, iterations`; the password
//! and the salted password are never stored.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use aws_lc_rs::{digest, hmac};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::sasl::Mechanism;

/// A SCRAM hash variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramMechanism {
    /// Kafka's mechanism name, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub fn mechanism_name(self) -> &'static str {
        self.mechanism().name()
    }

    /// The SASL mechanism.
    pub fn mechanism(self) -> Mechanism {
        match self {
            ScramMechanism::Sha256 => Mechanism::ScramSha256,
            ScramMechanism::Sha512 => Mechanism::ScramSha512,
        }
    }

    /// The `Mechanism` byte of `UserScramCredentialRecord` and of
    /// Describe/AlterUserScramCredentials: 1 = SHA-256, 2 = SHA-512.
    pub fn type_id(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of a `type_id`; `None` for 0 (Kafka's UNKNOWN) and
    /// anything else.
    pub fn from_type_id(id: i8) -> Option<Self> {
        match id {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// The fewest iterations a credential may have (RFC 7677's 4096 for both;
    /// a login against a weaker credential fails, AlterUserScramCredentials
    /// refuses it with "Too few iterations").
    pub fn min_iterations(self) -> i32 {
        4096
    }

    /// The most iterations AlterUserScramCredentials accepts ("Too many
    /// iterations" above).
    pub fn max_iterations(self) -> i32 {
        16384
    }

    /// Checks an AlterUserScramCredentials upsertion's iteration count.
    ///
    /// # Errors
    /// [`CredentialError::TooFewIterations`] or
    /// [`CredentialError::TooManyIterations`]; their `Display` is Kafka's
    /// UNACCEPTABLE_CREDENTIAL message.
    pub fn check_iterations(self, iterations: i32) -> Result<(), CredentialError> {
        if iterations < self.min_iterations() {
            Err(CredentialError::TooFewIterations {
                iterations,
                minimum: self.min_iterations(),
            })
        } else if iterations > self.max_iterations() {
            Err(CredentialError::TooManyIterations {
                iterations,
                maximum: self.max_iterations(),
            })
        } else {
            Ok(())
        }
    }

    /// `Hi(password, salt, iterations)` of RFC 5802: the salted password.
    ///
    /// # Errors
    /// [`CredentialError::NonPositiveIterations`] if `iterations < 1`.
    pub fn salted_password(
        self,
        password: &[u8],
        salt: &[u8],
        iterations: i32,
    ) -> Result<Vec<u8>, CredentialError> {
        let rounds = u32::try_from(iterations)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or(CredentialError::NonPositiveIterations { iterations })?;
        Ok(self.hi(password, salt, rounds))
    }

    fn hi(self, password: &[u8], salt: &[u8], iterations: NonZeroU32) -> Vec<u8> {
        let key = hmac::Key::new(self.hmac_algorithm(), password);
        let mut first = hmac::Context::with_key(&key);
        first.update(salt);
        first.update(&[0, 0, 0, 1]);
        let mut previous = first.sign();
        let mut result = previous.as_ref().to_vec();
        for _ in 1..iterations.get() {
            previous = hmac::sign(&key, previous.as_ref());
            xor_into(&mut result, previous.as_ref());
        }
        result
    }

    pub(crate) fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        hmac::sign(&hmac::Key::new(self.hmac_algorithm(), key), data)
            .as_ref()
            .to_vec()
    }

    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        digest::digest(self.digest_algorithm(), data)
            .as_ref()
            .to_vec()
    }

    /// Output length of the hash in bytes (32 or 64).
    #[cfg(test)]
    pub(crate) fn hash_len(self) -> usize {
        self.digest_algorithm().output_len()
    }

    fn hmac_algorithm(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest_algorithm(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mechanism_name())
    }
}

pub(crate) fn xor_into(acc: &mut [u8], other: &[u8]) {
    for (a, b) in acc.iter_mut().zip(other) {
        *a ^= b;
    }
}

/// Errors deriving or checking a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// `Hi` needs at least one iteration.
    #[error("iterations must be positive, got {iterations}")]
    NonPositiveIterations {
        /// The count given.
        iterations: i32,
    },
    /// Below [`ScramMechanism::min_iterations`] (Kafka: "Too few iterations").
    #[error("Too few iterations")]
    TooFewIterations {
        /// The count given.
        iterations: i32,
        /// The minimum.
        minimum: i32,
    },
    /// Above [`ScramMechanism::max_iterations`] (Kafka: "Too many iterations").
    #[error("Too many iterations")]
    TooManyIterations {
        /// The count given.
        iterations: i32,
        /// The maximum.
        maximum: i32,
    },
    /// The system random generator failed while making a salt.
    #[error("the system random generator failed")]
    RandomUnavailable,
}

/// Errors parsing Kafka's persisted credential text. The text holds keys, so
/// it never appears in these errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialParseError {
    /// An entry without `=` or with an empty name.
    #[error("credential entry {index} is not name=value")]
    NotKeyValue {
        /// Zero-based position of the entry.
        index: usize,
    },
    /// A name other than salt, stored_key, server_key, iterations.
    #[error("unknown credential field {field:?}")]
    UnknownField {
        /// The field name.
        field: String,
    },
    /// A field given twice.
    #[error("credential field {field} given twice")]
    DuplicateField {
        /// The field name.
        field: &'static str,
    },
    /// A required field is absent.
    #[error("credential field {field} missing")]
    MissingField {
        /// The field name.
        field: &'static str,
    },
    /// A key or salt is not valid base64.
    #[error("credential field {field} is not valid base64")]
    InvalidBase64 {
        /// The field name.
        field: &'static str,
    },
    /// `iterations` is not a 32-bit integer.
    #[error("credential iterations is not an integer")]
    InvalidIterations,
}

/// A user's stored SCRAM credential for one mechanism.
///
/// Format (`Display` / `FromStr`, Kafka's `ScramCredentialUtils`):
/// `salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>`
/// with standard, padded base64. `Debug` shows the salt and iterations only.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(ClientKey)`.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Vec<u8>,
    /// The `Hi` iteration count.
    pub iterations: i32,
}

impl ScramCredential {
    /// The credential for a salted password, as AlterUserScramCredentials
    /// delivers it (the client salts and hashes; Kafka's
    /// `ScramFormatter.generateCredential(salt, saltedPassword, iterations)`).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: Vec<u8>,
        iterations: i32,
    ) -> Self {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }

    /// The credential for a password (its UTF-8 bytes, no SASLprep, as Kafka).
    ///
    /// # Errors
    /// [`CredentialError::NonPositiveIterations`] if `iterations < 1`.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: Vec<u8>,
        iterations: i32,
    ) -> Result<Self, CredentialError> {
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations)?;
        Ok(Self::from_salted_password(
            mechanism, &salted, salt, iterations,
        ))
    }

    /// A credential for a password with a fresh random salt, shaped like
    /// Kafka's (the UTF-8 of a random base-36 string).
    ///
    /// # Errors
    /// [`CredentialError::NonPositiveIterations`], or
    /// [`CredentialError::RandomUnavailable`] if the system random generator fails.
    pub fn generate(
        mechanism: ScramMechanism,
        password: &str,
        iterations: i32,
    ) -> Result<Self, CredentialError> {
        let salt = random_base36()
            .ok_or(CredentialError::RandomUnavailable)?
            .into_bytes();
        Self::from_password(mechanism, password, salt, iterations)
    }
}

/// 26 random base-36 characters (about 134 bits), like Kafka's
/// `ScramFormatter.secureRandomString` (130 bits in base 36). `None` if the
/// system random generator fails.
pub(crate) fn random_base36() -> Option<String> {
    const ALPHABET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(26);
    while out.len() < 26 {
        let mut bytes = [0u8; 32];
        aws_lc_rs::rand::fill(&mut bytes).ok()?;
        // 252 = 7 * 36: rejecting larger bytes keeps every symbol equally likely.
        for b in bytes.into_iter().filter(|&b| b < 252) {
            if out.len() < 26 {
                out.push(char::from(ALPHABET[usize::from(b % 36)]));
            }
        }
    }
    Some(out)
}

impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt", &STANDARD.encode(&self.salt))
            .field("stored_key", &"<redacted>")
            .field("server_key", &"<redacted>")
            .field("iterations", &self.iterations)
            .finish()
    }
}

impl fmt::Display for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "salt={},stored_key={},server_key={},iterations={}",
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key),
            self.iterations
        )
    }
}

impl FromStr for ScramCredential {
    type Err = CredentialParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut salt = None;
        let mut stored_key = None;
        let mut server_key = None;
        let mut iterations = None;
        for (index, entry) in s.split(',').enumerate() {
            let (name, value) = match entry.split_once('=') {
                Some((name, value)) if !name.is_empty() => (name, value),
                _ => return Err(CredentialParseError::NotKeyValue { index }),
            };
            let (field, slot): (&'static str, &mut Option<&str>) = match name {
                "salt" => ("salt", &mut salt),
                "stored_key" => ("stored_key", &mut stored_key),
                "server_key" => ("server_key", &mut server_key),
                "iterations" => ("iterations", &mut iterations),
                other => {
                    return Err(CredentialParseError::UnknownField {
                        field: other.to_owned(),
                    })
                }
            };
            if slot.replace(value).is_some() {
                return Err(CredentialParseError::DuplicateField { field });
            }
        }
        let decode = |field: &'static str, value: Option<&str>| {
            let value = value.ok_or(CredentialParseError::MissingField { field })?;
            STANDARD
                .decode(value)
                .map_err(|_| CredentialParseError::InvalidBase64 { field })
        };
        let salt = decode("salt", salt)?;
        let stored_key = decode("stored_key", stored_key)?;
        let server_key = decode("server_key", server_key)?;
        let iterations = iterations
            .ok_or(CredentialParseError::MissingField {
                field: "iterations",
            })?
            .parse()
            .map_err(|_| CredentialParseError::InvalidIterations)?;
        Ok(ScramCredential {
            salt,
            stored_key,
            server_key,
            iterations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> Vec<u8> {
        STANDARD.decode(s).unwrap()
    }

    #[test]
    fn hi_agrees_with_aws_lc_pbkdf2_at_kafka_iteration_counts() {
        let salt = b64("W22ZaJ0SNY7soEsUEjb6gQ==");
        for (m, alg) in [
            (
                ScramMechanism::Sha256,
                aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA256,
            ),
            (
                ScramMechanism::Sha512,
                aws_lc_rs::pbkdf2::PBKDF2_HMAC_SHA512,
            ),
        ] {
            let ours = m.salted_password(b"pencil-and-paper", &salt, 4096).unwrap();
            let mut theirs = vec![0u8; m.hash_len()];
            let rounds = NonZeroU32::new(4096).unwrap();
            aws_lc_rs::pbkdf2::derive(alg, rounds, &salt, b"pencil-and-paper", &mut theirs);
            assert_eq!(ours, theirs, "{m}");
        }
    }

    #[test]
    fn hi_matches_pbkdf2_sha256_vectors() {
        // RFC 7914 section 11 (PBKDF2-HMAC-SHA256, 64 bytes; Hi is the first block).
        let out = ScramMechanism::Sha256
            .salted_password(b"passwd", b"salt", 1)
            .unwrap();
        assert_eq!(
            hex(&out),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
    }

    #[test]
    fn hi_matches_pbkdf2_sha512_vector() {
        // PBKDF2-HMAC-SHA512("password", "salt", 1), first 64 bytes.
        let out = ScramMechanism::Sha512
            .salted_password(b"password", b"salt", 1)
            .unwrap();
        assert_eq!(
            hex(&out),
            "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252\
             c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce"
        );
        let two = ScramMechanism::Sha512
            .salted_password(b"password", b"salt", 2)
            .unwrap();
        assert_eq!(
            hex(&two),
            "e1d9c16aa681708a45f5c7c4e215ceb66e011a2e9f0040713f18aefdb866d53c\
             f76cab2868a39b9f7840edce4fef5a82be67335c77a6068e04112754f27ccf4e"
        );
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn zero_iterations_is_an_error_not_a_panic() {
        assert_eq!(
            ScramMechanism::Sha256.salted_password(b"p", b"s", 0),
            Err(CredentialError::NonPositiveIterations { iterations: 0 })
        );
        assert!(ScramCredential::from_password(ScramMechanism::Sha512, "p", vec![], -5).is_err());
    }

    #[test]
    fn iteration_bounds_follow_kafka() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            assert_eq!(m.min_iterations(), 4096);
            assert_eq!(m.max_iterations(), 16384);
            assert!(m.check_iterations(4096).is_ok());
            assert!(m.check_iterations(16384).is_ok());
            assert_eq!(
                m.check_iterations(4095).unwrap_err().to_string(),
                "Too few iterations"
            );
            assert_eq!(
                m.check_iterations(16385).unwrap_err().to_string(),
                "Too many iterations"
            );
        }
    }

    #[test]
    fn type_ids_follow_kafka() {
        assert_eq!(ScramMechanism::Sha256.type_id(), 1);
        assert_eq!(
            ScramMechanism::from_type_id(2),
            Some(ScramMechanism::Sha512)
        );
        assert_eq!(ScramMechanism::from_type_id(0), None);
        assert_eq!(ScramMechanism::Sha512.to_string(), "SCRAM-SHA-512");
    }

    #[test]
    fn from_salted_password_equals_from_password() {
        let m = ScramMechanism::Sha512;
        let salt = b"NaCl".to_vec();
        let salted = m.salted_password(b"secret", &salt, 4096).unwrap();
        assert_eq!(
            ScramCredential::from_salted_password(m, &salted, salt.clone(), 4096),
            ScramCredential::from_password(m, "secret", salt, 4096).unwrap()
        );
    }

    // Kafka's ScramCredentialUtilsTest.
    #[test]
    fn string_conversion_round_trips() {
        let cred = ScramCredential::generate(ScramMechanism::Sha256, "password", 1024).unwrap();
        assert!(!cred.salt.is_empty());
        let text = cred.to_string();
        assert!(text.starts_with("salt="));
        assert!(text.ends_with(",iterations=1024"));
        assert_eq!(text.parse::<ScramCredential>().unwrap(), cred);
    }

    #[test]
    fn generated_salts_differ() {
        let a = ScramCredential::generate(ScramMechanism::Sha256, "password", 4096).unwrap();
        let b = ScramCredential::generate(ScramMechanism::Sha256, "password", 4096).unwrap();
        assert_ne!(a.to_string(), b.to_string());
    }

    #[test]
    fn invalid_credential_text_is_refused() {
        let cred = ScramCredential::generate(ScramMechanism::Sha256, "password", 2048)
            .unwrap()
            .to_string();
        assert_eq!(
            "abc".parse::<ScramCredential>(),
            Err(CredentialParseError::NotKeyValue { index: 0 })
        );
        // missing fields: Kafka's test drops everything before the first comma
        let comma = cred.find(',').unwrap();
        assert!(cred[comma..].parse::<ScramCredential>().is_err());
        assert_eq!(
            cred[comma + 1..].parse::<ScramCredential>(),
            Err(CredentialParseError::MissingField { field: "salt" })
        );
        assert_eq!(
            format!("{cred},a=test").parse::<ScramCredential>(),
            Err(CredentialParseError::UnknownField { field: "a".into() })
        );
        assert_eq!(
            format!("{cred},salt=AAAA").parse::<ScramCredential>(),
            Err(CredentialParseError::DuplicateField { field: "salt" })
        );
        assert_eq!(
            cred.replace("iterations=2048", "iterations=lots")
                .parse::<ScramCredential>(),
            Err(CredentialParseError::InvalidIterations)
        );
    }

    #[test]
    fn debug_redacts_keys() {
        let cred = ScramCredential::generate(ScramMechanism::Sha512, "password", 4096).unwrap();
        let debug = format!("{cred:?}");
        assert!(debug.contains("<redacted>"));
        assert!(!debug.contains(&STANDARD.encode(&cred.stored_key)));
        assert!(!debug.contains(&STANDARD.encode(&cred.server_key)));
    }
}
