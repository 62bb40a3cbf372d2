//! Giving the allocator's free memory back to the system after a phase
//! that allocated and freed a lot of it (replay, head truncation).

/// Returns the free pages inside the heap to the system (~1 ms for a head
/// of 200,000 series). Replay frees tens of MB of decode buffers at its
/// end, and head truncation the chunks and series it drops; glibc keeps
/// freed memory below the top of its heap mapped, so without this it would
/// stay in the process' RSS. Elsewhere than glibc on Linux a no-op.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks
    // and madvises away whole free pages; it touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}
