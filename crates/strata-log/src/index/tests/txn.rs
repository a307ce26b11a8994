//! TransactionIndex (Kafka TransactionIndexTest) and the `.txnindex` bytes.

use std::fs;

use super::*;
fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn::new(ProducerId(pid), Offset(first), Offset(last), Offset(lso))
}

fn kafka_txns() -> Vec<AbortedTxn> {
    vec![
        txn(0, 0, 10, 11),
        txn(1, 5, 15, 13),
        txn(2, 18, 35, 25),
        txn(3, 32, 50, 40),
    ]
}

fn txn_index(path: &Path) -> TransactionIndex {
    TransactionIndex::open(&crate::fs::StdFs::shared(), path, Offset(0)).unwrap()
}

#[test]
fn aborted_txn_bytes() {
    let t = txn(983493, 137, 299, 200);
    let bytes = t.encode();
    let mut expected = vec![0u8, 0];
    for v in [983493i64, 137, 299, 200] {
        expected.extend_from_slice(&v.to_be_bytes());
    }
    assert_eq!(bytes.to_vec(), expected);
    assert_eq!(AbortedTxn::decode(&bytes), Some(t));
    let mut newer = bytes;
    newer[0] = 1;
    assert_eq!(AbortedTxn::decode(&newer), None);
}

#[test]
fn txn_index_is_created_lazily_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "00.txnindex");
    let mut idx = txn_index(&path);
    assert!(!path.exists() && idx.is_empty().unwrap());
    idx.flush().unwrap();
    idx.reset().unwrap();
    assert!(idx.all_aborted_txns().unwrap().is_empty());
    assert!(!path.exists(), "no file until the first append");
    for t in kafka_txns() {
        idx.append(&t).unwrap();
    }
    idx.flush().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 4 * 34);
    idx.close().unwrap();
    let mut reopened = txn_index(&path);
    let extra = txn(3, 50, 60, 55);
    reopened.append(&extra).unwrap();
    let mut all = kafka_txns();
    all.push(extra);
    assert_eq!(reopened.all_aborted_txns().unwrap(), all);
}

#[test]
fn txn_index_last_offset_must_increase() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = txn_index(&new_path(&dir, "a.txnindex"));
    idx.append(&txn(1, 5, 15, 13)).unwrap();
    for last in [15, 10] {
        assert!(matches!(
            idx.append(&txn(0, 0, last, 11)),
            Err(IndexError::TxnOutOfOrder { .. })
        ));
    }
}

#[test]
fn collect_aborted_txns_like_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let mut idx = txn_index(&new_path(&dir, "a.txnindex"));
    let all = kafka_txns();
    for t in &all {
        idx.append(t).unwrap();
    }
    let collect = |f: i64, u: i64| idx.collect_aborted_txns(Offset(f), Offset(u)).unwrap();
    let r = collect(0, 100);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), false));
    let r = collect(0, 32);
    assert_eq!((r.aborted, r.is_complete), (all[..3].to_vec(), true));
    let r = collect(0, 35);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), true));
    let r = collect(10, 35);
    assert_eq!((r.aborted, r.is_complete), (all.clone(), true));
    let r = collect(11, 35);
    assert_eq!((r.aborted, r.is_complete), (all[1..].to_vec(), true));
    let r = collect(20, 41);
    assert_eq!((r.aborted, r.is_complete), (all[2..].to_vec(), false));
}

#[test]
fn txn_truncate_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    let all = vec![
        txn(0, 0, 10, 2),
        txn(1, 5, 15, 16),
        txn(2, 18, 35, 25),
        txn(3, 32, 50, 40),
    ];
    for t in &all {
        idx.append(t).unwrap();
    }
    idx.truncate_to(Offset(51)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all);
    idx.truncate_to(Offset(50)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all[..3].to_vec());
    assert_eq!(fs::metadata(&path).unwrap().len(), 3 * 34);
    // The remembered last offset moved back with the cut: 36 is accepted.
    idx.append(&txn(4, 36, 36, 37)).unwrap();
    idx.truncate_to(Offset(11)).unwrap();
    assert_eq!(idx.all_aborted_txns().unwrap(), all[..1].to_vec());
    idx.reset().unwrap();
    assert!(idx.is_empty().unwrap());
    assert!(path.exists(), "reset keeps the file");
    assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    idx.append(&txn(0, 0, 1, 2)).unwrap();
}

#[test]
fn txn_sanity_check_and_partial_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    for t in kafka_txns() {
        idx.append(&t).unwrap();
    }
    idx.sanity_check().unwrap();
    idx.close().unwrap();
    let shifted = TransactionIndex::open(&crate::fs::StdFs::shared(), &path, Offset(100)).unwrap();
    assert_eq!(
        corruption(shifted.sanity_check()),
        IndexCorruption::AbortedTxnBelowBase {
            last_offset: Offset(10),
            base_offset: Offset(100)
        }
    );
    // A trailing partial record is ignored; a newer version is corrupt.
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0; 20]);
    fs::write(&path, &bytes).unwrap();
    assert_eq!(txn_index(&path).all_aborted_txns().unwrap(), kafka_txns());
    bytes[34] = 1;
    fs::write(&path, &bytes).unwrap();
    match txn_index(&path).all_aborted_txns() {
        Err(e) => assert_eq!(
            e.corruption(),
            Some(IndexCorruption::UnsupportedTxnVersion {
                version: 1,
                position: 34
            })
        ),
        Ok(v) => panic!("{v:?}"),
    }
}

#[test]
fn txn_rename_before_and_after_materialising() {
    let dir = tempfile::tempdir().unwrap();
    // Never materialised: renaming must not create anything.
    let mut lazy = txn_index(&new_path(&dir, "lazy.txnindex"));
    let lazy_new = new_path(&dir, "lazy.txnindex.swap");
    lazy.rename_to(&lazy_new).unwrap();
    assert!(!lazy_new.exists());
    lazy.append(&txn(0, 0, 10, 2)).unwrap();
    assert!(lazy_new.exists() && !new_path(&dir, "lazy.txnindex").exists());

    let path = new_path(&dir, "a.txnindex");
    let mut idx = txn_index(&path);
    idx.append(&txn(0, 0, 10, 2)).unwrap();
    let renamed = new_path(&dir, "a.txnindex.deleted");
    idx.rename_to(&renamed).unwrap();
    idx.append(&txn(1, 5, 15, 16)).unwrap();
    let got = idx
        .collect_aborted_txns(Offset(0), Offset(100))
        .unwrap()
        .aborted;
    assert_eq!(
        got.iter().map(|t| t.first_offset).collect::<Vec<_>>(),
        [Offset(0), Offset(5)]
    );
    assert!(!path.exists());
    assert!(idx.delete().unwrap());
    assert!(!renamed.exists());
}
