//! The `threads` parameter: a rayon pool of that many threads, or the
//! global one (one thread per CPU) for 0.

use warpt_harness::BenchmarkError;

/// A pool of `threads` threads; `None` (the global pool) for 0.
pub fn pool(threads: usize) -> Result<Option<rayon::ThreadPool>, BenchmarkError> {
    if threads == 0 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map(Some)
        .map_err(|e| BenchmarkError::Failed(format!("thread pool: {e}")))
}

/// Runs `f` on `pool`, or on the global pool.
pub fn install<R: Send>(pool: &Option<rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Threads `pool` runs on.
pub fn count(pool: &Option<rayon::ThreadPool>) -> usize {
    pool.as_ref()
        .map_or(rayon::current_num_threads(), |p| p.current_num_threads())
}
