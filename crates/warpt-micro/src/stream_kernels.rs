//! The four STREAM kernels, compiled for the widest vector unit available
//! and chosen at run time (warpt ships one binary for every x86-64 CPU, so
//! it cannot rely on `-C target-cpu=native` the way a C build of STREAM on
//! the machine itself does).
//!
//! The loops are written as in STREAM (`c = a`, `b = s*c`, `c = a + b`,
//! `a = b + s*c`); the compiler vectorises them. Rust never contracts
//! `b + s*c` into a fused multiply-add, so results equal STREAM's scalar
//! reference bit for bit.

/// Which STREAM kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `c[i] = a[i]`: 16 bytes per element.
    Copy,
    /// `b[i] = s * c[i]`: 16 bytes per element.
    Scale,
    /// `c[i] = a[i] + b[i]`: 24 bytes per element.
    Add,
    /// `a[i] = b[i] + s * c[i]`: 24 bytes per element.
    Triad,
}

impl Kernel {
    /// In STREAM's order.
    pub const ALL: [Kernel; 4] = [Kernel::Copy, Kernel::Scale, Kernel::Add, Kernel::Triad];

    /// The tag value used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
        }
    }

    /// Bytes STREAM counts per element (reads plus writes, no write-allocate).
    pub fn bytes_per_element(self) -> usize {
        match self {
            Kernel::Copy | Kernel::Scale => 16,
            Kernel::Add | Kernel::Triad => 24,
        }
    }
}

/// One thread's share of the three arrays.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Array `a`.
    pub a: Vec<f64>,
    /// Array `b`.
    pub b: Vec<f64>,
    /// Array `c`.
    pub c: Vec<f64>,
}

impl Chunk {
    /// Allocates and first-touches `len` elements of each array with
    /// STREAM's initial values (a = 1, b = 2, c = 0).
    pub fn new(len: usize) -> Self {
        Chunk {
            a: vec![1.0; len],
            b: vec![2.0; len],
            c: vec![0.0; len],
        }
    }

    /// Resets the values in place (same pages, same owner thread).
    pub fn reset(&mut self) {
        self.a.fill(1.0);
        self.b.fill(2.0);
        self.c.fill(0.0);
    }
}

macro_rules! kernels {
    ($chunk:expr, $kernel:expr, $s:expr) => {{
        let Chunk { a, b, c } = $chunk;
        let s = $s;
        match $kernel {
            Kernel::Copy => {
                for (c, a) in c.iter_mut().zip(a.iter()) {
                    *c = *a;
                }
            }
            Kernel::Scale => {
                for (b, c) in b.iter_mut().zip(c.iter()) {
                    *b = s * *c;
                }
            }
            Kernel::Add => {
                for ((c, a), b) in c.iter_mut().zip(a.iter()).zip(b.iter()) {
                    *c = *a + *b;
                }
            }
            Kernel::Triad => {
                for ((a, b), c) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                    *a = *b + s * *c;
                }
            }
        }
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    kernels!(chunk, kernel, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    kernels!(chunk, kernel, s)
}

fn run_baseline(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    kernels!(chunk, kernel, s)
}

/// The vector width the kernels use on this CPU.
pub fn isa_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "avx2";
        }
    }
    "baseline"
}

/// Runs `kernel` over `chunk` with scalar `s`.
pub fn run(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { run_avx512(chunk, kernel, s) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { run_avx2(chunk, kernel, s) };
        }
    }
    run_baseline(chunk, kernel, s)
}

/// STREAM's scalar reference: the values every element of a, b and c must
/// hold after `passes` passes of the four kernels from the initial values.
pub fn expected(passes: u64, s: f64) -> (f64, f64, f64) {
    let (mut a, mut b, mut c) = (1.0f64, 2.0f64, 0.0f64);
    for _ in 0..passes {
        c = a;
        b = s * c;
        c = a + b;
        a = b + s * c;
    }
    (a, b, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_match_the_scalar_reference() {
        let mut chunk = Chunk::new(1003);
        for _ in 0..5 {
            for k in Kernel::ALL {
                run(&mut chunk, k, 3.0);
            }
        }
        let (a, b, c) = expected(5, 3.0);
        assert!(chunk.a.iter().all(|&x| x == a));
        assert!(chunk.b.iter().all(|&x| x == b));
        assert!(chunk.c.iter().all(|&x| x == c));
        assert_eq!(expected(1, 3.0), (15.0, 3.0, 4.0));
    }
}
