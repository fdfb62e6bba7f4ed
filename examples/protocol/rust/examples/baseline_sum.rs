//! A Rust benchmark for `warpt harness run`: the sum of a million doubles,
//! one accumulator (the baseline of `optimized_sum.rs`). This directory is
//! a chapter: its bench.yaml runs each file as a cargo example
//! (`warpt harness run examples/protocol/rust/examples`).

struct Sum {
    values: Vec<f64>,
    total: f64,
}

impl warpt_protocol::Benchmark for Sum {
    fn setup(&mut self) -> Result<(), String> {
        // Under serve(), stdout is stderr: this cannot corrupt the channel.
        println!("setting up a million values");
        self.values = (0..1_000_000).map(|i| f64::from(i % 1000)).collect();
        Ok(())
    }

    fn call(&mut self) -> Result<(), String> {
        self.total = self.values.iter().sum();
        Ok(())
    }

    fn validate(&mut self) -> Option<String> {
        (self.total != 499_500_000.0).then(|| format!("sum {} is not 499500000", self.total))
    }

    fn output(&self) -> Vec<f64> {
        vec![self.total]
    }
}

fn main() -> std::io::Result<()> {
    warpt_protocol::serve(&mut Sum {
        values: Vec::new(),
        total: 0.0,
    })
}
