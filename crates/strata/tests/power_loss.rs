//! Power-loss tests (issue 13): a randomized workload runs against the
//! power-loss simulating file system ([`SimFs`]), loses power at a random
//! seam operation, and the directory is rewritten to a state a real power
//! loss could leave (unsynced data dropped or torn, undurable directory
//! entries undone). Then:
//!
//! - recovery never fails (sometimes it loses power itself, and recovers
//!   from that);
//! - every append acknowledged under `strata.durable.append=true` is there,
//!   byte for byte, unless retention, DeleteRecords or a truncation the test
//!   asked for removed it;
//! - the plain log has no gap: batches chain from the log start to the log
//!   end, and each is a batch the workload wrote at that offset;
//! - the compacted log never goes back to an older value of a key than one
//!   acknowledged durably, and holds only values the workload wrote;
//! - the producer state agrees with the last batch of each producer;
//! - after a clean shutdown, `strata log verify` passes (indexes, time
//!   indexes, checkpoints, snapshots agree with the log).
//!
//! CI runs `STRATA_POWER_LOSS_CRASHES` crash points (default 1,000: seeds
//! 1 to about 20, some 15 s); set it higher (and `STRATA_POWER_LOSS_SEED`
//! to start from another seed) for a soak. What it found so far, each
//! fixed in the engine: a roll's new segment durable before the old
//! segment's tail; a truncation's renames undone around a kept truncation;
//! a truncation's renames kept in part (a hole: they now go top down); an
//! empty segment deleted and not recreated (no segment left: the log
//! restarted at its checkpointed start); a deleted producer snapshot of a
//! truncated tail brought back (it now goes before the directory fsync).
//! `STRATA_POWER_LOSS_TRACE=1` prints every step and every power loss's
//! choices; `STRATA_POWER_LOSS_KEEP=DIR` copies a failing tree there.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_log::batch::BatchBuilder;
use strata_log::cleaner::{Cleaner, CleanerConfig};
use strata_log::fs::sim::SimFs;
use strata_log::fs::SharedFs;
use strata_log::{
    CleanupPolicy, Clock, LeaderEpoch, Log, LogConfig, LogManager, LogManagerConfig, MockClock,
    Offset, ProducerEpoch, ProducerId, ReadBound, Timestamp, TopicPartition,
};

const CYCLES_PER_SEED: u64 = 50;

fn plain_tp() -> TopicPartition {
    TopicPartition::new("plain", 0)
}

fn compact_tp() -> TopicPartition {
    TopicPartition::new("compact", 0)
}

fn topic_config(topic: &str) -> LogConfig {
    let mut c = LogConfig {
        segment_bytes: 1200,
        index_interval_bytes: 150,
        // Small preallocated indexes: the simulator copies whole files.
        segment_index_bytes: 4096,
        retention_bytes: 4000,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    };
    if topic == "compact" {
        c.cleanup_policy = CleanupPolicy {
            delete: false,
            compact: true,
        };
        c.retention_bytes = -1;
        c.min_cleanable_dirty_ratio = 0.0;
        c.durable_append = true;
    }
    c
}

/// What the workload did, to judge a recovered directory by.
#[derive(Default)]
struct Model {
    /// Plain log: every batch written at a base offset (a truncation lets a
    /// base be written again).
    versions: HashMap<i64, Vec<Vec<u8>>>,
    /// Plain log: batches acknowledged under durable append, by base.
    durable: BTreeMap<i64, Vec<u8>>,
    /// Plain log: the highest offset below which the workload let data go
    /// (retention, DeleteRecords).
    may_drop_below: i64,
    /// Compacted log: every `(key, version)` written.
    written: HashSet<(u8, u64)>,
    /// Compacted log: the newest version of each key acknowledged durably.
    acked: HashMap<u8, u64>,
    next_version: u64,
    /// The idempotent producer in use, and how many were used.
    producer: i64,
    producers: i64,
    sequence: i32,
}

struct Batch {
    base: i64,
    last: i64,
    producer: i64,
    last_seq: i32,
    bytes: Vec<u8>,
}

fn be64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().unwrap())
}

fn be32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().unwrap())
}

/// Every batch from the log start to the log end, in order.
fn batches(log: &Log) -> Result<Vec<Batch>, String> {
    let mut out: Vec<Batch> = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.log_end_offset() {
        let data = log
            .read(at, 1 << 20, ReadBound::LogEnd, false)
            .map_err(|e| format!("read at {at:?}: {e}"))?;
        let bytes = data.read_to_vec().map_err(|e| e.to_string())?;
        let mut p = 0;
        let before = out.len();
        while p + 61 <= bytes.len() {
            let size = be32(&bytes, p + 8) as usize + 12;
            if p + size > bytes.len() {
                break;
            }
            let b = &bytes[p..p + size];
            let base = be64(b, 0);
            let delta = be32(b, 23);
            out.push(Batch {
                base,
                last: base + i64::from(delta),
                producer: be64(b, 43),
                last_seq: be32(b, 53).wrapping_add(delta),
                bytes: b.to_vec(),
            });
            p += size;
        }
        if out.len() == before {
            return Err(format!("read at {at:?} returned no whole batch"));
        }
        at = Offset(out.last().unwrap().last + 1);
    }
    Ok(out)
}

fn client_batch(producer: i64, sequence: i32, records: usize, ts: i64, tag: u64) -> Vec<u8> {
    let mut b =
        BatchBuilder::new(Offset(0)).producer(ProducerId(producer), ProducerEpoch(0), sequence);
    for i in 0..records {
        let value = format!("value-{tag}-{i}-{}", "x".repeat((tag % 40) as usize));
        b.append(Timestamp(ts), Some(b"k"), Some(value.as_bytes()), &[]);
    }
    b.build()
}

fn keyed_batch(key: u8, version: u64, ts: i64) -> Vec<u8> {
    let mut b = BatchBuilder::new(Offset(0));
    let value = format!("{key}:{version}:{}", "v".repeat((version % 30) as usize));
    b.append(Timestamp(ts), Some(&[key]), Some(value.as_bytes()), &[]);
    b.build()
}

struct Run {
    root: PathBuf,
    seed: u64,
    rng: StdRng,
    clock: Arc<MockClock>,
    model: Model,
    strata: PathBuf,
    crash_points: u64,
}

fn manager_config(root: &Path, fs: SharedFs) -> LogManagerConfig {
    let mut cfg = LogManagerConfig::new(vec![root.join("data")]);
    cfg.fs = fs;
    cfg
}

fn open(root: &Path, fs: SharedFs, clock: &Arc<MockClock>) -> Result<Arc<LogManager>, String> {
    LogManager::open_with(
        manager_config(root, fs),
        clock.clone(),
        None,
        Some(Arc::new(topic_config)),
    )
    .map_err(|e| format!("open: {}", strata_log::ErrorChain(&e)))
}

impl Run {
    fn new(root: PathBuf, seed: u64) -> Run {
        Run {
            root,
            seed,
            rng: StdRng::seed_from_u64(seed),
            clock: MockClock::new(1_700_000_000_000),
            model: Model::default(),
            strata: PathBuf::from(env!("CARGO_BIN_EXE_strata")),
            crash_points: 0,
        }
    }

    fn sim(&mut self) -> Arc<SimFs> {
        Arc::new(SimFs::new(&self.root, self.rng.gen()).unwrap())
    }

    /// Open the directory after a power loss; recovery itself may lose
    /// power (and then recovers from that).
    fn recover(&mut self, context: &str) -> Arc<LogManager> {
        if self.rng.gen_ratio(1, 5) {
            let sim = self.sim();
            sim.crash_at(self.rng.gen_range(1..40));
            match open(&self.root, sim.clone(), &self.clock) {
                Ok(mgr) => drop(mgr),
                Err(e) if sim.crashed() => drop(e),
                Err(e) => panic!("seed {}: {context}: recovery failed: {e}", self.seed),
            }
            if sim.crashed() {
                self.crash_points += 1;
                sim.power_loss().unwrap();
            }
        }
        let sim = self.sim();
        open(&self.root, sim, &self.clock)
            .unwrap_or_else(|e| panic!("seed {}: {context}: recovery failed: {e}", self.seed))
    }

    fn logs(&self, mgr: &LogManager) -> (Arc<Log>, Arc<Log>) {
        let get = |tp: TopicPartition| {
            mgr.get_or_create_log(&tp, topic_config(&tp.topic), None)
                .unwrap_or_else(|e| panic!("seed {}: {tp}: {e}", self.seed))
        };
        (get(plain_tp()), get(compact_tp()))
    }

    /// Judge the recovered directory (see the module documentation).
    fn check(&mut self, mgr: &LogManager, context: &str) {
        let (plain, compact) = self.logs(mgr);
        let seed = self.seed;
        let root = self.root.clone();
        macro_rules! fail {
            ($($arg:tt)*) => {{
                if let Some(keep) = std::env::var_os("STRATA_POWER_LOSS_KEEP") {
                    let _ = Command::new("cp").arg("-a").arg(&root).arg(&keep).status();
                }
                panic!("seed {seed}: {context}: {}", format!($($arg)*))
            }};
        }
        let start = plain.log_start_offset().0;
        if start > self.model.may_drop_below.max(0) {
            fail!(
                "log start {start} beyond what retention and DeleteRecords removed ({})",
                self.model.may_drop_below
            );
        }
        let found = batches(&plain).unwrap_or_else(|e| {
            let segs: Vec<(i64, u64)> = plain
                .segments()
                .iter()
                .map(|s| (s.base_offset.0, s.size))
                .collect();
            fail!(
                "{e} (log {start}..{:?}, segments {segs:?})",
                plain.log_end_offset()
            )
        });
        let mut next = None;
        for b in &found {
            if let Some(n) = next {
                if b.base != n {
                    let segs: Vec<i64> = plain.segments().iter().map(|s| s.base_offset.0).collect();
                    fail!(
                        "gap or overlap: batch at {} after end {n} (segments {segs:?})",
                        b.base
                    );
                }
            }
            next = Some(b.last + 1);
            let known = self.model.versions.get(&b.base);
            if !known.is_some_and(|v| v.contains(&b.bytes)) {
                fail!("batch at {} was never written", b.base);
            }
        }
        if let Some(n) = next {
            if n != plain.log_end_offset().0 {
                fail!(
                    "last batch ends at {n}, log end {:?}",
                    plain.log_end_offset()
                );
            }
        }
        let by_base: HashMap<i64, &Vec<u8>> = found.iter().map(|b| (b.base, &b.bytes)).collect();
        for (base, bytes) in self.model.durable.range(start..) {
            match by_base.get(base) {
                Some(got) if *got == bytes => {}
                Some(_) => fail!("durably acknowledged batch at {base} changed"),
                None => fail!(
                    "durably acknowledged batch at {base} lost (log {start}..{:?})",
                    plain.log_end_offset()
                ),
            }
        }
        let mut last_seq: HashMap<i64, (i32, i64)> = HashMap::new();
        for b in &found {
            last_seq.insert(b.producer, (b.last_seq, b.last));
        }
        for (producer, (seq, last)) in last_seq {
            // Kafka forgets a producer whose last batch fell below the log
            // start (`onLogStartOffsetIncremented`); a lagging
            // log-start checkpoint may bring the batch back after a crash.
            if last < self.model.may_drop_below {
                continue;
            }
            let state = plain.producer_state_of(ProducerId(producer));
            let got = state.map(|s| s.last_seq());
            if got != Some(seq) {
                fail!("producer {producer}: state says last sequence {got:?}, the log {seq}");
            }
        }
        // The compacted log.
        let mut newest: HashMap<u8, u64> = HashMap::new();
        let mut at = compact.log_start_offset();
        while at < compact.log_end_offset() {
            let data = compact
                .read(at, 1 << 20, ReadBound::LogEnd, false)
                .unwrap_or_else(|e| fail!("compacted read: {e}"));
            let bytes = data.read_to_vec().unwrap();
            let mut p = 0;
            let mut last = None;
            while p + 61 <= bytes.len() {
                let size = be32(&bytes, p + 8) as usize + 12;
                if p + size > bytes.len() {
                    break;
                }
                let view = strata_log::batch::BatchView::parse(&bytes[p..p + size])
                    .unwrap_or_else(|e| fail!("compacted batch: {e}"));
                for r in view.records().unwrap_or_else(|e| fail!("records: {e}")) {
                    let key = r.key.as_ref().unwrap()[0];
                    let value = String::from_utf8(r.value.clone().unwrap()).unwrap();
                    let version: u64 = value.split(':').nth(1).unwrap().parse().unwrap();
                    if !self.model.written.contains(&(key, version)) {
                        fail!("compacted log holds {key}:{version}, never written");
                    }
                    newest.insert(key, version);
                }
                last = Some(be64(&bytes, p) + i64::from(be32(&bytes, p + 23)));
                p += size;
            }
            match last {
                Some(l) => at = Offset(l + 1),
                None => fail!("compacted read at {at:?} returned no whole batch"),
            }
        }
        for (key, acked) in &self.model.acked {
            match newest.get(key) {
                Some(v) if v >= acked => {}
                other => fail!("key {key}: newest value {other:?}, acknowledged durably {acked}"),
            }
        }
    }

    /// `strata log verify` on the log directory after a clean shutdown.
    fn verify(&self, context: &str) {
        let out = Command::new(&self.strata)
            .args(["log", "verify"])
            .arg(self.root.join("data"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "seed {}: {context}: strata log verify failed:\n{}{}",
            self.seed,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn new_producer(&mut self) {
        self.model.producer = 1000 + self.model.producers;
        self.model.producers += 1;
        self.model.sequence = 0;
    }

    /// One step of the workload. `Err` carries the engine's error.
    fn step(
        &mut self,
        mgr: &LogManager,
        plain: &Log,
        compact: &Log,
        cleaner: &mut Cleaner,
    ) -> Result<(), String> {
        let e = |e: &dyn std::error::Error| strata_log::ErrorChain(e).to_string();
        self.clock.advance(self.rng.gen_range(0..50));
        let now = self.clock.now_ms();
        let pick = self.rng.gen_range(0..100);
        if std::env::var_os("STRATA_POWER_LOSS_TRACE").is_some() {
            eprintln!("step {pick}");
        }
        match pick {
            0..=44 => {
                let durable = self.rng.gen_bool(0.6);
                let mut cfg = plain.config();
                if cfg.durable_append != durable {
                    cfg.durable_append = durable;
                    plain.update_config(cfg);
                }
                let records = self.rng.gen_range(1..4);
                let tag = self.rng.gen();
                let mut batch =
                    client_batch(self.model.producer, self.model.sequence, records, now, tag);
                let end = plain.log_end_offset().0;
                let appended = plain.append_as_leader(&mut batch, LeaderEpoch(0));
                // Even a failed append (the power went mid-append) may
                // have written the batch, stamped with its offsets, to the
                // page cache, and a power loss may keep it: a batch the
                // workload wrote at that offset, just not acknowledged.
                let base = appended.as_ref().map_or(end, |info| info.first_offset.0);
                self.model
                    .versions
                    .entry(base)
                    .or_default()
                    .push(batch.clone());
                appended.map_err(|x| e(&x))?;
                self.model.sequence += records as i32;
                plain.update_high_watermark(plain.log_end_offset());
                if durable {
                    self.model.durable.insert(base, batch);
                }
            }
            45..=59 => {
                let key = self.rng.gen_range(0..8u8);
                let version = self.model.next_version;
                self.model.next_version += 1;
                self.model.written.insert((key, version));
                let mut batch = keyed_batch(key, version, now);
                compact
                    .append_as_leader(&mut batch, LeaderEpoch(0))
                    .map_err(|x| e(&x))?;
                compact.update_high_watermark(compact.log_end_offset());
                self.model.acked.insert(key, version);
            }
            60..=64 => plain.roll().map_err(|x| e(&x))?,
            65..=69 => compact.roll().map_err(|x| e(&x))?,
            70..=74 => {
                // Retention never deletes the active segment.
                let active = plain.segments().last().map_or(0, |s| s.base_offset.0);
                self.model.may_drop_below = self.model.may_drop_below.max(active);
                plain.delete_old_segments().map_err(|x| e(&x))?;
                plain.delete_expired_files().map_err(|x| e(&x))?;
            }
            75..=78 => {
                let (lo, hi) = (plain.log_start_offset().0, plain.high_watermark().0);
                if hi > lo {
                    let to = self.rng.gen_range(lo..=hi);
                    self.model.may_drop_below = self.model.may_drop_below.max(to);
                    plain
                        .maybe_increment_log_start_offset(Offset(to))
                        .map_err(|x| e(&x))?;
                }
            }
            79..=83 => {
                cleaner.clean(compact).map_err(|x| e(&x))?;
                compact.delete_expired_files().map_err(|x| e(&x))?;
            }
            84..=86 => {
                // A follower truncating its divergent tail (above the
                // high watermark a leader would have told it).
                let (lo, hi) = (plain.log_start_offset().0, plain.log_end_offset().0);
                if hi > lo {
                    let to = self.rng.gen_range(lo..=hi);
                    // Only whole batches: truncate at a batch boundary.
                    let found = batches(plain)?;
                    if let Some(b) = found.iter().find(|b| b.base >= to) {
                        let to = b.base;
                        self.model.durable.retain(|base, _| *base < to);
                        plain.truncate_to(Offset(to)).map_err(|x| e(&x))?;
                        plain.update_high_watermark(plain.log_end_offset());
                        // The producer's newest batches may be gone: it
                        // starts over as a new producer.
                        self.new_producer();
                    }
                }
            }
            87..=91 => plain.flush().map_err(|x| e(&x))?,
            92..=96 => mgr.checkpoint_all().map_err(|x| e(&x))?,
            _ => mgr.run_background_once(),
        }
        Ok(())
    }

    /// One cycle: recover, judge, sometimes shut down cleanly and verify,
    /// then run the workload until the power goes.
    fn cycle(&mut self, n: u64) {
        let context = format!("cycle {n}");
        let mgr = self.recover(&context);
        self.check(&mgr, &context);
        if self.rng.gen_ratio(3, 4) {
            mgr.shutdown()
                .unwrap_or_else(|e| panic!("seed {}: {context}: shutdown: {e}", self.seed));
            drop(mgr);
            self.verify(&context);
            let sim = self.sim();
            let mgr = open(&self.root, sim, &self.clock).unwrap();
            self.check(&mgr, &format!("{context}, after a clean shutdown"));
            mgr.shutdown().unwrap();
        } else {
            drop(mgr);
        }
        // A new producer for every cycle, as a client reconnecting.
        self.new_producer();
        let sim = self.sim();
        let mgr = open(&self.root, sim.clone(), &self.clock).unwrap();
        let (plain, compact) = self.logs(&mgr);
        let cfg = CleanerConfig {
            dedupe_buffer_size: 1 << 20,
            io_buffer_size: 4096,
            ..CleanerConfig::default()
        };
        let mut cleaner = Cleaner::new(&cfg, mgr.clock().clone()).unwrap();
        sim.crash_at(self.rng.gen_range(1..300));
        let mut steps = 0;
        while !sim.crashed() && steps < 400 {
            steps += 1;
            let r = self.step(&mgr, &plain, &compact, &mut cleaner);
            if std::env::var_os("STRATA_POWER_LOSS_TRACE").is_some() {
                // Listed behind the simulator's back: a seam call here
                // would move the power loss.
                let mut files: Vec<String> = std::fs::read_dir(self.root.join("data/plain-0"))
                    .unwrap()
                    .map(|e| {
                        let e = e.unwrap();
                        let name = e.file_name().to_string_lossy().into_owned();
                        format!(
                            "{} {}",
                            name.trim_start_matches('0'),
                            e.metadata().unwrap().len()
                        )
                    })
                    .filter(|f| f.contains(".log"))
                    .collect();
                files.sort();
                eprintln!(
                    "  -> {r:?} plain {}..{} {files:?}",
                    plain.log_start_offset().0,
                    plain.log_end_offset().0
                );
            }
            if let Err(err) = r {
                if !sim.crashed() {
                    panic!(
                        "seed {}: {context}: step {steps} failed before the power loss: {err}",
                        self.seed
                    );
                }
            }
        }
        sim.crash_now();
        drop((plain, compact, cleaner, mgr));
        let how = sim.power_loss().unwrap();
        if std::env::var_os("STRATA_POWER_LOSS_TRACE").is_some() {
            eprintln!(
                "seed {} {context}: power loss after {steps} steps:\n{how}",
                self.seed
            );
        }
        self.crash_points += 1;
    }
}

/// A scratch directory, in memory (`/dev/shm`) where there is one: the
/// simulator models durability itself, and a disk file system's journal
/// would only slow thousands of crash points down.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn durable_appends_survive_power_loss_at_random_operations() {
    let crashes: u64 = std::env::var("STRATA_POWER_LOSS_CRASHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let first_seed: u64 = std::env::var("STRATA_POWER_LOSS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut total = 0;
    let mut seed = first_seed;
    while total < crashes {
        let tmp = scratch_dir();
        let mut run = Run::new(tmp.path().join("root"), seed);
        std::fs::create_dir_all(run.root.join("data")).unwrap();
        for n in 0..CYCLES_PER_SEED {
            run.cycle(n);
            if total + run.crash_points >= crashes {
                break;
            }
        }
        let mgr = run.recover("final");
        run.check(&mgr, "final");
        mgr.shutdown().unwrap();
        drop(mgr);
        run.verify("final");
        total += run.crash_points;
        seed += 1;
    }
    eprintln!("power-loss crash points: {total} (seeds {first_seed}..{seed})");
    assert!(total >= crashes);
}
