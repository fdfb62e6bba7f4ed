//! What the pepbench benchmarks share around the harness: timing one piece
//! of work per sample, and the value sets of their common parameters.

use std::time::Instant;

use warpt_harness::{Measure, MeasurePolicy, Measurement, RunContext, SeriesDef};

/// Model presets, precisions and devices: the values `model`,
/// `precision` and `device` take wherever they appear (the encoders'
/// presets; the decoders' are [`LLM_MODELS`]).
pub const MODELS: &[&str] = &["tiny", "small", "base", "large", "xl", "xxl"];
/// The decoders' presets ([`crate::model::Preset`]): [`MODELS`] and the
/// ~34 M `mini`.
pub const LLM_MODELS: &[&str] = &crate::model::Preset::NAMES;
/// See [`MODELS`].
pub const PRECISIONS: &[&str] = &["f32", "bf16", "f16", "q8_0", "q4_0"];
/// The unquantized [`PRECISIONS`]: what the encoder runs in.
pub const FLOAT_PRECISIONS: &[&str] = &["f32", "bf16", "f16"];
/// See [`MODELS`].
pub const DEVICES: &[&str] = &["cpu", "cuda", "metal"];

/// The memory available for a large allocation, read before it is made: a
/// run fits when it needs at most 80% of it (the rest is the OS's and other
/// processes'); unreadable memory (0) lets everything through.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Bytes available now (`MemAvailable`).
    pub available: u64,
}

impl Budget {
    /// The memory available now.
    pub fn now() -> Self {
        Budget {
            available: warpt_system::memory_quick().available_bytes,
        }
    }

    /// Whether `need` bytes fit.
    pub fn fits(self, need: u64) -> bool {
        self.available == 0 || need <= self.available / 10 * 8
    }
}

/// Bytes in GiB, for messages.
pub fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Samples `work` for the whole of the benchmark's time: every series gets
/// the wall time of one call (they describe the same work in different
/// units). The first error is returned once sampling ends.
pub fn time_each<T>(
    measure: &mut Measure<'_>,
    ctx: &RunContext,
    label: &str,
    defs: &[SeriesDef],
    mut work: impl FnMut() -> Result<T, String>,
) -> Result<Measurement, String> {
    let mut failure = None;
    let m = measure.run(&MeasurePolicy::share_of(ctx, 1), label, defs, |out| {
        let start = Instant::now();
        match work() {
            Ok(v) => {
                std::hint::black_box(v);
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
        out.fill(start.elapsed().as_secs_f64());
    });
    failure.map_or(Ok(m), Err)
}
