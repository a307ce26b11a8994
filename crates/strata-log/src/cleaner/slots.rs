//! The memory behind the offset map: one private anonymous mapping of the
//! configured size.
//!
//! Every put and get lands on a random slot of a 128 MiB (default) array,
//! so the cleaner is bound by TLB and cache misses. The mapping asks for
//! transparent huge pages (`MADV_HUGEPAGE`), which cuts the TLB misses.
//! Between cleanings only the prefix a pass used is emptied: written with
//! zeros while it is small (its pages stay resident for the thread's next
//! cleaning, which would otherwise fault them in and have the kernel clear
//! them), released with `MADV_DONTNEED` when it is large, instead of
//! writing 128 MiB of zeros as Kafka does.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Zero-initialised bytes in their own mapping; behaves as a `[u8]`.
pub(crate) struct SlotMemory {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned exclusively by this value, like a `Vec<u8>`'s
// buffer; shared access only reads through `&self`.
unsafe impl Send for SlotMemory {}
// SAFETY: as above; `&SlotMemory` only gives out `&[u8]`.
unsafe impl Sync for SlotMemory {}

impl SlotMemory {
    /// `len` zero bytes.
    ///
    /// # Panics
    /// When `len` is 0 or the kernel refuses the mapping (out of memory,
    /// as a `Vec` allocation would abort).
    pub(crate) fn new(len: usize) -> SlotMemory {
        assert!(len > 0, "empty slot memory");
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched. The result is checked against MAP_FAILED below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            panic!(
                "cannot map {len} bytes for the cleaner's offset map: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: `p..p+len` is the mapping just created; the advice only
        // changes how the kernel backs it. Failure is harmless (plain pages).
        unsafe {
            libc::madvise(p, len, libc::MADV_HUGEPAGE);
        }
        SlotMemory {
            ptr: NonNull::new(p.cast::<u8>()).expect("mmap does not return null"),
            len,
        }
    }

    /// Make bytes `[0, len)` zero again: written with zeros when `len` is
    /// at most `resident` (the pages stay mapped, so the next pass does not
    /// fault them in and have the kernel clear them again), otherwise
    /// released with [`Self::zero_prefix`].
    pub(crate) fn zero_prefix_resident_up_to(&mut self, len: usize, resident: usize) {
        let len = len.min(self.len);
        if len <= resident {
            self.deref_mut()[..len].fill(0);
        } else {
            self.zero_prefix(len);
        }
    }

    /// Make bytes `[0, len)` zero again, releasing their pages.
    pub(crate) fn zero_prefix(&mut self, len: usize) {
        let len = len.min(self.len);
        if len == 0 {
            return;
        }
        // SAFETY: `[ptr, ptr + len)` lies within our mapping and `ptr` is
        // page-aligned (mmap); the kernel rounds `len` up to whole pages,
        // which stay inside the mapping or its last page. MADV_DONTNEED on
        // a private anonymous mapping makes later reads see zero-fill pages.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), len, libc::MADV_DONTNEED) };
        if rc != 0 {
            self.deref_mut()[..len].fill(0);
        }
    }
}

impl Deref for SlotMemory {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` readable bytes owned by `self` for
        // its whole life (mapped in `new`, unmapped only in `drop`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for SlotMemory {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for SlotMemory {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping created in `new`; no slice
        // borrowed from it can outlive `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SlotMemory;

    #[test]
    fn starts_zeroed_and_zero_clears() {
        let mut m = SlotMemory::new(3 << 20);
        assert!(m.iter().all(|b| *b == 0));
        m[5] = 7;
        m[(3 << 20) - 1] = 9;
        assert_eq!((m[5], m[(3 << 20) - 1]), (7, 9));
        m.zero_prefix(usize::MAX);
        assert!(m.iter().all(|b| *b == 0));
    }
}
