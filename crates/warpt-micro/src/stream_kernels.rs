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

// The loops take their arrays as function arguments: LLVM knows distinct
// `&mut [f64]` and `&[f64]` arguments cannot alias (and keeps that knowledge
// when it inlines them), so it vectorises without runtime overlap checks.
// Written over locals of one function, the same loops stayed scalar.
#[inline(always)]
fn copy(c: &mut [f64], a: &[f64]) {
    for (c, a) in c.iter_mut().zip(a) {
        *c = *a;
    }
}

#[inline(always)]
fn scale(b: &mut [f64], c: &[f64], s: f64) {
    for (b, c) in b.iter_mut().zip(c) {
        *b = s * *c;
    }
}

#[inline(always)]
fn add(c: &mut [f64], a: &[f64], b: &[f64]) {
    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
        *c = *a + *b;
    }
}

#[inline(always)]
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
        *a = *b + s * *c;
    }
}

macro_rules! kernels {
    ($chunk:expr, $kernel:expr, $s:expr) => {{
        let Chunk { a, b, c } = $chunk;
        match $kernel {
            Kernel::Copy => copy(c, a),
            Kernel::Scale => scale(b, c, $s),
            Kernel::Add => add(c, a, b),
            Kernel::Triad => triad(a, b, c, $s),
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

/// Streaming-store (non-temporal) variants: each loop writes its destination
/// with `movntpd`, which bypasses the cache and skips the read-for-ownership
/// a normal store costs. STREAM's byte counts stay the same (STREAM never
/// counts that extra read); this is how vendor-compiled STREAM builds run
/// (`-qopt-streaming-stores`). Head and tail elements up to the vector
/// alignment are stored normally.
#[cfg(target_arch = "x86_64")]
macro_rules! nt_kernels {
    ($chunk:expr, $kernel:expr, $s:expr, $w:literal, $set1:path, $loadu:path, $stream:path, $mul:path, $add:path) => {{
        let Chunk { a, b, c } = $chunk;
        let n = a.len();
        assert!(
            b.len() == n && c.len() == n,
            "chunk arrays differ in length"
        );
        let s = $s;
        let (pa, pb, pc) = (a.as_mut_ptr(), b.as_mut_ptr(), c.as_mut_ptr());
        // SAFETY: every index is < n, the common length of the three arrays;
        // vector accesses cover [i, i + $w) with i + $w <= n; streamed
        // destinations are aligned to the vector width by the head loop.
        unsafe {
            let sv = $set1(s);
            let head = |dst: *mut f64| {
                let misalign = (dst as usize) % ($w * 8);
                if misalign == 0 {
                    0
                } else {
                    (($w * 8 - misalign) / 8).min(n)
                }
            };
            match $kernel {
                Kernel::Copy => {
                    let h = head(pc);
                    for i in 0..h {
                        *pc.add(i) = *pa.add(i);
                    }
                    let mut i = h;
                    while i + $w <= n {
                        $stream(pc.add(i), $loadu(pa.add(i)));
                        i += $w;
                    }
                    for j in i..n {
                        *pc.add(j) = *pa.add(j);
                    }
                }
                Kernel::Scale => {
                    let h = head(pb);
                    for i in 0..h {
                        *pb.add(i) = s * *pc.add(i);
                    }
                    let mut i = h;
                    while i + $w <= n {
                        $stream(pb.add(i), $mul(sv, $loadu(pc.add(i))));
                        i += $w;
                    }
                    for j in i..n {
                        *pb.add(j) = s * *pc.add(j);
                    }
                }
                Kernel::Add => {
                    let h = head(pc);
                    for i in 0..h {
                        *pc.add(i) = *pa.add(i) + *pb.add(i);
                    }
                    let mut i = h;
                    while i + $w <= n {
                        $stream(pc.add(i), $add($loadu(pa.add(i)), $loadu(pb.add(i))));
                        i += $w;
                    }
                    for j in i..n {
                        *pc.add(j) = *pa.add(j) + *pb.add(j);
                    }
                }
                Kernel::Triad => {
                    let h = head(pa);
                    for i in 0..h {
                        *pa.add(i) = *pb.add(i) + s * *pc.add(i);
                    }
                    let mut i = h;
                    while i + $w <= n {
                        $stream(
                            pa.add(i),
                            $add($loadu(pb.add(i)), $mul(sv, $loadu(pc.add(i)))),
                        );
                        i += $w;
                    }
                    for j in i..n {
                        *pa.add(j) = *pb.add(j) + s * *pc.add(j);
                    }
                }
            }
            // Streaming stores are weakly ordered: fence before other threads look.
            std::arch::x86_64::_mm_sfence();
        }
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512_nt(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    use std::arch::x86_64::*;
    nt_kernels!(
        chunk,
        kernel,
        s,
        8,
        _mm512_set1_pd,
        _mm512_loadu_pd,
        _mm512_stream_pd,
        _mm512_mul_pd,
        _mm512_add_pd
    )
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2_nt(chunk: &mut Chunk, kernel: Kernel, s: f64) {
    use std::arch::x86_64::*;
    nt_kernels!(
        chunk,
        kernel,
        s,
        4,
        _mm256_set1_pd,
        _mm256_loadu_pd,
        _mm256_stream_pd,
        _mm256_mul_pd,
        _mm256_add_pd
    )
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

/// Whether this CPU has a streaming-store kernel.
pub fn has_streaming_stores() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Runs `kernel` over `chunk` with scalar `s`, with streaming stores when
/// `streaming` is set and the CPU has them (see [`has_streaming_stores`]).
pub fn run(chunk: &mut Chunk, kernel: Kernel, s: f64, streaming: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        if streaming && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { run_avx512_nt(chunk, kernel, s) };
        }
        if streaming && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { run_avx2_nt(chunk, kernel, s) };
        }
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
        for streaming in [false, true] {
            // Odd lengths and offset starts exercise the unaligned heads and tails.
            for (len, offset) in [(1003, 0), (1003, 3), (5, 1), (0, 0)] {
                let mut chunk = Chunk::new(len + offset);
                for v in [&mut chunk.a, &mut chunk.b, &mut chunk.c] {
                    v.drain(..offset);
                }
                for _ in 0..5 {
                    for k in Kernel::ALL {
                        run(&mut chunk, k, 3.0, streaming);
                    }
                }
                let (a, b, c) = expected(5, 3.0);
                assert!(
                    chunk.a.iter().all(|&x| x == a),
                    "a, streaming {streaming}, len {len}"
                );
                assert!(chunk.b.iter().all(|&x| x == b));
                assert!(chunk.c.iter().all(|&x| x == c));
            }
        }
        assert_eq!(expected(1, 3.0), (15.0, 3.0, 4.0));
    }
}
