//! A decode step's products, for tuning the cost of starting one: the
//! 84 matrix-vector products of a 12-layer transformer (hidden 768, MLP
//! 1536, as pepbench's `small`) with serial work between them, and with
//! `rayon` a parallel loop between them too (as a model's own
//! element-wise work). `decode [TOKENS] [rayon]` prints microseconds per
//! token, after checking the last product against its dot products.
use std::time::Instant;
use warpt_gemm::{MatMut, MatRef, PackedA, gemm_packed};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tokens: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(64);
    let rayon_between = args.get(2).is_some_and(|s| s == "rayon");
    let h = 768;
    let f = 1536;
    let layers = 12;
    let shapes = [(h, h), (h, h), (h, h), (h, h), (f, h), (f, h), (h, f)];
    let mut seed = 7u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    // The last matrix is kept as it was made, to check a product with.
    let mut last = Vec::new();
    let ws: Vec<PackedA<f32>> = (0..layers)
        .flat_map(|_| shapes)
        .map(|(n, k)| {
            last = (0..n * k).map(|_| next()).collect();
            PackedA::new(MatRef::row_major(&last, n, k).expect("n x k"))
        })
        .collect();
    let mut x = vec![0.01f32; f];
    let mut out = vec![0f32; f];
    let mut per = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        for _ in 0..tokens {
            for w in &ws {
                let (n, k) = (w.rows(), w.cols());
                let c = MatMut::new(&mut out[..n], n, 1, 1, n).expect("n x 1");
                let b = MatRef::new(&x[..k], k, 1, 1, k).expect("k x 1");
                gemm_packed(c, 1.0, w, b, 0.0, 0).expect("shapes chain");
                // Serial work between products, as a norm would.
                let s: f32 = out[..n].iter().map(|v| v * v).sum::<f32>() / n as f32;
                let r = 1.0 / (s + 1e-5).sqrt();
                for (i, xi) in x.iter_mut().enumerate() {
                    *xi = out[i % n] * r * 0.1;
                }
                if rayon_between {
                    use rayon::prelude::*;
                    x.par_chunks_mut(256)
                        .for_each(|c| c.iter_mut().for_each(|v| *v = v.tanh()));
                }
            }
        }
        per.push(t0.elapsed().as_secs_f64() * 1e6 / tokens as f64);
    }
    // The last product of the run against its dot products (fp32 bound:
    // k roundings of values under 1 in magnitude).
    let w = ws.last().expect("84 products");
    let (n, k) = (w.rows(), w.cols());
    let mut c = vec![0f32; n];
    let view = MatMut::new(&mut c, n, 1, 1, n).expect("n x 1");
    gemm_packed(
        view,
        1.0,
        w,
        MatRef::new(&x[..k], k, 1, 1, k).expect("k x 1"),
        0.0,
        0,
    )
    .expect("shapes chain");
    for (i, got) in c.iter().enumerate() {
        let row = &last[i * k..][..k];
        let want: f64 = row.iter().zip(&x).map(|(a, b)| f64::from(a * b)).sum();
        let bound: f64 = row
            .iter()
            .zip(&x)
            .map(|(a, b)| f64::from((a * b).abs()))
            .sum::<f64>()
            * k as f64
            * f64::from(f32::EPSILON);
        assert!(
            (f64::from(*got) - want).abs() <= bound,
            "row {i}: {got} against {want}"
        );
    }
    per.sort_by(f64::total_cmp);
    println!(
        "us_per_token median={:.0} best={:.0} (products/token {})",
        per[2],
        per[0],
        ws.len()
    );
}
