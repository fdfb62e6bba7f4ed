//! int8 GEMM: C (i32) = A (i8, m x k) · B (i8, k x n), row-major, exact.
//!
//! No Rust crate multiplies int8 matrices, so this is warpt's own. It is
//! the textbook blocked GEMM (Goto's loops) around a 4 x 16 microkernel:
//!
//! - B is packed per block of `KC` rows into panels of 16 columns, each
//!   k-pair of a panel two vectors of 8 (`B[k][j]`, `B[k+1][j]`) i16 pairs;
//! - A is packed per block of `MC` rows into panels of 4 rows, each k-pair
//!   one i32 per row holding (`A[i][k]`, `A[i][k+1]`) as two i16;
//! - the microkernel broadcasts an A pair and multiplies it into both B
//!   vectors with `vpmaddwd` (i16 x i16 pairs summed into i32, exact), so a
//!   k-pair is 8 `vpmaddwd` + 8 `vpaddd` into 8 accumulators.
//!
//! Operands are widened to i16 when packed, so every product and sum is
//! exact (|a b| <= 2^14, and k <= 2^17 terms fit i32). The pre-VNNI
//! `vpmaddubsw` would be twice as fast but is u8 x s8 with saturating i16
//! sums, which is not an exact s8 x s8 GEMM. Row blocks of C run in
//! parallel on the current rayon pool. Without AVX2 a plain loop runs.

use rayon::prelude::*;

/// Rows of a microkernel tile.
const MR: usize = 4;
/// Columns of a microkernel tile.
const NR: usize = 16;
/// Depth of a packed block (even).
const KC: usize = 256;
/// Rows of C one parallel task owns.
const MC: usize = 64;

/// C = A B for row-major `a` (m x k), `b` (k x n) into `c` (m x n).
///
/// # Panics
/// When a slice's length is not its matrix's size.
pub fn gemm(a: &[i8], b: &[i8], c: &mut [i32], m: usize, k: usize, n: usize) {
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    c.fill(0);
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        blocked(a, b, c, k, n);
        return;
    }
    plain(a, b, c, k, n);
}

/// The reference loop (and the path without AVX2): `c` holds C's rows.
pub fn plain(a: &[i8], b: &[i8], c: &mut [i32], k: usize, n: usize) {
    c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for p in 0..k {
            let x = i32::from(a[i * k + p]);
            for (cj, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *cj += x * i32::from(y);
            }
        }
    });
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
/// B's rows `p0..p0 + kc` packed into 16-column panels of i16 pairs.
fn pack_b(b: &[i8], n: usize, p0: usize, kc: usize) -> Vec<i16> {
    let panels = n.div_ceil(NR);
    let pairs = kc.div_ceil(2);
    let mut out = vec![0i16; panels * pairs * NR * 2];
    for jp in 0..panels {
        for q in 0..pairs {
            let base = (jp * pairs + q) * NR * 2;
            for jj in 0..NR {
                let j = jp * NR + jj;
                if j >= n {
                    break;
                }
                for h in 0..2 {
                    let p = 2 * q + h;
                    if p < kc {
                        out[base + jj * 2 + h] = i16::from(b[(p0 + p) * n + j]);
                    }
                }
            }
        }
    }
    out
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
/// A's rows `i0..i0 + mc`, columns `p0..p0 + kc`, packed into 4-row panels
/// of i16 pairs (each pair one i32).
fn pack_a(a: &[i8], k: usize, i0: usize, mc: usize, p0: usize, kc: usize) -> Vec<i32> {
    let panels = mc.div_ceil(MR);
    let pairs = kc.div_ceil(2);
    let mut out = vec![0i32; panels * pairs * MR];
    for ip in 0..panels {
        for q in 0..pairs {
            for r in 0..MR {
                let i = ip * MR + r;
                if i >= mc {
                    break;
                }
                let at = |h: usize| {
                    let p = 2 * q + h;
                    if p < kc {
                        i32::from(a[(i0 + i) * k + p0 + p]) & 0xFFFF
                    } else {
                        0
                    }
                };
                out[(ip * pairs + q) * MR + r] = at(0) | (at(1) << 16);
            }
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
fn blocked(a: &[i8], b: &[i8], c: &mut [i32], k: usize, n: usize) {
    let mut p0 = 0;
    while p0 < k {
        let kc = KC.min(k - p0);
        let pairs = kc.div_ceil(2);
        let bp = pack_b(b, n, p0, kc);
        c.par_chunks_mut(MC * n)
            .enumerate()
            .for_each(|(blk, cblk)| {
                let i0 = blk * MC;
                let mc = cblk.len() / n;
                let ap = pack_a(a, k, i0, mc, p0, kc);
                for jp in 0..n.div_ceil(NR) {
                    let bpanel = &bp[jp * pairs * NR * 2..(jp + 1) * pairs * NR * 2];
                    for ip in 0..mc.div_ceil(MR) {
                        let apanel = &ap[ip * pairs * MR..(ip + 1) * pairs * MR];
                        let mut tile = [[0i32; NR]; MR];
                        // SAFETY: `gemm` checked AVX2; the panels hold `pairs`
                        // k-pairs of MR i32 and NR x 2 i16 each.
                        unsafe { micro_avx2(apanel, bpanel, pairs, &mut tile) };
                        for (r, row) in tile.iter().enumerate() {
                            let i = ip * MR + r;
                            if i >= mc {
                                break;
                            }
                            let j0 = jp * NR;
                            let cols = NR.min(n - j0);
                            for (cj, t) in cblk[i * n + j0..i * n + j0 + cols].iter_mut().zip(row) {
                                *cj += t;
                            }
                        }
                    }
                }
            });
        p0 += kc;
    }
}

/// The 4 x 16 tile of one packed A panel times one packed B panel.
///
/// # Safety
/// The CPU must support AVX2; `ap` holds `pairs * MR` and `bp`
/// `pairs * NR * 2` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn micro_avx2(ap: &[i32], bp: &[i16], pairs: usize, tile: &mut [[i32; NR]; MR]) {
    use std::arch::x86_64::*;
    debug_assert!(ap.len() >= pairs * MR && bp.len() >= pairs * NR * 2);
    let mut acc = [[_mm256_setzero_si256(); 2]; MR];
    for (a, b) in ap.chunks_exact(MR).zip(bp.chunks_exact(NR * 2)).take(pairs) {
        // SAFETY: a chunk holds NR * 2 = 32 i16, two unaligned vectors.
        let (b0, b1) = unsafe {
            let p = b.as_ptr().cast::<__m256i>();
            (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)))
        };
        for (row, &x) in acc.iter_mut().zip(a) {
            let x = _mm256_set1_epi32(x);
            row[0] = _mm256_add_epi32(row[0], _mm256_madd_epi16(x, b0));
            row[1] = _mm256_add_epi32(row[1], _mm256_madd_epi16(x, b1));
        }
    }
    for (row, out) in acc.iter().zip(tile.iter_mut()) {
        // SAFETY: 16 i32 into a 16-i32 row, 8 at a time.
        unsafe {
            _mm256_storeu_si256(out.as_mut_ptr().cast(), row[0]);
            _mm256_storeu_si256(out.as_mut_ptr().add(8).cast(), row[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(len: usize, seed: u32) -> Vec<i8> {
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as i8
            })
            .collect()
    }

    #[test]
    fn the_blocked_kernel_equals_the_plain_loop_at_every_edge() {
        // Odd sizes cross every tile, panel and KC block edge; -128 x -128
        // products (the largest) are among the random entries.
        for (m, k, n) in [
            (1, 1, 1),
            (5, 3, 17),
            (67, 257, 33),
            (130, 600, 70),
            (4, 512, 16),
        ] {
            let a = matrix(m * k, 1 + m as u32);
            let b = matrix(k * n, 7 + n as u32);
            let mut fast = vec![0; m * n];
            let mut slow = vec![0; m * n];
            gemm(&a, &b, &mut fast, m, k, n);
            plain(&a, &b, &mut slow, k, n);
            assert_eq!(fast, slow, "{m}x{k}x{n}");
        }
    }

    #[test]
    fn extreme_values_are_exact() {
        let (m, k, n) = (8, 1000, 16);
        let a = vec![-128i8; m * k];
        let b = vec![-128i8; k * n];
        let mut c = vec![0; m * n];
        gemm(&a, &b, &mut c, m, k, n);
        assert!(c.iter().all(|&v| v == 16384 * 1000));
    }
}
