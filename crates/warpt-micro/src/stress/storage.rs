//! Storage stress: write 1 MiB blocks of seeded data, read each back and
//! compare every byte.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::{StressConfig, StressOutcome, drive};
use crate::disk_io::file::{AlignedBuf, check_dir, create, fill_pattern, stamp};

const BLOCK: usize = 1 << 20;

fn dir(cfg: &StressConfig<'_>) -> PathBuf {
    match cfg.str("path") {
        "" => std::env::temp_dir(),
        p => PathBuf::from(p),
    }
}

pub(crate) fn check(cfg: &StressConfig<'_>) -> Result<(), String> {
    let size = (cfg.int("size_mb").max(1) as u64) << 20;
    check_dir(&dir(cfg), size).map_err(|e| format!("parameter 'path': {e}"))
}

pub(crate) fn run(cfg: &StressConfig<'_>) -> Result<StressOutcome, String> {
    check(cfg)?;
    let blocks = cfg.int("size_mb").max(1) as u64;
    let d = dir(cfg);
    let (file, mode) = match create(&d, true) {
        Ok(ok) => ok,
        Err(_) => create(&d, false)
            .map_err(|(e, _)| format!("cannot create a file in {}: {e}", d.display()))?,
    };
    let (seed, inject) = (cfg.seed, cfg.inject());
    let mut out = drive(
        cfg,
        1,
        "MB/s",
        |_| (AlignedBuf::new(BLOCK), AlignedBuf::new(BLOCK), 0u64),
        |_, (w, r, n), tally| {
            let block = *n % blocks;
            let generation = *n / blocks;
            *n += 1;
            let off = block * BLOCK as u64;
            fill_pattern(w.as_mut_slice(), seed ^ block ^ (generation << 32));
            stamp(w.as_mut_slice(), off, seed);
            if let Err(e) = file
                .write_at(w.as_slice(), off)
                .and_then(|_| file.read_at(r.as_mut_slice(), off))
            {
                tally.error(|| format!("block {block}: I/O error {e}"));
                return;
            }
            if inject && *n == 1 {
                r.as_mut_slice()[12345] ^= 0x10;
            }
            tally.work(2.0 * BLOCK as f64 / 1e6);
            tally.checked(1);
            if let Some(i) = w
                .as_slice()
                .iter()
                .zip(r.as_slice())
                .position(|(a, b)| a != b)
            {
                tally.error(|| format!("block {block} (offset {off}): byte {i} read back differs from what was written"));
            }
        },
    );
    if !mode.direct {
        out.warnings
            .push("O_DIRECT unavailable here: reads may come from the page cache".into());
    }
    Ok(out)
}
