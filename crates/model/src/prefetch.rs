//! Cache prefetch hints, for the loops that touch many series in turn
//! (WAL replay, committing an append batch, series lookup, a scrape's
//! cached series): each series
//! is several heap objects, and waiting on their cache misses one after
//! another is most of such a loop's time.

/// Asks the CPU to bring the cache line at `p` closer; a hint only, for
/// any address (null or dangling included).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline, and a prefetch never
    // dereferences its address (it cannot fault).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// [`prefetch`] of `lines` cache lines from `p`; nothing for null.
#[inline(always)]
pub fn prefetch_lines<T>(p: *const T, lines: usize) {
    if p.is_null() {
        return;
    }
    let p = p.cast::<u8>();
    for line in 0..lines {
        prefetch(p.wrapping_add(64 * line));
    }
}
