//! A team of pinned threads that run kernels in lock-step rounds.
//!
//! Why not rayon: STREAM-style measurements need each thread to own the same
//! chunk of memory for the whole run (it touched it first, so its pages are
//! local), to stay on one CPU, and to start and stop each round together so
//! one timer on the leader brackets the whole parallel kernel, as OpenMP's
//! fork/join does in the C originals. A work-stealing pool guarantees none of
//! that.
//!
//! Threads wait at a spinning barrier: with one thread per CPU the wake-up
//! costs nanoseconds instead of a futex round trip. If there are more
//! threads than CPUs the spinner yields, so an oversubscribed team still
//! makes progress.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The command that ends every follower's loop.
const STOP: u64 = u64::MAX;

/// A reusable barrier for a fixed number of threads that spins, then yields.
struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    fn new(parties: usize) -> Self {
        SpinBarrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < 20_000 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The leader's handle: starts rounds and times them.
pub struct Rounds<'a, S> {
    state: &'a mut S,
    barrier: &'a SpinBarrier,
    command: &'a AtomicU64,
    kernel: &'a (dyn Fn(usize, &mut S, u64) + Sync),
}

impl<S> Rounds<'_, S> {
    /// Runs `command` on every thread at once and returns the wall time from
    /// the moment it was issued to the moment the last thread finished. The
    /// clock starts before the start barrier: with more threads than CPUs a
    /// follower can run its whole part while the leader waits its turn
    /// there, and a clock started after it would miss that part.
    pub fn round(&mut self, command: u64) -> Duration {
        debug_assert_ne!(command, STOP);
        self.command.store(command, Ordering::Relaxed);
        let start = Instant::now();
        self.barrier.wait();
        (self.kernel)(0, self.state, command);
        self.barrier.wait();
        start.elapsed()
    }
}

/// Runs a team of `cpus.len()` threads, thread `i` pinned to `cpus[i]`.
///
/// Each thread builds its state with `init(i)` after pinning (so memory it
/// allocates and fills is first touched there). Thread 0 then runs `leader`,
/// which drives rounds; in each round every thread calls
/// `kernel(i, &mut state, command)`. Returns the leader's result and every
/// thread's final state, in thread order.
pub fn run_team<S, R>(
    cpus: &[usize],
    init: impl Fn(usize) -> S + Sync,
    kernel: impl Fn(usize, &mut S, u64) + Sync,
    leader: impl FnOnce(&mut Rounds<'_, S>) -> R + Send,
) -> (R, Vec<S>)
where
    S: Send,
    R: Send,
{
    assert!(!cpus.is_empty(), "a team needs at least one CPU");
    let n = cpus.len();
    let barrier = SpinBarrier::new(n);
    let command = AtomicU64::new(STOP);
    let (init, kernel) = (&init, &kernel);
    let (barrier, command) = (&barrier, &command);
    std::thread::scope(|scope| {
        let followers: Vec<_> = (1..n)
            .map(|i| {
                let cpu = cpus[i];
                scope.spawn(move || {
                    warpt_system::pin_current_thread(cpu);
                    let mut state = init(i);
                    barrier.wait(); // everyone initialised
                    loop {
                        barrier.wait();
                        let c = command.load(Ordering::Relaxed);
                        if c == STOP {
                            break;
                        }
                        kernel(i, &mut state, c);
                        barrier.wait();
                    }
                    state
                })
            })
            .collect();
        let lead = scope.spawn(move || {
            warpt_system::pin_current_thread(cpus[0]);
            let mut state = init(0);
            barrier.wait();
            let result = {
                let mut rounds = Rounds {
                    state: &mut state,
                    barrier,
                    command,
                    kernel,
                };
                leader(&mut rounds)
            };
            command.store(STOP, Ordering::Relaxed);
            barrier.wait();
            (result, state)
        });
        let (result, lead_state) = match lead.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut states = vec![lead_state];
        for f in followers {
            match f.join() {
                Ok(s) => states.push(s),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        (result, states)
    })
}

/// A team of `threads` that the OS schedules freely (no pinning): for work
/// that blocks on I/O, where pinning would only get in the way.
pub fn unpinned(threads: usize) -> Vec<usize> {
    // An out-of-range CPU makes pin_current_thread decline, leaving the thread free.
    vec![usize::MAX; threads.max(1)]
}

/// The CPUs a team of `threads` should use: the first `threads` CPUs this
/// process may run on, or all of them for 0. More threads than CPUs wrap
/// around (oversubscription is allowed but measured as such).
pub fn team_cpus(threads: usize) -> Vec<usize> {
    let allowed = warpt_system::allowed_cpus();
    let n = if threads == 0 { allowed.len() } else { threads };
    (0..n).map(|i| allowed[i % allowed.len()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_runs_every_round_on_its_own_state() {
        let cpus = team_cpus(3);
        let (rounds_run, states) = run_team(
            &cpus,
            |i| vec![i as u64],
            |i, s: &mut Vec<u64>, c| s.push(c * 10 + i as u64),
            |r| {
                for c in 1..=4 {
                    assert!(r.round(c) > Duration::ZERO);
                }
                4
            },
        );
        assert_eq!(rounds_run, 4);
        for (i, s) in states.iter().enumerate() {
            let want: Vec<u64> = std::iter::once(i as u64)
                .chain((1..=4).map(|c| c * 10 + i as u64))
                .collect();
            assert_eq!(*s, want);
        }
    }
}
