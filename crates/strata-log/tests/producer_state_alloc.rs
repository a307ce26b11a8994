//! Guards the cost of producer state on the append path: for a known
//! idempotent producer, the duplicate check, validation and commit of a batch
//! must not allocate (the issue allows producer-state work to add at most 10%
//! to an append; a heap allocation per batch would already eat much of that).
//! Allocations are counted per thread by a wrapping global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use strata_log::batch::{BatchBuilder, BatchView};
use strata_log::{AppendOrigin, ProducerStateManager, ProducerUpdates};
use strata_log::{Offset, ProducerEpoch, ProducerId, Timestamp, TopicPartition};
use tempfile::TempDir;

struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is a const-initialised thread-local without a destructor, so
// touching it never allocates or re-enters the allocator.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const BATCHES: usize = 200;
const RECORDS: i32 = 10;

/// `BATCHES` consecutive idempotent batches of producer 42, offsets assigned.
fn idempotent_batches() -> Vec<Vec<u8>> {
    (0..BATCHES as i32)
        .map(|i| {
            let mut b = BatchBuilder::new(Offset((i * RECORDS) as i64)).producer(
                ProducerId(42),
                ProducerEpoch(0),
                i * RECORDS,
            );
            for _ in 0..RECORDS {
                b.append(Timestamp(1_000), Some(b"key"), Some(b"value"), &[]);
            }
            b.build()
        })
        .collect()
}

fn known_producer(dir: &TempDir, first: &[u8]) -> ProducerStateManager {
    let mut psm = ProducerStateManager::new(
        &strata_log::fs::StdFs::shared(),
        dir.path(),
        TopicPartition::new("t", 0),
        86_400_000,
    )
    .unwrap();
    let batch = BatchView::parse(first).unwrap();
    let mut updates = ProducerUpdates::new();
    psm.validate_batch(&mut updates, &batch, AppendOrigin::Client)
        .unwrap();
    assert!(psm.apply_updates(updates).is_empty());
    psm.update_map_end_offset(batch.next_offset());
    psm
}

#[test]
fn leader_append_path_does_not_allocate() {
    let dir = TempDir::new().unwrap();
    let batches = idempotent_batches();
    let mut psm = known_producer(&dir, &batches[0]);

    let before = allocations();
    for bytes in &batches[1..] {
        let batch = BatchView::parse(bytes).unwrap();
        assert!(psm.find_duplicate_batch(&batch).is_none());
        let mut updates = ProducerUpdates::new();
        psm.validate_batch(&mut updates, &batch, AppendOrigin::Client)
            .unwrap();
        let completed = psm.apply_updates(updates);
        assert!(completed.is_empty());
        psm.update_map_end_offset(batch.next_offset());
    }
    let during = allocations() - before;
    assert_eq!(during, 0, "allocations on the idempotent append path");

    let last = psm.last_entry(ProducerId(42)).unwrap();
    assert_eq!(last.last_seq(), BATCHES as i32 * RECORDS - 1);
    assert_eq!(last.batch_metadata().len(), 5);
}

#[test]
fn duplicate_answer_does_not_allocate() {
    let dir = TempDir::new().unwrap();
    let batches = idempotent_batches();
    let mut psm = known_producer(&dir, &batches[0]);
    for bytes in &batches[1..5] {
        let batch = BatchView::parse(bytes).unwrap();
        let mut info = psm.prepare_update(batch.producer_id(), AppendOrigin::Client);
        info.append_batch(&batch).unwrap();
        psm.update(info);
    }
    let before = allocations();
    for bytes in &batches[..5] {
        let dup = psm.find_duplicate_batch(&BatchView::parse(bytes).unwrap());
        assert!(dup.is_some());
    }
    assert_eq!(allocations() - before, 0);
}

#[test]
fn the_counter_sees_allocations() {
    let before = allocations();
    let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
    assert!(allocations() > before);
    drop(v);
}
