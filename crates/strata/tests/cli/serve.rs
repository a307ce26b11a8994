//! `strata serve` reaches the broker's entry point: configuration errors come
//! back as exit code 2 with the broker's error chain on stderr.

#[test]
fn missing_config_file_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("server.properties");
    let (code, out, err) = crate::common::run(["serve", "--config", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.starts_with("strata serve: "), "{err}");
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
}

#[test]
fn malformed_override_exits_2() {
    let (code, _, err) = crate::common::run(["serve", "--override", "no-equals-sign"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no-equals-sign"), "{err}");
}
