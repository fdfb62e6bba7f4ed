//! The threads a product runs on: a rayon pool of exactly that many
//! threads kept for the engine alone, so starting a product costs a
//! wake-up, not a thread's creation (tens of microseconds on a VM, a tenth
//! of a 384-order product). Every thread of the pool runs the product's
//! closure at once, so the closure may wait at a barrier for the others.
//! When the pool is busy (a product started while another runs, as from
//! two threads of the caller's), the product runs on freshly spawned
//! scoped threads instead: never two products on one pool, which would
//! leave a barrier waiting for a thread that is running the other.

use std::sync::{Arc, Mutex};

/// The engine's pools, one per thread count asked for, each with a lock
/// held while a product runs on it.
type Pools = Mutex<Vec<(usize, Arc<(rayon::ThreadPool, Mutex<()>)>)>>;

static POOLS: Pools = Mutex::new(Vec::new());

/// Runs `f(t)` for every `t` in `0..threads` at once, each on its own
/// thread, and returns when all have.
pub(crate) fn run(threads: usize, f: &(dyn Fn(usize) + Sync)) {
    if threads <= 1 {
        f(0);
        return;
    }
    if let Some(entry) = pool(threads)
        && let Ok(_alone) = entry.1.try_lock()
    {
        entry.0.broadcast(|ctx| f(ctx.index()));
        return;
    }
    std::thread::scope(|s| {
        for t in 1..threads {
            s.spawn(move || f(t));
        }
        f(0);
    });
}

/// The pool of `threads` threads (made the first time), if it can be made.
fn pool(threads: usize) -> Option<Arc<(rayon::ThreadPool, Mutex<()>)>> {
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == threads) {
        return Some(p.clone());
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("warpt-gemm-{i}"))
        .build()
        .ok()?;
    let entry = Arc::new((built, Mutex::new(())));
    pools.push((threads, entry.clone()));
    Some(entry)
}
