//! The bound on one allocation (1 GiB), kept by each target itself.
//!
//! Under ASan, libFuzzer's `-malloc_limit_mb` sees every allocation through the sanitizer's
//! malloc hooks. A build without a sanitizer (`cargo fuzz build -s none`) has no such hooks
//! and the flag does nothing, so every target's global allocator checks the size itself: an
//! allocation (or reallocation) of more than [`LIMIT`] bytes writes one line to stderr and
//! aborts, which libFuzzer reports as a crash and saves the input. The check is one
//! comparison per allocation; nothing else changes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

/// Largest single allocation a target may make: 1 GiB, as `-malloc_limit_mb=1024`.
pub const LIMIT: usize = 1 << 30;

/// [`System`], refusing allocations over [`LIMIT`].
pub struct Bounded;

fn check(size: usize) {
    if size > LIMIT {
        // Stderr is unbuffered: this writes without allocating.
        let _ = std::io::stderr().write_all(b"==tempora-fuzz== an allocation of more than 1 GiB\n");
        std::process::abort();
    }
}

// SAFETY: every call is forwarded to `System` with the caller's arguments unchanged, after
// a size check that either returns or aborts the process.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        check(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        check(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;
