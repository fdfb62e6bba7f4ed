//! (w, k)-minimizers: of every w consecutive canonical k-mers, the one
//! with the smallest hash, so two sequences sharing a stretch of at least
//! `w + k - 1` bases share a minimizer there (minimap2's sketch).

use crate::kmer::{CODE, fmix};

/// A sampled k-mer: its hash, where it starts and on which strand its
/// canonical spelling reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Minimizer {
    /// Hash of the canonical k-mer.
    pub hash: u64,
    /// Start of the k-mer in the sequence.
    pub pos: u32,
    /// The canonical spelling is the reverse complement of the sequence.
    pub reverse: bool,
}

/// Largest k a minimizer may have (2-bit in a `u64`).
pub const MAX_K: usize = 32;

/// Appends the (w, k)-minimizers of `seq` to `out` in order of position,
/// each once. k-mers holding a non-ACGT letter and palindromes (whose
/// strand is undefined) are never chosen.
pub fn sketch(seq: &[u8], k: usize, w: usize, out: &mut Vec<Minimizer>) {
    debug_assert!((1..=MAX_K).contains(&k) && w >= 1);
    let mask = if k == 32 {
        u64::MAX
    } else {
        (1u64 << (2 * k)) - 1
    };
    let shift = 2 * (k as u32 - 1);
    let (mut fwd, mut rev, mut valid) = (0u64, 0u64, 0usize);
    // The last w candidates, a ring; u64::MAX marks "no k-mer here".
    let mut ring = vec![
        Minimizer {
            hash: u64::MAX,
            pos: 0,
            reverse: false,
        };
        w
    ];
    let mut last_pos = u32::MAX;
    for (i, &c) in seq.iter().enumerate() {
        let code = CODE[c as usize];
        let slot = i % w;
        if code > 3 {
            valid = 0;
            ring[slot].hash = u64::MAX;
        } else {
            fwd = ((fwd << 2) | code as u64) & mask;
            rev = (rev >> 2) | (((3 - code) as u64) << shift);
            valid += 1;
            ring[slot] = if valid >= k && fwd != rev {
                Minimizer {
                    hash: fmix(fwd.min(rev)),
                    pos: (i + 1 - k) as u32,
                    reverse: rev < fwd,
                }
            } else {
                Minimizer {
                    hash: u64::MAX,
                    pos: 0,
                    reverse: false,
                }
            };
        }
        if i + 1 >= k + w - 1 {
            // The window of the last w k-mers; ties go to the leftmost.
            let mut best = ring[(i + 1) % w];
            for j in 1..w {
                let m = ring[(i + 1 + j) % w];
                if m.hash < best.hash || (m.hash == best.hash && m.pos < best.pos) {
                    best = m;
                }
            }
            if best.hash != u64::MAX && best.pos != last_pos {
                last_pos = best.pos;
                out.push(best);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::genome::revcomp;

    /// The definition, by brute force on strings.
    fn brute(seq: &[u8], k: usize, w: usize) -> Vec<(u32, bool)> {
        let kmers: Vec<Option<(u64, bool)>> = (0..=seq.len() - k)
            .map(|p| {
                let s = &seq[p..p + k];
                let r = revcomp(s);
                if s.iter().any(|&c| CODE[c as usize] > 3) || *s == r[..] {
                    return None;
                }
                let enc = |x: &[u8]| {
                    x.iter()
                        .fold(0u64, |a, &c| (a << 2) | CODE[c as usize] as u64)
                };
                let (f, b) = (enc(s), enc(&r));
                Some((fmix(f.min(b)), b < f))
            })
            .collect();
        let mut out: Vec<(u32, bool)> = Vec::new();
        for start in 0..=kmers.len() - w {
            let best = (start..start + w)
                .filter_map(|p| kmers[p].map(|(h, r)| (h, p, r)))
                .min_by_key(|&(h, p, _)| (h, p));
            if let Some((_, p, r)) = best
                && out.last().map(|l| l.0) != Some(p as u32)
            {
                out.push((p as u32, r));
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_and_both_strands_agree() {
        let seq = crate::genome::reference(7, 3000);
        let mut with_n = seq.clone();
        with_n[1000] = b'N';
        for (k, w) in [(5, 1), (15, 10), (21, 11), (32, 5)] {
            for s in [&seq, &with_n] {
                let mut got = Vec::new();
                sketch(s, k, w, &mut got);
                let got: Vec<(u32, bool)> = got.iter().map(|m| (m.pos, m.reverse)).collect();
                assert_eq!(got, brute(s, k, w), "k={k} w={w}");
            }
            // The reverse complement has the same minimizers, mirrored.
            let mut a = Vec::new();
            let mut b = Vec::new();
            sketch(&seq, k, w, &mut a);
            sketch(&revcomp(&seq), k, w, &mut b);
            // (Ties between copies of one k-mer may pick different
            // copies, so the hashes are compared, runs merged.)
            let mut mirrored: Vec<u64> = b.iter().map(|m| m.hash).collect();
            mirrored.reverse();
            mirrored.dedup();
            let mut hashes: Vec<u64> = a.iter().map(|m| m.hash).collect();
            hashes.dedup();
            assert_eq!(hashes, mirrored, "k={k} w={w}");
        }
    }
}
