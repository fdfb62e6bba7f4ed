//! Duet benchmarking (Bulej et al., "Duet Benchmarking: Improving
//! Measurement Accuracy in the Cloud", ICPE 2020): A and B run at the same
//! time, each on its own half of the CPUs this process may use, released
//! together, so what the host does to one (another guest's burst, a lower
//! clock, a busy memory bus) it does to the other, and the ratio of a pair
//! cancels it. The halves are swapped from one pair to the next: two
//! vCPUs are rarely equal (one takes the interrupts, or shares its core
//! with another guest), and a side that kept the faster one would win by
//! it; the mean log ratio of two consecutive pairs
//! (`warpt_stats::couples`) cancels a fixed difference between the
//! halves.
//!
//! This module is the engine: the CPUs, running two things together, and
//! the rounds of two [`TrialSource`]s (`compare --rerun --duet`, `ci pr
//! --duet`). `warpt exec --duet` pairs single command runs the same way.

use std::sync::Barrier;

use crate::interleave::{Interleaved, Side, TrialEvent, TrialSource};

/// The CPUs each side runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpus {
    /// The base's (A's).
    pub a: Vec<usize>,
    /// The current side's (B's).
    pub b: Vec<usize>,
}

impl Cpus {
    /// The CPUs this process may run on, split into two halves (the first
    /// to A); an error with fewer than two.
    pub fn split() -> Result<Cpus, String> {
        Cpus::halves(&warpt_system::allowed_cpus())
    }

    /// `cpus` split into a first and a second half.
    pub fn halves(cpus: &[usize]) -> Result<Cpus, String> {
        if cpus.len() < 2 {
            return Err(format!(
                "--duet runs the two sides on different CPUs, and this process may use {} \
                 (give it at least 2)",
                cpus.len()
            ));
        }
        let (a, b) = cpus.split_at(cpus.len() / 2);
        Ok(Cpus {
            a: a.to_vec(),
            b: b.to_vec(),
        })
    }

    /// The halves the other way round.
    pub fn swapped(&self) -> Cpus {
        Cpus {
            a: self.b.clone(),
            b: self.a.clone(),
        }
    }

    /// The halves for pair (or round) `i`, 0-based: swapped every other one.
    pub fn for_pair(&self, i: usize) -> Cpus {
        if i.is_multiple_of(2) {
            self.clone()
        } else {
            self.swapped()
        }
    }

    /// `CPUs 0 | 1`: the two sets, for a report.
    pub fn describe(&self) -> String {
        let list = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        format!("CPUs {} | {}", list(&self.a), list(&self.b))
    }
}

/// Runs `a` on `cpus.a` and `b` on `cpus.b` at the same time: each from a
/// thread pinned to its CPUs (whatever it spawns inherits them), both
/// released by one barrier. An error when a thread could not be pinned.
pub fn together<R: Send>(
    a: impl FnOnce() -> R + Send,
    b: impl FnOnce() -> R + Send,
    cpus: &Cpus,
) -> Result<(R, R), String> {
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let first = s.spawn(|| pinned(a, &cpus.a, &barrier));
        let second = pinned(b, &cpus.b, &barrier);
        let first = first
            .join()
            .unwrap_or_else(|_| Err("a duet side's thread panicked".into()));
        Ok((first?, second?))
    })
}

/// Pins this thread to `cpus`, waits at `barrier` (whether or not the pin
/// held, so the other side is never left waiting), then runs `f`.
fn pinned<R>(f: impl FnOnce() -> R, cpus: &[usize], barrier: &Barrier) -> Result<R, String> {
    let ok = warpt_system::pin_current_thread_to(cpus);
    barrier.wait();
    if ok {
        Ok(f())
    } else {
        Err(format!("could not pin a duet side to CPUs {cpus:?}"))
    }
}

/// Runs `rounds` duet rounds of `base` and `current`, the CPUs swapped
/// every round; stops at the first failed trial, or before a round when
/// `stop` says so, keeping the complete rounds.
pub fn run_duet<A, B>(
    base: &mut A,
    current: &mut B,
    cpus: &Cpus,
    rounds: u32,
    on_event: &mut dyn FnMut(&TrialEvent<'_>),
    stop: &dyn Fn() -> bool,
) -> Interleaved
where
    A: TrialSource + Send,
    B: TrialSource + Send,
{
    let mut out = Interleaved::default();
    for i in 0..rounds {
        if stop() {
            break;
        }
        let round = i + 1;
        let event = |side| TrialEvent {
            round,
            rounds,
            side,
            second: false,
            outcome: None,
        };
        on_event(&event(Side::Base));
        on_event(&event(Side::Current));
        let on = cpus.for_pair(i as usize);
        let (ra, rb) = match together(|| base.run_trial(), || current.run_trial(), &on) {
            Ok(both) => both,
            Err(e) => {
                out.failure = Some(format!("round {round}: {e}"));
                return out;
            }
        };
        for (side, outcome) in [(Side::Base, &ra), (Side::Current, &rb)] {
            on_event(&TrialEvent {
                outcome: Some(outcome),
                second: side == Side::Current,
                ..event(side)
            });
        }
        match (ra, rb) {
            (Ok(a), Ok(b)) => {
                out.base.push(a);
                out.current.push(b);
            }
            (Err(e), _) => {
                out.failure = Some(format!("round {round}, base ({}): {e}", base.label()));
                return out;
            }
            (_, Err(e)) => {
                out.failure = Some(format!("round {round}, current ({}): {e}", current.label()));
                return out;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_cpus_split_in_halves_swap_every_pair_and_one_is_refused() {
        let c = Cpus::halves(&[0, 1]).unwrap();
        assert_eq!((c.a.clone(), c.b.clone()), (vec![0], vec![1]));
        assert_eq!(c.for_pair(0), c);
        assert_eq!(c.for_pair(1).a, vec![1]);
        assert_eq!(c.for_pair(2), c);
        let c = Cpus::halves(&[0, 1, 2, 3, 4]).unwrap();
        assert_eq!((c.a.len(), c.b.len()), (2, 3));
        assert!(Cpus::halves(&[3]).unwrap_err().contains("at least 2"));
        assert_eq!(
            Cpus::halves(&[0, 2, 4, 6]).unwrap().describe(),
            "CPUs 0,2 | 4,6"
        );
    }

    #[test]
    fn both_sides_run_at_once_each_on_its_cpus() {
        let Ok(cpus) = Cpus::split() else {
            return; // one CPU: refused, as tested above
        };
        // Each side waits (with a bound) for the other to have started:
        // run one after the other, the first would give up.
        let started = [
            std::sync::atomic::AtomicBool::new(false),
            std::sync::atomic::AtomicBool::new(false),
        ];
        let side = |me: usize| {
            started[me].store(true, std::sync::atomic::Ordering::SeqCst);
            let mut waited = 0;
            while !started[1 - me].load(std::sync::atomic::Ordering::SeqCst) && waited < 2000 {
                std::thread::sleep(std::time::Duration::from_millis(5));
                waited += 1;
            }
            let mine = warpt_system::allowed_cpus();
            (
                started[1 - me].load(std::sync::atomic::Ordering::SeqCst),
                mine,
            )
        };
        let ((a_saw_b, a_cpus), (b_saw_a, b_cpus)) =
            together(|| side(0), || side(1), &cpus).unwrap();
        assert!(a_saw_b && b_saw_a);
        assert_eq!(a_cpus, cpus.a);
        assert_eq!(b_cpus, cpus.b);
    }
}
