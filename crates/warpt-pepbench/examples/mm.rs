use candle_core::{Device, Tensor};
fn main() {
    let dev = Device::Cpu;
    for (m, k, n) in [
        (128usize, 768usize, 768usize),
        (1024, 768, 768),
        (1024, 768, 1536),
        (8, 768, 1536),
        (1, 768, 32000),
    ] {
        let x = Tensor::randn(0f32, 1., (m, k), &dev).unwrap();
        let w = Tensor::randn(0f32, 1., (n, k), &dev).unwrap();
        let wt = w.t().unwrap().contiguous().unwrap();
        for (name, b) in [("w.t()", w.t().unwrap()), ("contig", wt.clone())] {
            let _ = x.matmul(&b).unwrap();
            let reps = 20;
            let t = std::time::Instant::now();
            for _ in 0..reps {
                let _ = x.matmul(&b).unwrap();
            }
            let s = t.elapsed().as_secs_f64() / reps as f64;
            println!(
                "{m}x{k}x{n} {name}: {:.3} ms {:.1} GFLOP/s",
                s * 1e3,
                2.0 * (m * k * n) as f64 / s / 1e9
            );
        }
    }
}
