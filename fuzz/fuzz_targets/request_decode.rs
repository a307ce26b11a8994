//! Arbitrary bytes as a request frame (after its size prefix) through the
//! broker's decoder: API key and version checks, the request header and the
//! body of every API. Any panic is a bug, and so is an allocation out of
//! proportion to the input: while an input decodes, one allocation larger
//! than 64 times the input plus 1 MiB aborts the process, which libFuzzer
//! reports as a crash with the input saved (a 22-byte request declaring
//! 0x7fffffff topics used to make the decoder ask for ~154 GB).

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use libfuzzer_sys::fuzz_target;

/// Largest single allocation allowed right now (`usize::MAX` between inputs).
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

struct Bounded;

fn check(size: usize) {
    if size > LIMIT.load(Ordering::Relaxed) {
        // No message: formatting could allocate inside the allocator.
        std::process::abort();
    }
}

// SAFETY: forwards every call to the system allocator unchanged after the check.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

fuzz_target!(|data: &[u8]| {
    let frame = bytes::Bytes::copy_from_slice(data);
    LIMIT.store(64 * data.len() + (1 << 20), Ordering::Relaxed);
    let decoded = strata_broker::decode_request(frame);
    LIMIT.store(usize::MAX, Ordering::Relaxed);
    if let Ok((header, request)) = decoded {
        // Whatever decodes must encode again at the version it came with.
        let mut out = bytes::BytesMut::new();
        let _ = request.encode(&mut out, header.request_api_version);
    }
});
