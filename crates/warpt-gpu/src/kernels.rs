//! The WGSL kernels, with the closed forms their results are checked
//! against.
//!
//! FMA kernels: every invocation runs 8 independent chains of `vec4` FMAs
//! (32 lanes in flight, enough to cover FMA latency on any GPU), their
//! multiplier and addend read from a uniform so no compiler can fold the
//! loop. In f32 each chain counts, `x = fma(x, 1, 0.5)`, so every lane ends
//! at its start plus `iters / 2` exactly; in f16 (11-bit mantissas) a chain
//! cannot count far, so it flips, `x = fma(x, -1, 1)`, and ends at `1 - x0`
//! after an odd number of steps, also exactly. Each invocation writes the
//! sum of its chains, which the host recomputes for every element.

/// Threads per workgroup of every kernel.
pub const WORKGROUP: u32 = 256;

/// Chains per invocation.
pub const CHAINS: u32 = 8;

/// What every FMA kernel starts with: its uniform, its output and its
/// entry point, up to the invocation's index `i`.
macro_rules! fma_prologue {
    () => {
        r#"
struct Params { mul: f32, add: f32, iters: u32, salt: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
"#
    };
}

/// The f32 FMA kernel.
pub const FMA_F32: &str = concat!(
    fma_prologue!(),
    r#"    let base = f32((i + p.salt) % 64u);
    var a = vec4<f32>(base, base + 1.0, base + 2.0, base + 3.0);
    var b = a + 4.0; var c = a + 8.0; var d = a + 12.0;
    var e = a + 16.0; var f = a + 20.0; var g = a + 24.0; var h = a + 28.0;
    let m = vec4<f32>(p.mul);
    let s = vec4<f32>(p.add);
    for (var k = 0u; k < p.iters; k++) {
        a = fma(a, m, s); b = fma(b, m, s); c = fma(c, m, s); d = fma(d, m, s);
        e = fma(e, m, s); f = fma(f, m, s); g = fma(g, m, s); h = fma(h, m, s);
    }
    out[i] = ((a + b) + (c + d)) + ((e + f) + (g + h));
}
"#
);

/// The f16 FMA kernel (needs `shader-f16`).
pub const FMA_F16: &str = concat!(
    "enable f16;\n",
    fma_prologue!(),
    r#"    let base = f16((i + p.salt) % 64u);
    var a = vec4<f16>(base, base + 1.0h, base + 2.0h, base + 3.0h);
    var b = a + 4.0h; var c = a + 8.0h; var d = a + 12.0h;
    var e = a + 16.0h; var f = a + 20.0h; var g = a + 24.0h; var h = a + 28.0h;
    let m = vec4<f16>(f16(p.mul));
    let s = vec4<f16>(f16(p.add));
    for (var k = 0u; k < p.iters; k++) {
        a = fma(a, m, s); b = fma(b, m, s); c = fma(c, m, s); d = fma(d, m, s);
        e = fma(e, m, s); f = fma(f, m, s); g = fma(g, m, s); h = fma(h, m, s);
    }
    out[i] = vec4<f32>(((a + b) + (c + d)) + ((e + f) + (g + h)));
}
"#
);

/// The uniform of the FMA kernels: multiplier, addend, iterations, salt.
pub fn fma_params(f16: bool, iters: u32, salt: u32) -> [u32; 4] {
    let (mul, add) = if f16 {
        (-1.0f32, 1.0f32)
    } else {
        (1.0f32, 0.5f32)
    };
    [mul.to_bits(), add.to_bits(), iters, salt]
}

/// What element `i`, lane `lane` of an FMA kernel's output must hold.
pub fn fma_expected(f16: bool, iters: u32, salt: u32, i: u32, lane: u32) -> f32 {
    let base = (i.wrapping_add(salt) % 64) as f32 + lane as f32;
    (0..CHAINS)
        .map(|c| {
            let x0 = base + 4.0 * c as f32;
            if f16 {
                if iters % 2 == 1 { 1.0 - x0 } else { x0 }
            } else {
                x0 + iters as f32 * 0.5
            }
        })
        .sum()
}

/// Floating-point operations of one FMA-kernel invocation.
pub fn fma_flops_per_invocation(iters: u32) -> f64 {
    f64::from(iters) * f64::from(CHAINS) * 4.0 * 2.0
}

/// Device-memory copy, `dst[i] = src[i]`, `vec4<f32>` elements, a
/// grid-stride loop over `n` elements.
pub const COPY: &str = r#"
struct Params { n: u32, stride: u32, scalar: f32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    for (var i = gid.x; i < p.n; i += p.stride) {
        dst[i] = src[i];
    }
}
"#;

/// STREAM's triad, `a[i] = b[i] + s * c[i]`, as [`COPY`].
pub const TRIAD: &str = r#"
struct Params { n: u32, stride: u32, scalar: f32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> c: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> a: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    for (var i = gid.x; i < p.n; i += p.stride) {
        a[i] = fma(c[i], vec4<f32>(p.scalar), b[i]);
    }
}
"#;

/// The smallest dispatch: one invocation increments a counter.
pub const TOUCH: &str = r#"
@group(0) @binding(0) var<storage, read_write> counter: array<u32>;
@compute @workgroup_size(1)
fn main() {
    counter[0] = counter[0] + 1u;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_forms_match_a_plain_replay() {
        for f16 in [false, true] {
            let iters = 7;
            let [mul, add, _, _] = fma_params(f16, iters, 0);
            let (m, s) = (f32::from_bits(mul), f32::from_bits(add));
            let mut sum = 0.0f32;
            for c in 0..CHAINS {
                let mut x = 5.0 + 2.0 + 4.0 * c as f32;
                for _ in 0..iters {
                    x = x.mul_add(m, s);
                }
                sum += x;
            }
            assert_eq!(fma_expected(f16, iters, 0, 5, 2), sum);
        }
    }
}
