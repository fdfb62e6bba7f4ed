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
    // The last w candidates, a ring by the index of their k-mer's last
    // base; u64::MAX marks "no k-mer here".
    let mut ring = vec![NONE; w];
    let mut slot = 0;
    // The window's minimum and the index of its k-mer's last base: kept
    // as each base arrives and searched for again only when it leaves the
    // window (minimap2's way), not w comparisons a base.
    let (mut best, mut best_end) = (NONE, 0usize);
    let mut last_pos = u32::MAX;
    for (i, &c) in seq.iter().enumerate() {
        let code = CODE[c as usize];
        let m = if code > 3 {
            valid = 0;
            NONE
        } else {
            fwd = ((fwd << 2) | code as u64) & mask;
            rev = (rev >> 2) | (((3 - code) as u64) << shift);
            valid += 1;
            if valid >= k && fwd != rev {
                Minimizer {
                    hash: fmix(fwd.min(rev)),
                    pos: (i + 1 - k) as u32,
                    reverse: rev < fwd,
                }
            } else {
                NONE
            }
        };
        ring[slot] = m;
        slot += 1;
        if slot == w {
            slot = 0;
        }
        if m.hash < best.hash {
            // Strictly smaller: on a tie the older one, leftmost, stays.
            (best, best_end) = (m, i);
        } else if i >= best_end + w {
            // The minimum left the window (ends i + 1 - w ..= i): search
            // it oldest first, `slot` now being the oldest's.
            best = NONE;
            let (mut at, mut end) = (slot, i + 1 - w);
            for _ in 0..w {
                if ring[at].hash < best.hash {
                    (best, best_end) = (ring[at], end);
                }
                at = if at + 1 == w { 0 } else { at + 1 };
                end += 1;
            }
            if best.hash == u64::MAX {
                best_end = i;
            }
        }
        // The window of the last w k-mers; ties go to the leftmost.
        if i + 1 >= k + w - 1 && best.hash != u64::MAX && best.pos != last_pos {
            last_pos = best.pos;
            out.push(best);
        }
    }
}

/// No k-mer (a non-ACGT letter, a palindrome, or before the first k bases).
const NONE: Minimizer = Minimizer {
    hash: u64::MAX,
    pos: 0,
    reverse: false,
};

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
        with_n[1011] = b'N';
        with_n[2000..2040].fill(b'N');
        // Tandem repeats: one k-mer many times in a window (ties) and
        // palindromes (no strand).
        let mut repeats = b"ACGGTCATTG".repeat(30);
        repeats.extend_from_slice(&b"ACGT".repeat(20));
        repeats.extend_from_slice(&seq[..500]);
        for (k, w) in [(5, 1), (5, 10), (7, 4), (15, 10), (21, 11), (32, 5)] {
            for s in [&seq, &with_n, &repeats] {
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
