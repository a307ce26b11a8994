//! A file system that simulates power loss, for crash tests.
//!
//! [`SimFs`] runs on real files below one root directory, so the engine's
//! handles, maps and reads behave as in production, and keeps a model of
//! what a power loss at this instant could leave on the disk:
//!
//! - **File data.** What [`FileSystem::sync`] saw is durable. Anything
//!   written later (through the seam or through a mapping) may be lost: at a
//!   crash each differing 4 KiB page of the durable range independently
//!   keeps its old or takes its new content, a file that grew keeps its
//!   durable length plus a random prefix of the growth (sometimes
//!   zero-filled, as a file system that committed the size before the data
//!   leaves it), and a file shrunk without a sync keeps either length.
//! - **Directory entries.** What [`FileSystem::sync_dir`] saw is durable.
//!   Creations, renames and removals made since are undone from the newest
//!   backwards: a random prefix of them survives, in order, as a journaling
//!   file system commits them.
//!
//! A crash is armed with [`SimFs::crash_at`] (the n-th seam operation fails
//! with EIO and so does every later one) or made with [`SimFs::crash_now`].
//! The test then drops every engine object and calls [`SimFs::power_loss`],
//! which rewrites the root to one state the model allows, chosen with the
//! seeded random generator. Reopen it with a new `SimFs` (or `StdFs`).
//!
//! `sync` and `sync_dir` only update the model (no real fsync): the model
//! is what a test's power loss obeys, and tests run thousands of them.
//!
//! The model checks that nothing bypassed the seam: a directory entry made
//! or removed behind its back makes [`SimFs::power_loss`] fail with a
//! message naming the entry.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{FileSystem, OpenMode, StdFs};

/// Page granularity of torn overwrites.
const PAGE: usize = 4096;

type Id = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    File(Id),
    Dir(Id),
}

#[derive(Debug, Clone)]
enum DirOp {
    Put(OsString, Node),
    Del(OsString),
    Move(OsString, OsString),
}

#[derive(Debug, Default)]
struct Dir {
    live: BTreeMap<OsString, Node>,
    durable: BTreeMap<OsString, Node>,
    pending: Vec<DirOp>,
}

impl Dir {
    fn apply(entries: &mut BTreeMap<OsString, Node>, op: &DirOp) {
        match op {
            DirOp::Put(name, node) => {
                entries.insert(name.clone(), *node);
            }
            DirOp::Del(name) => {
                entries.remove(name);
            }
            DirOp::Move(from, to) => {
                if let Some(node) = entries.remove(from) {
                    entries.insert(to.clone(), node);
                }
            }
        }
    }

    fn record(&mut self, op: DirOp) {
        Dir::apply(&mut self.live, &op);
        self.pending.push(op);
    }
}

/// The file contents at the instant of a crash.
#[derive(Debug, Default)]
struct Image {
    contents: HashMap<Id, Vec<u8>>,
}

#[derive(Debug)]
struct State {
    root: Id,
    next_id: Id,
    dirs: HashMap<Id, Dir>,
    /// Live files by the real inode number.
    by_ino: HashMap<u64, Id>,
    /// Durable content of files, by id; a missing id is empty.
    synced: HashMap<Id, Vec<u8>>,
    /// Content of files unlinked while a durable entry may still name them.
    orphans: HashMap<Id, Vec<u8>>,
    ops: u64,
    crash_at: Option<u64>,
    crashed: Option<Image>,
    rng: StdRng,
}

/// The kind of a seam operation, for [`SimFs::ops`] and logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimOp {
    /// `open`.
    Open,
    /// `write_at`.
    Write,
    /// `sync`.
    Sync,
    /// `set_len`.
    SetLen,
    /// `allocate`.
    Allocate,
    /// `rename`.
    Rename,
    /// `remove_file`.
    RemoveFile,
    /// `create_dir_all`.
    CreateDir,
    /// `remove_dir_all`.
    RemoveDir,
    /// `sync_dir`.
    SyncDir,
}

/// The power-loss simulating file system. See the module documentation.
#[derive(Debug)]
pub struct SimFs {
    root: PathBuf,
    state: Mutex<State>,
}

fn crashed_error() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

fn read_all(file: &File) -> io::Result<Vec<u8>> {
    let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = file.read_at(&mut buf[done..], done as u64)?;
        if n == 0 {
            buf.truncate(done);
            break;
        }
        done += n;
    }
    Ok(buf)
}

impl SimFs {
    /// Model the tree below `root` (created when missing), taking all of it
    /// as durable, with the random generator seeded by `seed`.
    ///
    /// # Errors
    /// Errors from reading the tree.
    pub fn new(root: &Path, seed: u64) -> io::Result<SimFs> {
        fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let mut st = State {
            root: 0,
            next_id: 1,
            dirs: HashMap::new(),
            by_ino: HashMap::new(),
            synced: HashMap::new(),
            orphans: HashMap::new(),
            ops: 0,
            crash_at: None,
            crashed: None,
            rng: StdRng::seed_from_u64(seed),
        };
        st.dirs.insert(0, Dir::default());
        scan(&mut st, 0, &root)?;
        Ok(SimFs {
            root,
            state: Mutex::new(st),
        })
    }

    /// The root directory this file system models.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fail the `n`-th seam operation from now (1 = the next one) and every
    /// later one, as a power loss at that instant.
    pub fn crash_at(&self, n: u64) {
        let mut st = self.lock();
        st.crash_at = Some(st.ops + n.max(1));
    }

    /// Lose power now: every later seam operation fails with EIO.
    pub fn crash_now(&self) {
        let mut st = self.lock();
        self.capture(&mut st);
    }

    /// Whether the power is lost.
    pub fn crashed(&self) -> bool {
        self.lock().crashed.is_some()
    }

    /// How many seam operations have run (including failed ones).
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Count one operation; fail it when the power is (now) lost.
    fn tick(&self, st: &mut State) -> io::Result<()> {
        st.ops += 1;
        if st.crashed.is_none() && st.crash_at.is_some_and(|n| st.ops >= n) {
            self.capture(st);
        }
        if st.crashed.is_some() {
            return Err(crashed_error());
        }
        Ok(())
    }

    /// Record the content of every file at the instant of the crash.
    fn capture(&self, st: &mut State) {
        if st.crashed.is_some() {
            return;
        }
        let mut image = Image::default();
        let mut stack = vec![(st.root, self.root.clone())];
        while let Some((dir, path)) = stack.pop() {
            for (name, node) in &st.dirs[&dir].live {
                let p = path.join(name);
                match *node {
                    Node::Dir(d) => stack.push((d, p)),
                    Node::File(id) => {
                        // A file that cannot be read (removed behind the
                        // seam) is caught by the check in `power_loss`.
                        if let Ok(bytes) = fs::read(&p) {
                            image.contents.insert(id, bytes);
                        }
                    }
                }
            }
        }
        for (id, bytes) in &st.orphans {
            image.contents.entry(*id).or_insert_with(|| bytes.clone());
        }
        st.crashed = Some(image);
    }

    /// Split `path` into its parent directory's id and its name, walking
    /// the live tree. `None` for paths outside the root.
    fn locate(&self, st: &State, path: &Path) -> Option<(Id, OsString)> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let mut comps: Vec<OsString> = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => comps.push(n.to_owned()),
                Component::CurDir => {}
                _ => return None,
            }
        }
        let name = comps.pop()?;
        let mut dir = st.root;
        for c in comps {
            match st.dirs[&dir].live.get(&c) {
                Some(Node::Dir(d)) => dir = *d,
                _ => return None,
            }
        }
        Some((dir, name))
    }

    fn dir_id(&self, st: &State, path: &Path) -> Option<Id> {
        if path == self.root {
            return Some(st.root);
        }
        let (parent, name) = self.locate(st, path)?;
        match st.dirs[&parent].live.get(&name) {
            Some(Node::Dir(d)) => Some(*d),
            _ => None,
        }
    }

    /// The id of the file behind an open handle.
    fn file_id(st: &State, file: &File) -> Option<Id> {
        let ino = file.metadata().ok()?.ino();
        st.by_ino.get(&ino).copied()
    }

    /// Keep the content of `id` if a durable entry may still name it.
    fn orphan(st: &mut State, id: Id, path: &Path) {
        if let Ok(bytes) = fs::read(path) {
            st.orphans.insert(id, bytes);
        }
        st.by_ino.retain(|_, v| *v != id);
    }

    /// Forget content no entry (live or durable) can name any more.
    fn prune(st: &mut State) {
        let mut named = HashSet::new();
        for d in st.dirs.values() {
            for n in d.live.values().chain(d.durable.values()) {
                if let Node::File(id) = n {
                    named.insert(*id);
                }
            }
            for op in &d.pending {
                if let DirOp::Put(_, Node::File(id)) = op {
                    named.insert(*id);
                }
            }
        }
        st.orphans.retain(|id, _| named.contains(id));
        st.synced.retain(|id, _| named.contains(id));
    }

    fn new_id(st: &mut State) -> Id {
        let id = st.next_id;
        st.next_id += 1;
        id
    }

    /// Rewrite the root as one state a power loss at the crash could have
    /// left, and return a description of the choices made (for failure
    /// messages). Call it after every handle into the tree is dropped.
    ///
    /// # Errors
    /// I/O errors while rewriting, or `Other` when the tree differs from the
    /// model (an operation bypassed the seam).
    pub fn power_loss(&self) -> io::Result<String> {
        let mut st = self.lock();
        self.capture(&mut st);
        self.check_model(&st)?;
        let image = st.crashed.take().unwrap_or_default();
        let mut log = String::new();
        let st = &mut *st;
        let tree = build(st, st.root, &image, &mut log, Path::new(""));
        for entry in fs::read_dir(&self.root)? {
            let p = entry?.path();
            if p.is_dir() {
                fs::remove_dir_all(&p)?;
            } else {
                fs::remove_file(&p)?;
            }
        }
        write_tree(&self.root, &tree)?;
        Ok(log)
    }

    /// Compare the live model with the real tree.
    fn check_model(&self, st: &State) -> io::Result<()> {
        let mut stack = vec![(st.root, self.root.clone())];
        while let Some((dir, path)) = stack.pop() {
            let mut real: Vec<OsString> = fs::read_dir(&path)?
                .map(|e| e.map(|e| e.file_name()))
                .collect::<io::Result<_>>()?;
            real.sort();
            let model: Vec<OsString> = st.dirs[&dir].live.keys().cloned().collect();
            if real != model {
                return Err(io::Error::other(format!(
                    "{} changed behind the file-system seam: on disk {real:?}, through the seam {model:?}",
                    path.display()
                )));
            }
            for (name, node) in &st.dirs[&dir].live {
                if let Node::Dir(d) = node {
                    stack.push((*d, path.join(name)));
                }
            }
        }
        Ok(())
    }
}

fn scan(st: &mut State, dir: Id, path: &Path) -> io::Result<()> {
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        let p = entry.path();
        let name = entry.file_name();
        let meta = fs::symlink_metadata(&p)?;
        let id = SimFs::new_id(st);
        let node = if meta.is_dir() {
            st.dirs.insert(id, Dir::default());
            scan(st, id, &p)?;
            Node::Dir(id)
        } else {
            st.by_ino.insert(meta.ino(), id);
            st.synced.insert(id, fs::read(&p)?);
            Node::File(id)
        };
        let d = st.dirs.get_mut(&dir).expect("scanned dir");
        d.live.insert(name.clone(), node);
        d.durable.insert(name, node);
    }
    Ok(())
}

enum Built {
    File(Vec<u8>),
    Dir(BTreeMap<OsString, Built>),
}

/// How many pending directory operations survive: none, all, or a random
/// prefix, each a third of the time.
fn surviving(rng: &mut StdRng, pending: usize) -> usize {
    if pending == 0 {
        return 0;
    }
    match rng.gen_range(0..3) {
        0 => 0,
        1 => pending,
        _ => rng.gen_range(0..=pending),
    }
}

fn build(
    st: &mut State,
    dir: Id,
    image: &Image,
    log: &mut String,
    at: &Path,
) -> BTreeMap<OsString, Built> {
    let (mut entries, pending) = {
        let d = &st.dirs[&dir];
        (d.durable.clone(), d.pending.clone())
    };
    let keep = surviving(&mut st.rng, pending.len());
    for op in &pending[..keep] {
        Dir::apply(&mut entries, op);
    }
    if keep < pending.len() {
        log.push_str(&format!("{}: undid {:?}\n", at.display(), &pending[keep..]));
    }
    let mut out = BTreeMap::new();
    for (name, node) in entries {
        let here = at.join(&name);
        let built = match node {
            Node::Dir(d) => Built::Dir(build(st, d, image, log, &here)),
            Node::File(id) => {
                let durable = st.synced.get(&id).cloned().unwrap_or_default();
                let current = image
                    .contents
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| durable.clone());
                let (bytes, how) = tear(&mut st.rng, &durable, &current);
                if !how.is_empty() {
                    log.push_str(&format!("{}: {how}\n", here.display()));
                }
                Built::File(bytes)
            }
        };
        out.insert(name, built);
    }
    out
}

/// One content a power loss may leave for a file whose durable content is
/// `durable` and whose content at the crash was `current`.
fn tear(rng: &mut StdRng, durable: &[u8], current: &[u8]) -> (Vec<u8>, String) {
    if durable == current {
        return (durable.to_vec(), String::new());
    }
    let mut how = Vec::new();
    let common = durable.len().min(current.len());
    let mut out = durable[..common].to_vec();
    let mut mixed = 0;
    for start in (0..common).step_by(PAGE) {
        let end = (start + PAGE).min(common);
        if durable[start..end] != current[start..end] && rng.gen_bool(0.5) {
            out[start..end].copy_from_slice(&current[start..end]);
            mixed += 1;
        }
    }
    if mixed > 0 {
        how.push(format!("{mixed} rewritten page(s) kept"));
    }
    if current.len() > durable.len() {
        let grown = current.len() - durable.len();
        let keep = rng.gen_range(0..=grown);
        if keep > 0 && rng.gen_ratio(1, 8) {
            out.resize(durable.len() + keep, 0);
            how.push(format!("grew by {keep} zero bytes of {grown}"));
        } else {
            out.extend_from_slice(&current[durable.len()..durable.len() + keep]);
            how.push(format!("kept {keep} of {grown} unsynced bytes"));
        }
    } else if current.len() < durable.len() {
        if rng.gen_bool(0.5) {
            out.extend_from_slice(&durable[common..]);
            how.push(format!("unsynced truncation to {} undone", current.len()));
        } else {
            how.push(format!("unsynced truncation to {} kept", current.len()));
        }
    }
    (out, how.join(", "))
}

fn write_tree(path: &Path, tree: &BTreeMap<OsString, Built>) -> io::Result<()> {
    for (name, built) in tree {
        let p = path.join(name);
        match built {
            Built::Dir(children) => {
                fs::create_dir(&p)?;
                write_tree(&p, children)?;
            }
            Built::File(bytes) => fs::write(&p, bytes)?,
        }
    }
    Ok(())
}

impl FileSystem for SimFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        let existed = fs::symlink_metadata(path).is_ok();
        let file = StdFs.open(path, mode)?;
        if !existed && mode.creates() {
            if let Some((dir, name)) = self.locate(&st, path) {
                let ino = file.metadata()?.ino();
                if let Some(old) = st.by_ino.get(&ino) {
                    return Err(io::Error::other(format!(
                        "{}: inode {ino} is still file {old} of the model: a removal bypassed the file-system seam",
                        path.display()
                    )));
                }
                let id = SimFs::new_id(&mut st);
                st.by_ino.insert(ino, id);
                st.dirs
                    .get_mut(&dir)
                    .expect("located dir")
                    .record(DirOp::Put(name, Node::File(id)));
            }
        }
        Ok(file)
    }

    fn write_at(&self, file: &File, path: &Path, buf: &[u8], pos: u64) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        StdFs.write_at(file, path, buf, pos)
    }

    fn sync(&self, file: &File, _path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        // No real fsync: durability is what the model records, and a test
        // runs thousands of crash points.
        if let Some(id) = SimFs::file_id(&st, file) {
            let bytes = read_all(file)?;
            st.synced.insert(id, bytes);
        }
        Ok(())
    }

    fn set_len(&self, file: &File, path: &Path, len: u64) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        StdFs.set_len(file, path, len)
    }

    fn allocate(&self, file: &File, path: &Path, offset: u64, len: u64) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        StdFs.allocate(file, path, offset, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        let replaced = match self.locate(&st, to) {
            Some((dir, name)) => match st.dirs[&dir].live.get(&name) {
                Some(Node::File(id)) => Some(*id),
                _ => None,
            },
            None => None,
        };
        if let Some(id) = replaced {
            SimFs::orphan(&mut st, id, to);
        }
        StdFs.rename(from, to)?;
        match (self.locate(&st, from), self.locate(&st, to)) {
            (Some((fd, fname)), Some((td, tname))) if fd == td => {
                st.dirs
                    .get_mut(&fd)
                    .expect("located dir")
                    .record(DirOp::Move(fname, tname));
            }
            (Some((fd, fname)), Some((td, tname))) => {
                let node = st.dirs[&fd].live.get(&fname).copied();
                st.dirs
                    .get_mut(&fd)
                    .expect("located dir")
                    .record(DirOp::Del(fname));
                if let Some(node) = node {
                    st.dirs
                        .get_mut(&td)
                        .expect("located dir")
                        .record(DirOp::Put(tname, node));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        let located = self.locate(&st, path);
        if let Some((dir, name)) = &located {
            if let Some(Node::File(id)) = st.dirs[dir].live.get(name).copied() {
                SimFs::orphan(&mut st, id, path);
            }
        }
        StdFs.remove_file(path)?;
        if let Some((dir, name)) = located {
            st.dirs
                .get_mut(&dir)
                .expect("located dir")
                .record(DirOp::Del(name));
        }
        Ok(())
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        StdFs.create_dir_all(path)?;
        let Ok(rel) = path.strip_prefix(&self.root) else {
            return Ok(());
        };
        let mut dir = st.root;
        for c in rel.components() {
            let Component::Normal(name) = c else { continue };
            let existing = st.dirs[&dir].live.get(name).copied();
            dir = match existing {
                Some(Node::Dir(d)) => d,
                Some(Node::File(_)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} is a file in the model", path.display()),
                    ))
                }
                None => {
                    let id = SimFs::new_id(&mut st);
                    st.dirs.insert(id, Dir::default());
                    st.dirs
                        .get_mut(&dir)
                        .expect("walked dir")
                        .record(DirOp::Put(name.to_owned(), Node::Dir(id)));
                    id
                }
            };
        }
        Ok(())
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        let located = self.locate(&st, path);
        if let Some((parent, name)) = &located {
            if let Some(Node::Dir(d)) = st.dirs[parent].live.get(name).copied() {
                // Keep every file below: the removal may be undone.
                let mut stack = vec![(d, path.to_path_buf())];
                while let Some((dir, p)) = stack.pop() {
                    let children: Vec<(OsString, Node)> = st.dirs[&dir]
                        .live
                        .iter()
                        .map(|(n, node)| (n.clone(), *node))
                        .collect();
                    for (n, node) in children {
                        match node {
                            Node::Dir(c) => stack.push((c, p.join(&n))),
                            Node::File(id) => SimFs::orphan(&mut st, id, &p.join(&n)),
                        }
                    }
                }
            }
        }
        StdFs.remove_dir_all(path)?;
        if let Some((parent, name)) = located {
            st.dirs
                .get_mut(&parent)
                .expect("located dir")
                .record(DirOp::Del(name));
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut st = self.lock();
        self.tick(&mut st)?;
        let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if let Some(id) = self.dir_id(&st, &canonical) {
            let d = st.dirs.get_mut(&id).expect("dir id");
            d.durable = d.live.clone();
            d.pending.clear();
            SimFs::prune(&mut st);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
