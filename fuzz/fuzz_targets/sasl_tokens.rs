//! Arbitrary client tokens through the server side of every SASL mechanism
//! (`strata_security::sasl`): what an unauthenticated peer sends in
//! SaslAuthenticate, before the broker knows who it is. Also arbitrary DER
//! as a TLS client certificate through `tls::principal_name` (the subject
//! printing and `ssl.principal.mapping.rules`). Any panic or overflow is a
//! bug; a mechanism may fail, never crash.
//!
//! The first input byte chooses the mechanism (or the certificate); the
//! rest is split at 0xFF bytes into the successive client tokens. The
//! credential store knows user "u" (PLAIN password "p", SCRAM credentials
//! for both hashes), so exchanges can get past the first message.

#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata_security::sasl::{
    self, CredentialStore, Mechanism, OAuthBearerValidator, ScramCredential, ScramMechanism,
    UnsecuredValidatorConfig,
};
use strata_security::tls::{principal_name, PrincipalMappingRules};

struct Users;

impl CredentialStore for Users {
    fn plain_password_matches(&self, user: &str, password: &[u8]) -> Option<bool> {
        (user == "u").then(|| password == b"p")
    }

    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        (user == "u").then(|| {
            ScramCredential::from_password(mechanism, "p", b"0123456789abcdef".to_vec(), 4096)
                .expect("a valid credential")
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let mechanism = match choice % 5 {
        0 => Mechanism::Plain,
        1 => Mechanism::ScramSha256,
        2 => Mechanism::ScramSha512,
        3 => Mechanism::OAuthBearer,
        _ => {
            let rules = PrincipalMappingRules::parse("RULE:^CN=(.*?),.*$/$1/L,DEFAULT")
                .expect("valid rules");
            let _ = principal_name(Some(rest), &rules);
            return;
        }
    };
    let oauth = OAuthBearerValidator::unsecured(
        UnsecuredValidatorConfig::default(),
        Arc::new(sasl::SystemClock),
    );
    let mut server = sasl::new_server(mechanism, Arc::new(Users), &oauth);
    for token in rest.split(|b| *b == 0xFF).take(4) {
        if server.step(token).is_err() {
            return;
        }
    }
});
