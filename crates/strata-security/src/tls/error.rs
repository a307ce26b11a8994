//! The errors of the TLS module: one enum for building and reloading a
//! listener's TLS configuration ([`TlsConfigError`]) and one for applying
//! `ssl.principal.mapping.rules` to a distinguished name
//! ([`PrincipalMappingError`]).
//!
//! Every variant names the Kafka property it concerns and what is wrong with
//! it. None carries a password, a private key or key bytes: values are only
//! echoed for settings that are not secret (store types, protocols, cipher
//! suite names, paths, rules, distinguished names).

use std::io;
use std::path::PathBuf;

/// A listener's `ssl.*` settings are invalid, a store cannot be read, or a
/// reload was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A setting has a value Kafka does not accept either.
    #[error("{property}: invalid value `{value}`: {reason}")]
    InvalidValue {
        /// The Kafka property.
        property: &'static str,
        /// The offending value (never a secret property's value).
        value: String,
        /// What a valid value looks like.
        reason: &'static str,
    },
    /// Two settings that Kafka refuses together are both set.
    #[error("{property} cannot be set together with {other}: {reason}")]
    Conflict {
        /// The property whose presence is refused.
        property: &'static str,
        /// The property it conflicts with.
        other: &'static str,
        /// Why, in Kafka's terms.
        reason: &'static str,
    },
    /// A setting that another one needs is missing.
    #[error("{property} is required: {reason}")]
    Missing {
        /// The missing property.
        property: &'static str,
        /// Which other setting needs it.
        reason: &'static str,
    },
    /// A store type other than JKS, PKCS12 or PEM.
    #[error("{property}: store type `{store_type}` is not supported (use PKCS12 or PEM)")]
    UnsupportedStoreType {
        /// `ssl.keystore.type` or `ssl.truststore.type`.
        property: &'static str,
        /// The configured type.
        store_type: String,
    },
    /// A protocol rustls does not implement (TLSv1, TLSv1.1, SSLv3) or does
    /// not know at all.
    #[error("{property}: protocol `{protocol}` is not supported: rustls offers only TLSv1.2 and TLSv1.3")]
    UnsupportedProtocol {
        /// `ssl.enabled.protocols` or `ssl.protocol`.
        property: &'static str,
        /// The configured protocol name.
        protocol: String,
    },
    /// A cipher suite name that is unknown or that rustls with aws-lc-rs does
    /// not offer.
    #[error(
        "ssl.cipher.suites: `{name}` is unknown or not offered by rustls (offered: {offered})"
    )]
    UnsupportedCipherSuite {
        /// The configured name.
        name: String,
        /// The IANA names rustls offers, comma separated.
        offered: String,
    },
    /// No configured cipher suite belongs to an enabled protocol version.
    #[error("ssl.cipher.suites: none of the suites can be used with ssl.enabled.protocols")]
    NoUsableCipherSuite,
    /// A store file cannot be read.
    #[error("{property}: cannot read `{path}`: {source}")]
    ReadFile {
        /// `ssl.keystore.location` or `ssl.truststore.location`.
        property: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error (for example not found).
        source: io::Error,
    },
    /// A Java JKS (or JCEKS) store: a proprietary format Strata cannot read.
    #[error(
        "{property}: `{path}` is a Java JKS/JCEKS keystore, which Strata cannot read; convert it with \
         `keytool -importkeystore -srckeystore {path} -destkeystore <new>.p12 -deststoretype PKCS12` \
         and set the store type to PKCS12"
    )]
    JksNotSupported {
        /// `ssl.keystore.location` or `ssl.truststore.location`.
        property: &'static str,
        /// The file.
        path: PathBuf,
    },
    /// The store password does not open the PKCS12 store (its MAC or its
    /// encrypted contents do not check out).
    #[error("{property}: wrong password for `{path}`")]
    WrongPassword {
        /// `ssl.keystore.password`, `ssl.truststore.password` or `ssl.key.password`.
        property: &'static str,
        /// The store file.
        path: PathBuf,
    },
    /// A file that is not a readable PKCS12 store.
    #[error("{property}: `{path}` is not a readable PKCS12 store: {source}")]
    Pkcs12 {
        /// `ssl.keystore.location` or `ssl.truststore.location`.
        property: &'static str,
        /// The file.
        path: PathBuf,
        /// What the PKCS12 reader reported.
        source: p12_keystore::error::Error,
    },
    /// PEM text that is not well formed.
    #[error("{property}: malformed PEM in {origin}: {reason}")]
    Pem {
        /// The property holding the PEM (or the location property).
        property: &'static str,
        /// The path or property name the text came from.
        origin: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The keystore holds no private key.
    #[error("{property}: no private key in {origin}")]
    NoPrivateKey {
        /// The keystore property.
        property: &'static str,
        /// The path or property name.
        origin: String,
    },
    /// The keystore holds more than one private key (Kafka uses exactly one).
    #[error("{property}: more than one private key in {origin}")]
    MultiplePrivateKeys {
        /// The keystore property.
        property: &'static str,
        /// The path or property name.
        origin: String,
    },
    /// A store holds no certificate.
    #[error("{property}: no certificate in {origin}")]
    NoCertificate {
        /// The store property.
        property: &'static str,
        /// The path or property name.
        origin: String,
    },
    /// An encrypted private key without `ssl.key.password`.
    #[error(
        "{property}: the private key in {origin} is encrypted but ssl.key.password is not set"
    )]
    EncryptedKeyWithoutPassword {
        /// The keystore property.
        property: &'static str,
        /// The path or property name.
        origin: String,
    },
    /// An encrypted private key that `ssl.key.password` does not decrypt.
    #[error(
        "ssl.key.password: cannot decrypt the private key in {origin} \
         (wrong password, or an encryption other than PBES2)"
    )]
    KeyDecrypt {
        /// The path or property name.
        origin: String,
    },
    /// A private key rustls cannot sign with (unknown algorithm, bad encoding).
    #[error("{property}: the private key in {origin} is not usable: {source}")]
    UnusableKey {
        /// The keystore property.
        property: &'static str,
        /// The path or property name.
        origin: String,
        /// What rustls reported.
        source: rustls::Error,
    },
    /// The private key is not the key of the first certificate of the chain.
    #[error("{property}: the private key in {origin} does not match its certificate")]
    KeyMismatch {
        /// The keystore property.
        property: &'static str,
        /// The path or property name.
        origin: String,
    },
    /// A certificate that cannot be parsed or used as a trust anchor.
    #[error("{property}: bad certificate in {origin}: {reason}")]
    BadCertificate {
        /// The store property.
        property: &'static str,
        /// The path or property name.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// `ssl.client.auth` asks for client certificates but there is nothing to
    /// verify them against.
    #[error(
        "ssl.client.auth={client_auth} needs a truststore \
         (ssl.truststore.location or ssl.truststore.certificates)"
    )]
    ClientAuthWithoutTruststore {
        /// `requested` or `required`.
        client_auth: &'static str,
    },
    /// A TLS listener without a keystore.
    #[error(
        "a TLS listener needs a keystore: set ssl.keystore.location, or \
         ssl.keystore.certificate.chain and ssl.keystore.key"
    )]
    NoKeystore,
    /// rustls refused the assembled server configuration.
    #[error("building the TLS server configuration: {reason}")]
    Build {
        /// What rustls reported.
        reason: String,
    },
    /// A reload would change the certificate's subject (Kafka refuses this
    /// unless `ssl.allow.dn.changes=true`).
    #[error(
        "reload refused: the keystore certificate's subject changes from `{old}` to `{new}` \
         and ssl.allow.dn.changes is false"
    )]
    DnChanged {
        /// The current subject DN.
        old: String,
        /// The subject DN of the new keystore.
        new: String,
    },
    /// A reload would change the certificate's subject alternative names
    /// (Kafka refuses this unless `ssl.allow.san.changes=true`).
    #[error(
        "reload refused: the keystore certificate's subject alternative names change \
         and ssl.allow.san.changes is false"
    )]
    SanChanged,
    /// A rule of `ssl.principal.mapping.rules` does not parse.
    #[error("ssl.principal.mapping.rules: invalid rule `{rule}`: {reason}")]
    InvalidMappingRule {
        /// The rule text.
        rule: String,
        /// What is wrong (for example the unmatched rest of the rule, or the
        /// regex error).
        reason: String,
    },
    /// The peer's certificate cannot be parsed for its subject.
    #[error("the client certificate cannot be parsed: {reason}")]
    BadPeerCertificate {
        /// What the X.509 parser reported.
        reason: String,
    },
    /// Building the principal from the subject failed.
    #[error(transparent)]
    PrincipalMapping(#[from] PrincipalMappingError),
}

/// `ssl.principal.mapping.rules` yield no principal for a distinguished name;
/// as in Kafka, the connection then fails authentication.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrincipalMappingError {
    /// No rule matches the whole DN (Kafka's `NoMatchingRule`).
    #[error("no rules apply to {dn}, rules [{rules}]")]
    NoMatchingRule {
        /// The distinguished name.
        dn: String,
        /// The rules, as Kafka prints them.
        rules: String,
    },
    /// The matching rule's replacement is not a valid Java replacement string
    /// (a group that does not exist, a trailing `\`, a `$` without a group).
    #[error("rule `{rule}` cannot build a principal from {dn}: {reason}")]
    BadReplacement {
        /// The rule, as Kafka prints it.
        rule: String,
        /// The distinguished name.
        dn: String,
        /// What is wrong with the replacement.
        reason: String,
    },
}
