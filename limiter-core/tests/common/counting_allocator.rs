//! A global allocator that counts the bytes live, for the memory measurements (the
//! `memory` test and the `memory` bench). Bytes requested, not what malloc rounds them to.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

pub(crate) struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Bytes allocated and not yet freed.
pub(crate) fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

#[allow(unsafe_code)]
// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are added up.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
