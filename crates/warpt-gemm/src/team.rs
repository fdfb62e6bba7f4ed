//! The threads a product runs on. The calling thread takes share 0 and a
//! team of helpers kept for the engine takes the rest, so starting a
//! product costs no thread's creation and, in a run of products (a decode
//! step's ~85), no wake-up either: a helper that finished a share waits
//! for the next one spinning, then yielding its CPU to anything else
//! runnable, and sleeps only after [`SPIN`] without work. (A rayon pool
//! slept between products: each one woke two threads and the caller, tens
//! of microseconds on a VM, a tenth of a decode step.) BLAS libraries do
//! the same (OpenBLAS's `THREAD_TIMEOUT`, OpenMP's `KMP_BLOCKTIME`).
//!
//! Every share runs at once on its own thread, so a share may wait at a
//! barrier for the others. When the team is busy (a product started while
//! another runs, as from two of the caller's threads), the product runs
//! on freshly spawned scoped threads instead: never two products on one
//! team, which would leave a barrier waiting for a thread running the
//! other.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a helper with no work keeps its CPU before sleeping: longer
/// than the gaps between a model's products, short enough that an idle
/// engine costs nothing measurable.
const SPIN: Duration = Duration::from_millis(2);

/// A share's work, as the caller passed it, its lifetime erased: valid
/// from the generation's start until the caller has seen every helper
/// finish (see [`run`]).
type Job = *const (dyn Fn(usize) + Sync);

/// What the caller and its helpers share.
struct Shared {
    /// Bumped by the caller to start a product.
    generation: AtomicU64,
    /// The product's work; written before `generation` is bumped, read
    /// after it is seen.
    job: UnsafeCell<Option<Job>>,
    /// Helpers finished with the current generation.
    done: AtomicUsize,
    /// Set by a helper whose share panicked.
    panicked: AtomicBool,
    /// Helpers asleep, and what wakes them.
    sleeping: AtomicUsize,
    /// Guards the sleep; see [`Shared::wait_for`].
    lock: Mutex<()>,
    /// Signalled when a generation starts with helpers asleep.
    wake: Condvar,
}

// SAFETY: `job` is written only by the caller holding the team's lock
// while no helper reads it (every helper of the previous generation has
// counted itself done), and read by helpers only after the Acquire load
// of the `generation` bump that followed the write; the rest is atomics
// and std's sync types.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer is only dereferenced under that
// protocol.
unsafe impl Send for Shared {}

/// A team of helpers and the lock a product holds while it runs on them.
struct Team {
    shared: Arc<Shared>,
    helpers: usize,
    busy: Mutex<()>,
}

/// The engine's teams, one per thread count asked for.
static TEAMS: Mutex<Vec<Arc<Team>>> = Mutex::new(Vec::new());

/// Runs `f(t)` for every `t` in `0..threads` at once, each on its own
/// thread, and returns when all have. A panic in any share is raised here
/// after every share has finished.
pub(crate) fn run(threads: usize, f: &(dyn Fn(usize) + Sync)) {
    if threads <= 1 {
        f(0);
        return;
    }
    if let Some(team) = team(threads)
        && let Ok(_alone) = team.busy.try_lock()
    {
        team.run(f);
        return;
    }
    std::thread::scope(|s| {
        for t in 1..threads {
            s.spawn(move || f(t));
        }
        f(0);
    });
}

impl Team {
    /// Runs `f` on the caller (share 0) and every helper; the caller
    /// holds `busy`.
    fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        let s = &*self.shared;
        // SAFETY (lifetime): the erased `f` is read by helpers only during
        // this generation, and this function does not return or unwind
        // before every helper has counted itself done below.
        let job: Job = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), Job>(f) };
        // SAFETY: no helper reads `job` now: all finished the last
        // generation (waited for below) and none starts before the bump.
        unsafe { *s.job.get() = Some(job) };
        s.done.store(0, Ordering::Relaxed);
        s.generation.fetch_add(1, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) > 0 {
            let _held = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = catch_unwind(AssertUnwindSafe(|| f(0)));
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < self.helpers {
            spins += 1;
            if spins < 1 << 12 {
                std::hint::spin_loop();
            } else {
                // More shares than free CPUs: let the helpers run.
                std::thread::yield_now();
            }
        }
        if let Err(payload) = mine {
            resume_unwind(payload);
        }
        if s.panicked.swap(false, Ordering::Relaxed) {
            panic!("a share of a warpt-gemm product panicked on a helper thread");
        }
    }
}

impl Shared {
    /// Waits until a generation after `seen` starts and returns it:
    /// spinning, then yielding, then asleep.
    fn wait_for(&self, seen: u64) -> u64 {
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            let now = self.generation.load(Ordering::Acquire);
            if now != seen {
                return now;
            }
            spins += 1;
            if spins < 1 << 10 {
                std::hint::spin_loop();
            } else if !spins.is_multiple_of(64) || started.elapsed() < SPIN {
                std::thread::yield_now();
            } else {
                let held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                self.sleeping.fetch_add(1, Ordering::SeqCst);
                let held = self
                    .wake
                    .wait_while(held, |_| self.generation.load(Ordering::SeqCst) == seen)
                    .unwrap_or_else(|e| e.into_inner());
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                drop(held);
            }
        }
    }
}

/// A helper's life: run share `index` of each generation as it starts.
fn helper(shared: &Shared, index: usize) {
    let mut seen = 0;
    loop {
        seen = shared.wait_for(seen);
        // SAFETY: written before the generation bump just seen (Acquire),
        // and valid until this helper counts itself done (see `Team::run`).
        let job = unsafe { *shared.job.get() };
        if let Some(job) = job {
            // SAFETY: as above.
            let f = unsafe { &*job };
            if catch_unwind(AssertUnwindSafe(|| f(index))).is_err() {
                shared.panicked.store(true, Ordering::Relaxed);
            }
        }
        shared.done.fetch_add(1, Ordering::Release);
    }
}

/// The team for `threads` shares (made the first time), if its helpers
/// could be started.
fn team(threads: usize) -> Option<Arc<Team>> {
    let mut teams = TEAMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = teams.iter().find(|t| t.helpers + 1 == threads) {
        return Some(t.clone());
    }
    let shared = Arc::new(Shared {
        generation: AtomicU64::new(0),
        job: UnsafeCell::new(None),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        sleeping: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
    });
    for index in 1..threads {
        let s = shared.clone();
        std::thread::Builder::new()
            .name(format!("warpt-gemm-{index}"))
            .spawn(move || helper(&s, index))
            .ok()?;
    }
    let team = Arc::new(Team {
        shared,
        helpers: threads - 1,
        busy: Mutex::new(()),
    });
    teams.push(team.clone());
    Some(team)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn every_share_runs_at_once_product_after_product() {
        // A barrier across the shares would hang if two ran on one thread;
        // 3 shares on this 2-CPU host take the yielding path too.
        for threads in [2, 3] {
            let barrier = Barrier::new(threads);
            let ran: Vec<AtomicUsize> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
            for _ in 0..2000 {
                run(threads, &|t| {
                    barrier.wait();
                    ran[t].fetch_add(1, Ordering::Relaxed);
                });
            }
            for r in &ran {
                assert_eq!(r.load(Ordering::Relaxed), 2000);
            }
        }
    }

    #[test]
    fn helpers_asleep_wake_for_the_next_product() {
        let ran = AtomicUsize::new(0);
        for _ in 0..3 {
            run(2, &|_| {
                ran.fetch_add(1, Ordering::Relaxed);
            });
            std::thread::sleep(SPIN * 3);
        }
        assert_eq!(ran.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn a_share_that_panics_on_a_helper_panics_the_caller_after_every_share() {
        let finished = AtomicUsize::new(0);
        let caught = catch_unwind(AssertUnwindSafe(|| {
            run(4, &|t| {
                if t == 2 {
                    panic!("share 2");
                }
                std::thread::sleep(Duration::from_millis(20));
                finished.fetch_add(1, Ordering::Relaxed);
            })
        }));
        assert!(caught.is_err());
        assert_eq!(finished.load(Ordering::Relaxed), 3);
        // The team still runs products.
        let ran = AtomicUsize::new(0);
        run(4, &|_| {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(ran.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn products_started_from_two_threads_at_once_both_complete() {
        let ran = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..500 {
                        let barrier = Barrier::new(2);
                        run(2, &|_| {
                            barrier.wait();
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(ran.load(Ordering::Relaxed), 2000);
    }
}
