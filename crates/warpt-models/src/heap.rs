//! How the inference benchmarks' process treats freed memory.
//!
//! candle allocates a fresh buffer for every operation's output and frees
//! it soon after. With glibc's defaults, buffers above the mmap threshold
//! are mapped and unmapped each time, and the heap's top is trimmed back
//! to the kernel: every forward pass then pays page faults and zeroing for
//! memory it just gave away (measured here: batch-8 prefill of the small
//! model 22% slower). Inference engines keep their working memory
//! (llama.cpp preallocates its compute buffers; PyTorch caches on GPUs);
//! this does the same for candle and warpt's own engine by telling glibc
//! to keep freed memory. glibc maps anything above 32 MiB (the highest
//! threshold it takes) whatever the threshold, so mapping is turned off
//! too: a prefill of 8 x 2048 tokens has activations of 50-150 MB a
//! layer, and faulting them in afresh each pass put a third of a run's
//! samples in the kernel (bf16, small model, AMX host: TTFT 4.8-5.0 -> 4.4-4.7 s,
//! peak resident 1.45 -> 1.91 GB).

/// What [`keep_freed_memory`] set, for a result's details.
pub const SETTING: &str = "glibc malloc keeps freed memory (M_MMAP_THRESHOLD 32 MiB, M_MMAP_MAX 0, \
     M_TRIM_THRESHOLD 2 GiB)";

/// Asks the C allocator to keep freed memory in the process (glibc only;
/// elsewhere a no-op). Process-wide and idempotent.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tunables; any value is valid
    // input and failure leaves the defaults in place.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}
