//! Canonical k-mer counting: 2-bit k-mers rolled along each read (forward
//! and reverse complement at once), the smaller of the two kept, counted
//! into a table split into partitions by hash, each partition behind its
//! own lock, so every core inserts at once with little contention.
//!
//! k up to 32 lives in a `u64`, up to 63 in a `u128` ([`Word`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use rayon::prelude::*;

/// Largest k supported.
pub const MAX_K: usize = 63;

/// 2-bit code of each letter (`A C G T`, either case); 4 for anything else.
pub const CODE: [u8; 256] = {
    let mut t = [4u8; 256];
    t[b'A' as usize] = 0;
    t[b'C' as usize] = 1;
    t[b'G' as usize] = 2;
    t[b'T' as usize] = 3;
    t[b'a' as usize] = 0;
    t[b'c' as usize] = 1;
    t[b'g' as usize] = 2;
    t[b't' as usize] = 3;
    t
};

/// An integer holding a k-mer in 2 bits per base.
pub trait Word: Copy + Eq + Ord + Default + Send + Sync + std::fmt::Debug + 'static {
    /// Bases it can hold.
    const BASES: usize;
    /// The mask of the low `2k` bits.
    fn mask(k: usize) -> Self;
    /// `((self << 2) | code) & mask`: the next base appended.
    fn push(self, code: u8, mask: Self) -> Self;
    /// `(self >> 2) | (code << shift)`: the next base's complement
    /// prepended (the reverse-complement strand).
    fn push_front(self, code: u8, shift: u32) -> Self;
    /// A well-mixed 64-bit hash.
    fn hash(self) -> u64;
}

/// MurmurHash3's 64-bit finaliser, the hash of a 2-bit k-mer.
pub fn fmix(mut h: u64) -> u64 {
    // MurmurHash3's finaliser: every input bit affects every output bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Word for u64 {
    const BASES: usize = 32;
    fn mask(k: usize) -> Self {
        if k >= 32 {
            u64::MAX
        } else {
            (1u64 << (2 * k)) - 1
        }
    }
    #[inline(always)]
    fn push(self, code: u8, mask: Self) -> Self {
        ((self << 2) | code as u64) & mask
    }
    #[inline(always)]
    fn push_front(self, code: u8, shift: u32) -> Self {
        (self >> 2) | ((code as u64) << shift)
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        fmix(self)
    }
}

impl Word for u128 {
    const BASES: usize = 64;
    fn mask(k: usize) -> Self {
        if k >= 64 {
            u128::MAX
        } else {
            (1u128 << (2 * k)) - 1
        }
    }
    #[inline(always)]
    fn push(self, code: u8, mask: Self) -> Self {
        ((self << 2) | code as u128) & mask
    }
    #[inline(always)]
    fn push_front(self, code: u8, shift: u32) -> Self {
        (self >> 2) | ((code as u128) << shift)
    }
    #[inline(always)]
    fn hash(self) -> u64 {
        fmix(self as u64 ^ fmix((self >> 64) as u64))
    }
}

/// Calls `f` with every canonical k-mer of `seq` (windows holding a
/// letter other than ACGT are skipped).
#[inline]
pub fn for_each_canonical<W: Word>(seq: &[u8], k: usize, mut f: impl FnMut(W)) {
    for_each_kmer(seq, k, |_, fwd: W, rc: W| f(fwd.min(rc)));
}

/// Calls `f(start, forward, reverse complement)` with the 2-bit words of
/// every k-mer of `seq` and where it starts (windows holding a letter
/// other than ACGT are skipped): for callers that need the strand or the
/// place ([`for_each_canonical`] is this, for the counting loop).
#[inline]
pub fn for_each_kmer<W: Word>(seq: &[u8], k: usize, mut f: impl FnMut(usize, W, W)) {
    let mask = W::mask(k);
    let shift = 2 * (k as u32 - 1);
    let (mut fwd, mut rc) = (W::default(), W::default());
    let mut valid = 0usize;
    for (i, &c) in seq.iter().enumerate() {
        let code = CODE[c as usize];
        if code > 3 {
            valid = 0;
            continue;
        }
        fwd = fwd.push(code, mask);
        rc = rc.push_front(3 - code, shift);
        valid += 1;
        if valid >= k {
            f(i + 1 - k, fwd, rc);
        }
    }
}

/// One partition: open addressing with linear probing, a zero count
/// marking an empty slot.
struct Table<W> {
    keys: Vec<W>,
    counts: Vec<u32>,
    len: usize,
}

impl<W: Word> Table<W> {
    fn with_capacity(entries: usize) -> Self {
        let slots = (entries * 10 / 7).next_power_of_two().max(64);
        Table {
            keys: vec![W::default(); slots],
            counts: vec![0; slots],
            len: 0,
        }
    }

    #[inline]
    fn add(&mut self, key: W, hash: u64) {
        let mask = self.keys.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            if self.counts[i] == 0 {
                self.keys[i] = key;
                self.counts[i] = 1;
                self.len += 1;
                if self.len * 10 > self.keys.len() * 7 {
                    self.grow();
                }
                return;
            }
            if self.keys[i] == key {
                self.counts[i] = self.counts[i].saturating_add(1);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let mut bigger = Table::with_capacity(self.keys.len());
        let mask = bigger.keys.len() - 1;
        for (&key, &count) in self.keys.iter().zip(&self.counts) {
            if count == 0 {
                continue;
            }
            let mut i = key.hash() as usize & mask;
            while bigger.counts[i] != 0 {
                i = (i + 1) & mask;
            }
            bigger.keys[i] = key;
            bigger.counts[i] = count;
        }
        bigger.len = self.len;
        *self = bigger;
    }

    fn get(&self, key: W, hash: u64) -> u32 {
        let mask = self.keys.len() - 1;
        let mut i = hash as usize & mask;
        while self.counts[i] != 0 {
            if self.keys[i] == key {
                return self.counts[i];
            }
            i = (i + 1) & mask;
        }
        0
    }
}

/// Partitions: the top bits of a k-mer's hash pick one.
const PARTITION_BITS: u32 = 9;
const PARTITIONS: usize = 1 << PARTITION_BITS;
/// Reads a task buffers before inserting into the partitions.
const BATCH: usize = 2048;

/// The counts of every canonical k-mer of a read set.
pub struct Counts<W> {
    parts: Vec<Table<W>>,
    /// k.
    pub k: usize,
}

impl<W: Word> Counts<W> {
    /// Counts the canonical k-mers of every sequence in `reads`, on the
    /// current rayon pool; `expected_distinct` sizes the table up front
    /// (as jellyfish's `-s`; it grows when wrong).
    pub fn count(reads: &[&[u8]], k: usize, expected_distinct: usize) -> Self {
        assert!((1..=W::BASES.min(MAX_K)).contains(&k), "k={k} out of range");
        let parts: Vec<Mutex<Table<W>>> = (0..PARTITIONS)
            .map(|_| Mutex::new(Table::with_capacity(expected_distinct / PARTITIONS)))
            .collect();
        reads.par_chunks(BATCH).for_each_init(
            || vec![Vec::<W>::new(); PARTITIONS],
            |buffers, batch| {
                for read in batch {
                    for_each_canonical::<W>(read, k, |w| {
                        buffers[(w.hash() >> (64 - PARTITION_BITS)) as usize].push(w);
                    });
                }
                for (p, buf) in buffers.iter_mut().enumerate() {
                    if buf.is_empty() {
                        continue;
                    }
                    // A poisoned lock means another task panicked: the
                    // whole count is lost anyway, so its panic propagates.
                    let mut table = parts[p].lock().unwrap_or_else(|e| e.into_inner());
                    for &w in buf.iter() {
                        table.add(w, w.hash());
                    }
                    buf.clear();
                }
            },
        );
        Counts {
            parts: parts
                .into_iter()
                .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
                .collect(),
            k,
        }
    }

    /// How often canonical k-mer `w` occurs.
    pub fn get(&self, w: W) -> u32 {
        let h = w.hash();
        self.parts[(h >> (64 - PARTITION_BITS)) as usize].get(w, h)
    }

    /// Adds one to `w`'s count (for tests of the validation).
    pub fn bump(&mut self, w: W) {
        let h = w.hash();
        self.parts[(h >> (64 - PARTITION_BITS)) as usize].add(w, h);
    }

    /// Distinct canonical k-mers.
    pub fn distinct(&self) -> u64 {
        self.parts.iter().map(|t| t.len as u64).sum()
    }

    /// Every k-mer with its count, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (W, u32)> + '_ {
        self.parts.iter().flat_map(|t| {
            t.keys
                .iter()
                .zip(&t.counts)
                .filter(|(_, c)| **c > 0)
                .map(|(&k, &c)| (k, c))
        })
    }

    /// `count → number of distinct k-mers with that count` (jellyfish's
    /// `histo`).
    pub fn histogram(&self) -> BTreeMap<u32, u64> {
        let mut h = BTreeMap::new();
        for t in &self.parts {
            for &c in &t.counts {
                if c > 0 {
                    *h.entry(c).or_insert(0) += 1;
                }
            }
        }
        h
    }
}

/// The 2-bit word of `kmer` (letters, all ACGT), as [`for_each_canonical`]
/// builds it before taking the canonical one.
pub fn encode<W: Word>(kmer: &[u8]) -> W {
    let mask = W::mask(kmer.len());
    kmer.iter()
        .fold(W::default(), |w, &c| w.push(CODE[c as usize] & 3, mask))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn revcomp(s: &[u8]) -> Vec<u8> {
        crate::genome::revcomp(s)
    }

    /// Counts by strings: the canonical k-mer is the lexically smaller
    /// spelling (A < C < G < T orders like the 2-bit codes).
    fn by_strings(reads: &[&[u8]], k: usize) -> HashMap<Vec<u8>, u32> {
        let mut m = HashMap::new();
        for r in reads {
            for w in r.windows(k) {
                if w.iter().any(|&c| CODE[c as usize] > 3) {
                    continue;
                }
                let rc = revcomp(w);
                let canon = if rc.as_slice() < w { rc } else { w.to_vec() };
                *m.entry(canon).or_insert(0) += 1;
            }
        }
        m
    }

    fn check<W: Word>(reads: &[&[u8]], k: usize) {
        let counts = Counts::<W>::count(reads, k, 16);
        let want = by_strings(reads, k);
        assert_eq!(counts.distinct(), want.len() as u64, "k={k}");
        for (kmer, n) in &want {
            assert_eq!(counts.get(encode::<W>(kmer)), *n, "k={k}");
        }
        let total: u64 = counts.histogram().iter().map(|(c, n)| *c as u64 * n).sum();
        assert_eq!(total, want.values().map(|&c| c as u64).sum::<u64>());
    }

    #[test]
    fn counts_equal_a_string_reference_for_every_width() {
        let genome = crate::genome::reference(11, 20_000);
        let mut reads: Vec<Vec<u8>> = genome.chunks(97).map(|c| c.to_vec()).collect();
        reads.push(revcomp(&genome[500..900]));
        reads.push(b"ACGTNACGTACGTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTN".to_vec());
        let refs: Vec<&[u8]> = reads.iter().map(|r| r.as_slice()).collect();
        for k in [1, 5, 21, 31, 32] {
            check::<u64>(&refs, k);
        }
        for k in [33, 47, 63] {
            check::<u128>(&refs, k);
        }
    }
}
