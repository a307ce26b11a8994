use super::*;

fn sim(seed: u64) -> (tempfile::TempDir, SimFs) {
    let dir = tempfile::tempdir().unwrap();
    let fs = SimFs::new(dir.path(), seed).unwrap();
    (dir, fs)
}

fn create(fs: &SimFs, name: &str, bytes: &[u8], sync: bool) -> PathBuf {
    let p = fs.root().join(name);
    let f = fs.open(&p, OpenMode::CreateTruncate).unwrap();
    fs.write_at(&f, &p, bytes, 0).unwrap();
    if sync {
        fs.sync(&f, &p).unwrap();
    }
    p
}

#[test]
fn synced_data_and_entries_survive_every_power_loss() {
    for seed in 0..50 {
        let (_d, fs) = sim(seed);
        let p = create(&fs, "a.log", b"durable", true);
        fs.sync_dir(fs.root()).unwrap();
        let f = fs.open(&p, OpenMode::ReadWrite).unwrap();
        fs.write_at(&f, &p, b" and more", 7).unwrap();
        drop(f);
        fs.crash_now();
        fs.power_loss().unwrap();
        let got = fs::read(&p).unwrap();
        assert!(got.starts_with(b"durable"), "seed {seed}: {got:?}");
        assert!(got.len() <= 16, "seed {seed}: {got:?}");
    }
}

#[test]
fn unsynced_growth_is_sometimes_lost_sometimes_torn_never_invented() {
    let (mut lost, mut torn, mut kept) = (0, 0, 0);
    for seed in 0..200 {
        let (_d, fs) = sim(seed);
        let p = create(&fs, "a.log", b"", true);
        fs.sync_dir(fs.root()).unwrap();
        let f = fs.open(&p, OpenMode::ReadWrite).unwrap();
        fs.write_at(&f, &p, b"0123456789", 0).unwrap();
        drop(f);
        fs.crash_now();
        fs.power_loss().unwrap();
        let got = fs::read(&p).unwrap();
        assert!(
            b"0123456789".starts_with(&got) || got.iter().all(|&b| b == 0),
            "seed {seed}: {got:?}"
        );
        match got.len() {
            0 => lost += 1,
            10 => kept += 1,
            _ => torn += 1,
        }
    }
    assert!(lost > 0 && torn > 0 && kept > 0, "{lost} {torn} {kept}");
}

#[test]
fn an_unsynced_rename_may_be_undone_a_synced_one_never() {
    let mut undone = 0;
    for seed in 0..60 {
        let (_d, fs) = sim(seed);
        let target = create(&fs, "cp", b"old", true);
        fs.sync_dir(fs.root()).unwrap();
        let tmp = create(&fs, "cp.tmp", b"new", true);
        fs.rename(&tmp, &target).unwrap();
        let synced = seed % 2 == 0;
        if synced {
            fs.sync_dir(fs.root()).unwrap();
        }
        fs.crash_now();
        fs.power_loss().unwrap();
        let got = fs::read(&target).unwrap();
        if synced {
            assert_eq!(got, b"new", "seed {seed}");
            assert!(!tmp.exists());
        } else if got == b"old" {
            undone += 1;
        } else {
            assert_eq!(got, b"new", "seed {seed}");
        }
    }
    assert!(undone > 0);
}

#[test]
fn removals_and_creations_are_undone_in_order() {
    for seed in 0..60 {
        let (_d, fs) = sim(seed);
        let a = create(&fs, "a", b"A", true);
        fs.sync_dir(fs.root()).unwrap();
        fs.remove_file(&a).unwrap();
        let b = create(&fs, "b", b"B", true);
        fs.crash_now();
        fs.power_loss().unwrap();
        // A prefix survives: b present implies a removed.
        if b.exists() {
            assert!(!a.exists(), "seed {seed}");
            assert_eq!(fs::read(&b).unwrap(), b"B");
        }
        if a.exists() {
            assert_eq!(fs::read(&a).unwrap(), b"A", "seed {seed}");
        }
    }
}

#[test]
fn removed_directories_come_back_with_their_durable_files() {
    let mut back = 0;
    for seed in 0..40 {
        let (_d, fs) = sim(seed);
        let sub = fs.root().join("topic-0");
        fs.create_dir_all(&sub).unwrap();
        fs.sync_dir(fs.root()).unwrap();
        create(&fs, "topic-0/00.log", b"records", true);
        fs.sync_dir(&sub).unwrap();
        fs.remove_dir_all(&sub).unwrap();
        fs.crash_now();
        fs.power_loss().unwrap();
        if sub.exists() {
            back += 1;
            assert_eq!(fs::read(sub.join("00.log")).unwrap(), b"records");
        }
    }
    assert!(back > 0);
}

#[test]
fn crash_at_fails_that_operation_and_all_later_ones() {
    let (_d, fs) = sim(1);
    fs.crash_at(2);
    let p = fs.root().join("x");
    let f = fs.open(&p, OpenMode::CreateTruncate).unwrap();
    let e = fs.write_at(&f, &p, b"x", 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    assert!(fs.crashed());
    assert!(fs.sync_dir(fs.root()).is_err());
}

#[test]
fn a_change_behind_the_seam_is_reported() {
    let (_d, fs) = sim(3);
    fs::write(fs.root().join("sneaky"), b"x").unwrap();
    fs.crash_now();
    let e = fs.power_loss().unwrap_err();
    assert!(e.to_string().contains("behind the file-system seam"), "{e}");
}

#[test]
fn mapped_writes_count_as_unsynced_data() {
    let mut old = 0;
    for seed in 0..40 {
        let (_d, fs) = sim(seed);
        let p = create(&fs, "i.index", &[0u8; 8192], true);
        fs.sync_dir(fs.root()).unwrap();
        let f = fs.open(&p, OpenMode::ReadWrite).unwrap();
        // SAFETY: test-owned file, not resized while mapped.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&f).unwrap() };
        map[0] = 1;
        map[4096] = 2;
        drop(map);
        drop(f);
        fs.crash_now();
        fs.power_loss().unwrap();
        let got = fs::read(&p).unwrap();
        assert_eq!(got.len(), 8192);
        assert!(got[0] <= 1 && got[4096] <= 2);
        if got[0] == 0 || got[4096] == 0 {
            old += 1;
        }
    }
    assert!(old > 0);
}
