//! One `server.properties`, three commands: `strata serve`, `strata log doctor`
//! and `strata tier fsck` must read it identically (Java `.properties` rules:
//! continuations, `\uXXXX` and other escapes, `:` and whitespace separators,
//! comments, last duplicate wins) and refuse a bad value with the same
//! message naming key, value and rule. Guards against a command growing a
//! parser or a default of its own.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A file that uses every rule of `java.util.Properties.load` the tools
/// must agree on. `{root}` is the test's temporary directory.
fn server_properties(root: &Path) -> String {
    let root = root.display();
    [
        "# Strata test configuration \\".to_string(),
        // The comment above ends in a backslash: comments never continue,
        // so this line is a property of its own.
        "num.recovery.threads.per.data.dir=4".to_string(),
        "! another comment style".to_string(),
        String::new(),
        // A continuation (the continued line's indentation is dropped) and
        // an escaped ':' inside the value.
        format!("log.dirs = {root}/d\\:x\\"),
        "      /data".to_string(),
        // Whitespace separators, with a tab.
        "node.id\t7".to_string(),
        "log.retention.hours 5".to_string(),
        // ':' separator and \uXXXX escapes in the value and in the key.
        "listeners : PLAINTEXT://127.0.0.1:\\u0030".to_string(),
        "log.segment.bytes=1048\\u0035760".to_string(),
        "log.cleaner.thr\\u0065ads=2".to_string(),
        "remote.log.reader.threads:\\u0033".to_string(),
        // Other escapes: \t in a value, and an escaped '=' in no key we read.
        "broker.rack=rack\\tA".to_string(),
        format!("strata.remote.storage.uri=file://{root}/re\\mote"),
        // The last duplicate wins.
        "log.retention.check.interval.ms=1000".to_string(),
        "log.retention.check.interval.ms: 2500".to_string(),
    ]
    .join("\n")
        + "\n"
}

fn print_config(args: &[&str]) -> BTreeMap<String, String> {
    let (code, out, err) = crate::common::run(args);
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    out.lines()
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not key=value: {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// The three commands' `--print-config` for `file`.
fn resolved_by_each(file: &str, root: &Path) -> [(&'static str, BTreeMap<String, String>); 3] {
    let data = root.join("data");
    let data = data.to_str().unwrap();
    [
        (
            "serve",
            print_config(&["serve", "--config", file, "--print-config"]),
        ),
        (
            "log doctor",
            print_config(&["log", "doctor", data, "--config", file, "--print-config"]),
        ),
        (
            "tier fsck",
            print_config(&["tier", "fsck", "--config", file, "--print-config"]),
        ),
    ]
}

#[test]
fn serve_doctor_and_fsck_resolve_one_file_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let file = root.join("server.properties");
    std::fs::write(&file, server_properties(root)).unwrap();
    let file = file.to_str().unwrap();
    let all = resolved_by_each(file, root);
    let data_dir = format!("{}/d:x/data", root.display());
    let remote = format!("file://{}/remote", root.display());

    // What the file says, decoded by Java's rules, as each command sees it.
    let expected: &[(&str, &str, &[&str])] = &[
        ("log.dirs", &data_dir, &["serve", "log doctor", "tier fsck"]),
        ("node.id", "7", &["serve", "tier fsck"]),
        ("retention.ms", "18000000", &["serve", "log doctor"]),
        ("segment.bytes", "10485760", &["serve", "log doctor"]),
        ("log.cleaner.threads", "2", &["serve", "log doctor"]),
        (
            "num.recovery.threads.per.data.dir",
            "4",
            &["serve", "log doctor"],
        ),
        (
            "log.retention.check.interval.ms",
            "2500",
            &["serve", "log doctor"],
        ),
        ("remote.log.reader.threads", "3", &["serve", "tier fsck"]),
        (
            "strata.remote.storage.uri",
            &remote,
            &["serve", "tier fsck"],
        ),
        ("listeners", "PLAINTEXT://127.0.0.1:0", &["serve"]),
        ("broker.rack", "rack\tA", &["serve"]),
    ];
    for (key, value, commands) in expected {
        for (command, resolved) in &all {
            if commands.contains(command) {
                assert_eq!(
                    resolved.get(*key).map(String::as_str),
                    Some(*value),
                    "{command}: {key}"
                );
            }
        }
    }
    // Every key two commands both show has the same value in both.
    for (i, (a, ra)) in all.iter().enumerate() {
        for (b, rb) in &all[i + 1..] {
            let shared: Vec<_> = ra.keys().filter(|k| rb.contains_key(*k)).collect();
            assert!(!shared.is_empty(), "{a} and {b} share no setting");
            for k in shared {
                assert_eq!(ra[k], rb[k], "{a} and {b} disagree on {k}");
            }
        }
    }
    // --print-config starts nothing.
    assert!(!root.join("d:x").exists());

    // And the broker really runs with it: node 7 on the port the file's
    // `\u0030` escape spells (0: any free port).
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--config", file])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let listening = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("listening on") => break Some(line),
            Ok(line) => seen.push(line),
            Err(_) => break None,
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let listening = listening.unwrap_or_else(|| panic!("serve did not start: {seen:?}"));
    assert!(
        listening.contains("broker 7 listening on PLAINTEXT 127.0.0.1:"),
        "{listening}"
    );
    assert!(Path::new(&data_dir).is_dir(), "serve used another log dir");
}

#[test]
fn one_bad_value_is_the_same_error_in_all_three() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let file = root.join("server.properties");
    // The bad value is escaped too: the error shows it decoded.
    let text = server_properties(root) + "log.retention.ms = a\\u0062c\n";
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap();
    let data = root.join("data");
    let data = data.to_str().unwrap();
    let expected = r#"invalid value "abc" for log.retention.ms: not a long"#;
    for (command, args) in [
        ("serve", vec!["serve", "--config", file]),
        ("serve", vec!["serve", "--config", file, "--print-config"]),
        ("log doctor", vec!["log", "doctor", data, "--config", file]),
        ("tier fsck", vec!["tier", "fsck", "--config", file]),
    ] {
        let (code, out, err) = crate::common::run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(
            err.trim_end(),
            format!("strata {command}: {expected}"),
            "{args:?}"
        );
        assert!(!err.contains("listening"), "{err}");
    }
    // Nobody started: the log dir was never created.
    assert!(!root.join("d:x").exists());
}

#[test]
fn a_malformed_unicode_escape_names_file_and_line_in_all_three() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("server.properties");
    std::fs::write(&file, "# ok\nnum.partitions=1\nlog.dirs=/x\\u00g1\n").unwrap();
    let file = file.to_str().unwrap();
    let expected = format!("{file}:3: malformed \\uxxxx encoding \"\\\\u00g1\"");
    for (command, args) in [
        ("serve", vec!["serve", "--config", file]),
        (
            "log doctor",
            vec!["log", "doctor", "/nonexistent", "--config", file],
        ),
        ("tier fsck", vec!["tier", "fsck", "--config", file]),
    ] {
        let (code, _, err) = crate::common::run(&args);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.trim_end(), format!("strata {command}: {expected}"));
    }
}
