//! Guards the SCRAM exchange: RFC 7677's worked example byte for byte, a
//! full SHA-512 exchange played by a client written from RFC 5802, and every
//! way the exchange must fail without telling the client why.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::*;
use crate::sasl::scram::messages::encode_saslname;

#[derive(Default)]
struct Store(BTreeMap<(ScramMechanism, String), ScramCredential>);

impl Store {
    fn with(mut self, m: ScramMechanism, user: &str, cred: ScramCredential) -> Self {
        self.0.insert((m, user.to_owned()), cred);
        self
    }
}

impl CredentialStore for Store {
    fn plain_password_matches(&self, _: &str, _: &[u8]) -> Option<bool> {
        None
    }

    fn scram_credential(&self, m: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.0.get(&(m, user.to_owned())).cloned()
    }
}

/// The client side, written from RFC 5802 section 3.
struct Client {
    mechanism: ScramMechanism,
    user: String,
    password: String,
    nonce: String,
    authzid: Option<String>,
}

impl Client {
    fn new(m: ScramMechanism, user: &str, password: &str) -> Self {
        Client {
            mechanism: m,
            user: user.into(),
            password: password.into(),
            nonce: "fyko+d2lbbFgONRv9qkxdawL".into(),
            authzid: None,
        }
    }

    fn gs2_header(&self) -> String {
        match &self.authzid {
            Some(a) => format!("n,a={},", encode_saslname(a)),
            None => "n,,".into(),
        }
    }

    fn bare(&self) -> String {
        format!("n={},r={}", encode_saslname(&self.user), self.nonce)
    }

    fn first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header(), self.bare()).into_bytes()
    }

    /// Returns client-final and the server signature the client expects.
    fn final_message(&self, server_first: &[u8]) -> (Vec<u8>, String) {
        let server_first = std::str::from_utf8(server_first).unwrap();
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for field in server_first.split(',') {
            let (k, v) = field.split_once('=').unwrap();
            match k {
                "r" => nonce = Some(v.to_owned()),
                "s" => salt = Some(STANDARD.decode(v).unwrap()),
                "i" => iterations = Some(v.parse::<i32>().unwrap()),
                _ => panic!("unexpected attribute {k}"),
            }
        }
        let (nonce, salt, iterations) = (nonce.unwrap(), salt.unwrap(), iterations.unwrap());
        assert!(
            nonce.starts_with(&self.nonce),
            "server nonce must extend the client's"
        );
        let m = self.mechanism;
        let salted = m
            .salted_password(self.password.as_bytes(), &salt, iterations)
            .unwrap();
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!(
            "c={},r={nonce}",
            STANDARD.encode(self.gs2_header().as_bytes())
        );
        let auth = format!("{},{server_first},{without_proof}", self.bare());
        let mut proof = m.hmac(&stored_key, auth.as_bytes());
        xor_into(&mut proof, &client_key);
        let server_key = m.hmac(&salted, b"Server Key");
        let expected = format!(
            "v={}",
            STANDARD.encode(m.hmac(&server_key, auth.as_bytes()))
        );
        (
            format!("{without_proof},p={}", STANDARD.encode(proof)).into_bytes(),
            expected,
        )
    }
}

fn challenge(step: Step) -> Vec<u8> {
    match step {
        Step::Challenge(bytes) => bytes,
        other => panic!("expected a challenge, got {other:?}"),
    }
}

fn store_with(m: ScramMechanism, user: &str, password: &str) -> Arc<Store> {
    let cred = ScramCredential::generate(m, password, 4096).unwrap();
    Arc::new(Store::default().with(m, user, cred))
}

const GENERIC_256: &str =
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256";

#[test]
fn rfc7677_example_exchange() {
    // RFC 7677 section 3, also Kafka's ScramFormatterTest.rfc7677Example.
    let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha256, "pencil", salt, 4096).unwrap();
    let store = Arc::new(Store::default().with(ScramMechanism::Sha256, "user", cred));
    let mut server = ScramServer::with_server_nonce(
        ScramMechanism::Sha256,
        store,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    );
    let s1 = challenge(server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap());
    assert_eq!(
        String::from_utf8(s1).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let c2 = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    assert_eq!(
        server.step(c2).unwrap(),
        Step::Complete {
            authorization_id: "user".into(),
            final_token: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
            lifetime_ms: None,
        }
    );
    let again = server.step(c2).unwrap_err();
    assert_eq!(
        again.reason,
        FailureReason::UnexpectedToken { state: "completed" }
    );
}

#[test]
fn rfc7677_example_with_a_flipped_proof_bit_fails() {
    let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha256, "pencil", salt, 4096).unwrap();
    let store = Arc::new(Store::default().with(ScramMechanism::Sha256, "user", cred));
    let mut server = ScramServer::with_server_nonce(
        ScramMechanism::Sha256,
        store,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    );
    server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").unwrap();
    // 'd' -> 'e' in the first proof character.
    let c2 = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    let err = server.step(c2).unwrap_err();
    assert_eq!(
        err.reason,
        FailureReason::InvalidProof {
            user: "user".into()
        }
    );
    assert_eq!(err.client_message(), GENERIC_256);
}

#[test]
fn full_sha512_exchange_with_a_credential_from_a_password() {
    let m = ScramMechanism::Sha512;
    let mut server = ScramServer::new(m, store_with(m, "alice", "alice-secret"));
    let client = Client::new(m, "alice", "alice-secret");
    let server_first = challenge(server.step(&client.first()).unwrap());
    let (client_final, expected_signature) = client.final_message(&server_first);
    match server.step(&client_final).unwrap() {
        Step::Complete {
            authorization_id,
            final_token,
            lifetime_ms,
        } => {
            assert_eq!(authorization_id, "alice");
            assert_eq!(String::from_utf8(final_token).unwrap(), expected_signature);
            assert_eq!(lifetime_ms, None);
        }
        other => panic!("expected completion, got {other:?}"),
    }
}

#[test]
fn user_names_with_escaped_characters_and_matching_authzid() {
    let m = ScramMechanism::Sha256;
    let mut server = ScramServer::new(m, store_with(m, "a,b=c", "pw"));
    let mut client = Client::new(m, "a,b=c", "pw");
    client.authzid = Some("a,b=c".into());
    let server_first = challenge(server.step(&client.first()).unwrap());
    let (client_final, _) = client.final_message(&server_first);
    assert!(matches!(
        server.step(&client_final).unwrap(),
        Step::Complete { authorization_id, .. } if authorization_id == "a,b=c"
    ));
}

#[test]
fn wrong_password_fails_at_the_proof_with_the_generic_message() {
    let m = ScramMechanism::Sha256;
    let mut server = ScramServer::new(m, store_with(m, "alice", "right"));
    let client = Client::new(m, "alice", "wrong");
    let server_first = challenge(server.step(&client.first()).unwrap());
    let (client_final, _) = client.final_message(&server_first);
    let err = server.step(&client_final).unwrap_err();
    assert_eq!(
        err.reason,
        FailureReason::InvalidProof {
            user: "alice".into()
        }
    );
    assert_eq!(err.client_message(), GENERIC_256);
    assert!(!err.to_string().contains("wrong"));
}

#[test]
fn unknown_user_still_gets_a_stable_server_first_then_fails() {
    let m = ScramMechanism::Sha256;
    let store = store_with(m, "alice", "pw");
    let client = Client::new(m, "mallory", "guess");
    let first_salt = |server: &mut ScramServer| {
        let s1 = String::from_utf8(challenge(server.step(&client.first()).unwrap())).unwrap();
        assert!(s1.ends_with(",i=4096"), "{s1}");
        s1.split(',')
            .find_map(|f| f.strip_prefix("s=").map(str::to_owned))
            .unwrap()
    };
    let mut server = ScramServer::new(m, store.clone());
    let salt = first_salt(&mut server);
    let mut again = ScramServer::new(m, store.clone());
    assert_eq!(
        first_salt(&mut again),
        salt,
        "a fake salt must not change between attempts"
    );
    let mut other = ScramServer::new(m, store);
    let other_client = Client::new(m, "trudy", "guess");
    let s1 = String::from_utf8(challenge(other.step(&other_client.first()).unwrap())).unwrap();
    assert!(!s1.contains(&salt), "fake salts differ between users");

    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let server_first = challenge(server.step(&client.first()).unwrap());
    let (client_final, _) = client.final_message(&server_first);
    let err = server.step(&client_final).unwrap_err();
    assert_eq!(
        err.reason,
        FailureReason::UnknownUser {
            user: "mallory".into()
        }
    );
    assert_eq!(err.client_message(), GENERIC_256);
}

#[test]
fn authorization_id_different_from_user_is_refused_explicitly() {
    let m = ScramMechanism::Sha256;
    let mut server = ScramServer::new(m, store_with(m, "userA", "pw"));
    let err = server.step(b"n,a=userB,n=userA,r=abc").unwrap_err();
    assert_eq!(
        err.client_message(),
        "Authentication failed: Client requested an authorization id that is different from username"
    );
    assert!(
        server.step(b"n,,n=userA,r=abc").is_err(),
        "a failed exchange stays failed"
    );
}

#[test]
fn nonce_mismatch_is_refused() {
    let m = ScramMechanism::Sha256;
    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let client = Client::new(m, "alice", "pw");
    let server_first = challenge(server.step(&client.first()).unwrap());
    let forged = String::from_utf8(server_first)
        .unwrap()
        .replacen("r=", "r=X", 1);
    let (client_final, _) = client_with_nonce(&client, "X").final_message(forged.as_bytes());
    let err = server.step(&client_final).unwrap_err();
    assert_eq!(err.reason, FailureReason::NonceMismatch);
    assert_eq!(err.client_message(), GENERIC_256);
}

fn client_with_nonce(client: &Client, prefix: &str) -> Client {
    Client {
        mechanism: client.mechanism,
        user: client.user.clone(),
        password: client.password.clone(),
        nonce: format!("{prefix}{}", client.nonce),
        authzid: client.authzid.clone(),
    }
}

#[test]
fn channel_binding_data_must_match_the_gs2_header() {
    let m = ScramMechanism::Sha256;
    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let client = Client::new(m, "alice", "pw");
    let server_first = challenge(server.step(&client.first()).unwrap());
    let (client_final, _) = client.final_message(&server_first);
    let tampered = String::from_utf8(client_final)
        .unwrap()
        .replacen("c=biws", "c=eSws", 1);
    let err = server.step(tampered.as_bytes()).unwrap_err();
    assert_eq!(err.reason, FailureReason::ChannelBindingMismatch);
}

#[test]
fn delegation_tokens_and_channel_binding_are_refused() {
    let m = ScramMechanism::Sha512;
    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let err = server
        .step(b"n,,n=tokenid,r=abc,tokenauth=true")
        .unwrap_err();
    assert_eq!(
        err.reason,
        FailureReason::DelegationTokenUnsupported {
            token_id: "tokenid".into()
        }
    );
    assert_eq!(
        err.client_message(),
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    );
    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let err = server
        .step(b"p=tls-server-end-point,,n=alice,r=abc")
        .unwrap_err();
    assert_eq!(err.reason, FailureReason::ChannelBindingUnsupported);
}

#[test]
fn weak_stored_credentials_are_refused() {
    let m = ScramMechanism::Sha256;
    let cred = ScramCredential::from_password(m, "pw", b"salt".to_vec(), 4095).unwrap();
    let mut server = ScramServer::new(m, Arc::new(Store::default().with(m, "alice", cred)));
    let err = server.step(b"n,,n=alice,r=abc").unwrap_err();
    assert!(matches!(
        err.reason,
        FailureReason::IterationsBelowMinimum {
            iterations: 4095,
            ..
        }
    ));
}

#[test]
fn malformed_messages_are_errors_not_panics() {
    let m = ScramMechanism::Sha256;
    for first in [
        &b""[..],
        b"\xff\xfe",
        b"n,,n=alice",
        b"n,,n=alice,r=abc,",
        b"garbage",
    ] {
        let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
        let err = server.step(first).unwrap_err();
        assert!(
            matches!(err.reason, FailureReason::MalformedScramMessage { .. }),
            "{first:?}: {err}"
        );
        assert_eq!(err.client_message(), GENERIC_256);
    }
    // Right shape, short proof: must fail cleanly.
    let mut server = ScramServer::new(m, store_with(m, "alice", "pw"));
    let s1 = String::from_utf8(challenge(server.step(b"n,,n=alice,r=abc").unwrap())).unwrap();
    let nonce = s1.split(',').next().unwrap().trim_start_matches("r=");
    let err = server
        .step(format!("c=biws,r={nonce},p=AAAA").as_bytes())
        .unwrap_err();
    assert_eq!(
        err.reason,
        FailureReason::InvalidProof {
            user: "alice".into()
        }
    );
}
