//! A layer's KV cache on the CPU: every sequence's keys and values, with
//! room to grow, and where asked an f16 copy a decode step reads.

use half::f16;
use half::slice::HalfFloatSliceExt;

/// One layer's keys and values for every sequence and key-value head,
/// with room to grow: appending a decode step's position copies that
/// position only (a cache concatenated anew each step copies all of it,
/// O(context) per step). The room doubles when it runs out.
///
/// [`KvBuffer::with_f16`] keeps a copy in f16 beside the f32 values (as
/// llama.cpp's default cache holds them) for a decode step to read: half
/// the bytes from memory, where a step's weights have pushed the cache
/// out of every level (a tenth of a q4_0 step at 128 positions, most of
/// one at 2,048). A prefill reads the f32 values.
#[derive(Debug, Default, Clone)]
pub struct KvBuffer {
    k: Vec<f32>,
    v: Vec<f32>,
    /// The f16 copy of `k` and `v`, laid out alike, where one is kept.
    half: Option<(Vec<f16>, Vec<f16>)>,
    heads: usize,
    head_dim: usize,
    stride: usize,
    len: usize,
}

impl KvBuffer {
    /// An empty buffer that keeps an f16 copy of what it holds.
    pub fn with_f16() -> Self {
        KvBuffer {
            half: Some(Default::default()),
            ..KvBuffer::default()
        }
    }

    /// Appends `n` positions of `k` and `v` (`heads × n × head_dim` each,
    /// `heads` counting every sequence's key-value heads) at position
    /// `pos`; position 0 starts over.
    ///
    /// # Panics
    /// If `pos` is neither 0 nor the positions held, the shapes differ
    /// from those held, or the slices are not that size.
    pub fn append(
        &mut self,
        k: &[f32],
        v: &[f32],
        heads: usize,
        n: usize,
        head_dim: usize,
        pos: usize,
    ) {
        if pos == 0 {
            *self = KvBuffer {
                heads,
                head_dim,
                half: self.half.as_ref().map(|_| Default::default()),
                ..KvBuffer::default()
            };
        }
        assert_eq!(
            pos, self.len,
            "appending at {pos} to {} positions",
            self.len
        );
        assert_eq!(
            (heads, head_dim),
            (self.heads, self.head_dim),
            "the cache's shape"
        );
        assert_eq!(k.len(), heads * n * head_dim, "keys");
        assert_eq!(v.len(), heads * n * head_dim, "values");
        if self.len + n > self.stride {
            let stride = (self.len + n).max(2 * self.stride).max(16);
            let (len, old) = (self.len * head_dim, self.stride * head_dim);
            let (wide, new) = (heads * stride * head_dim, stride * head_dim);
            self.k = grown(&self.k, wide, len, old, new);
            self.v = grown(&self.v, wide, len, old, new);
            if let Some((hk, hv)) = &mut self.half {
                *hk = grown(hk, wide, len, old, new);
                *hv = grown(hv, wide, len, old, new);
            }
            self.stride = stride;
        }
        let (at, width, room) = (self.len * head_dim, n * head_dim, self.stride * head_dim);
        for (buf, new) in [(&mut self.k, k), (&mut self.v, v)] {
            for (dst, src) in buf.chunks_exact_mut(room).zip(new.chunks_exact(width)) {
                dst[at..at + width].copy_from_slice(src);
            }
        }
        if let Some((hk, hv)) = &mut self.half {
            for (buf, new) in [(hk, k), (hv, v)] {
                for (dst, src) in buf.chunks_exact_mut(room).zip(new.chunks_exact(width)) {
                    dst[at..at + width].convert_from_f32_slice(src);
                }
            }
        }
        self.len += n;
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions each head has room for ([`Dims::stride`](super::Dims::stride)).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The keys, `heads × stride × head_dim`.
    pub fn keys(&self) -> &[f32] {
        &self.k
    }

    /// The values, `heads × stride × head_dim`.
    pub fn values(&self) -> &[f32] {
        &self.v
    }

    /// The f16 copy of the keys and values, laid out as [`Self::keys`]
    /// and [`Self::values`], where the buffer keeps one.
    pub fn f16(&self) -> Option<(&[f16], &[f16])> {
        self.half.as_ref().map(|(k, v)| (&k[..], &v[..]))
    }

    /// Bytes held, room and the f16 copy included.
    pub fn bytes(&self) -> usize {
        let half = self.half.as_ref().map_or(0, |(k, v)| k.len() + v.len());
        (self.k.len() + self.v.len()) * std::mem::size_of::<f32>()
            + half * std::mem::size_of::<f16>()
    }
}

/// `old` (heads of `old_room` values, the first `len` of each held) in
/// `wide` values, heads `new_room` apart.
fn grown<T: Copy + Default>(
    old: &[T],
    wide: usize,
    len: usize,
    old_room: usize,
    new_room: usize,
) -> Vec<T> {
    let mut new = vec![T::default(); wide];
    if len > 0 {
        for (dst, src) in new
            .chunks_exact_mut(new_room)
            .zip(old.chunks_exact(old_room))
        {
            dst[..len].copy_from_slice(&src[..len]);
        }
    }
    new
}
