//! RAM stress: pattern tests over a share of free memory, split between
//! threads that each own (and first touch) their part.

use super::{StressConfig, StressOutcome, drive};

/// How many bytes to test and how many are available, or why not.
pub(crate) fn plan(cfg: &StressConfig<'_>) -> Result<(u64, u64), String> {
    let available = warpt_system::memory_quick().available_bytes;
    let mb = cfg.int("mb");
    let fraction = cfg.float("fraction");
    let bytes = if mb > 0 {
        (mb as u64) << 20
    } else {
        if !(fraction > 0.0 && fraction <= 0.9) {
            return Err(format!(
                "parameter 'fraction' must be in (0, 0.9], not {fraction}"
            ));
        }
        (available as f64 * fraction) as u64
    };
    if bytes as f64 > 0.9 * available as f64 {
        return Err(format!(
            "stress ram would take {} MiB but only {} MiB is available; it refuses more than 90% ({} MiB)",
            bytes >> 20,
            available >> 20,
            (available as f64 * 0.9) as u64 >> 20
        ));
    }
    Ok((bytes.max(1 << 20), available))
}

fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    x |= 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

pub(crate) fn run(cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    let (bytes, _) = plan(cfg)?;
    let threads = crate::team::team_cpus(cfg.int("threads").max(0) as usize).len();
    let words = (bytes / 8 / threads as u64) as usize;
    let (seed, inject) = (cfg.seed, cfg.inject());
    Ok(drive(
        cfg,
        threads,
        "GB/s",
        |_| (vec![0u64; words], 0u64),
        |t, (mem, pass), tally| {
            *pass += 1;
            let n = mem.len() as u64;
            let corrupt = |mem: &mut Vec<u64>| {
                if inject && t == 0 && *pass == 1 && !mem.is_empty() {
                    let i = mem.len() / 2;
                    mem[i] ^= 1 << 3;
                }
            };
            let bad = |i: usize, want: u64, got: u64, test: &str| {
                tally.error(|| format!("thread {t} pass {pass} {test}: word {i} expected {want:#018x}, read {got:#018x}"));
            };
            match *pass % 3 {
                // Walking ones: one bit set, moving a position each pass; odd words inverted.
                1 => {
                    let p = 1u64 << ((*pass / 3) % 64);
                    for (i, w) in mem.iter_mut().enumerate() {
                        *w = if i % 2 == 0 { p } else { !p };
                    }
                    corrupt(mem);
                    for (i, &w) in mem.iter().enumerate() {
                        let want = if i % 2 == 0 { p } else { !p };
                        if w != want {
                            bad(i, want, w, "walking ones");
                        }
                    }
                    tally.work(2.0 * n as f64 * 8.0 / 1e9);
                }
                // Random data from a seed, regenerated to check.
                2 => {
                    let s = seed ^ (*pass << 8) ^ t as u64;
                    let mut g = xorshift(s);
                    for w in mem.iter_mut() {
                        *w = g();
                    }
                    corrupt(mem);
                    let mut g = xorshift(s);
                    for (i, &w) in mem.iter().enumerate() {
                        let want = g();
                        if w != want {
                            bad(i, want, w, "random");
                        }
                    }
                    tally.work(2.0 * n as f64 * 8.0 / 1e9);
                }
                // Moving inversions: fill, then check-and-invert upwards, then downwards.
                _ => {
                    let p = 0x5555_5555_5555_5555u64;
                    mem.fill(p);
                    corrupt(mem);
                    for (i, w) in mem.iter_mut().enumerate() {
                        if *w != p {
                            bad(i, p, *w, "moving inversions (up)");
                        }
                        *w = !p;
                    }
                    for (i, w) in mem.iter_mut().enumerate().rev() {
                        if *w != !p {
                            bad(i, !p, *w, "moving inversions (down)");
                        }
                        *w = p;
                    }
                    tally.work(5.0 * n as f64 * 8.0 / 1e9);
                }
            }
            tally.checked(n);
        },
    ))
}
