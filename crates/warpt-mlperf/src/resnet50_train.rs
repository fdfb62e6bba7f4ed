//! `resnet50_train`: ResNet-50 training throughput — `steps` SGD steps
//! (forward, cross-entropy, backward, update) on one seeded synthetic
//! batch, batch norms on the batch's statistics as in training; images/s
//! per step. Validation: the loss on that batch falls.

use std::time::Instant;

use candle_core::{DType, Module, Tensor};
use candle_nn::Optimizer;
use warpt_harness::{
    Benchmark, BenchmarkError, Measure, MeasureResult, Measured, RunContext, SeriesDef,
};
use warpt_model::{
    BenchmarkComponent, BenchmarkKind, BenchmarkSpec, Param, ParamValue, Params, StageLimits,
    Validation,
};

use crate::resnet::{self, CLASSES, Training};
use crate::resnet50_infer::Library;

/// Benchmark name within the suite.
pub const NAME: &str = "resnet50_train";

/// The spec of `resnet50_train`.
pub fn spec() -> BenchmarkSpec {
    BenchmarkSpec::builder(crate::SUITE, NAME)
        .components([BenchmarkComponent::Cpu, BenchmarkComponent::Ram])
        .kind(BenchmarkKind::Application)
        .description(
            "ResNet-50 v1.5 training throughput on candle: `steps` SGD steps (learning rate `lr`) on one seeded \
             batch of `batch` ImageNet-normalised `image_size` images with seeded labels — forward with batch \
             statistics, cross-entropy, backward, update — after one warm-up step; `images_per_s` per step. \
             Validation: the loss on the batch after the steps is below the loss before.",
        )
        .duration(10.0)
        // Small by default: candle's CPU convolution backward runs at a
        // few GFLOP/s, so a 224x224 image takes seconds per step here.
        .param(Param::int("batch", 4, 2..=4096).help("images per step"))
        .param(Param::int("steps", 3, 1..=1_000_000).help("timed SGD steps (after one warm-up step)"))
        .param(
            Param::int("image_size", 224, 32..=1024)
                .help("image height and width (ImageNet training: 224)"),
        )
        .param(Param::float("lr", 0.01, 1e-12..=10.0).help("SGD learning rate (above 0, below 10)"))
        .param(
            Param::choice("device", "cpu", &["cpu", "cuda", "metal"])
                .help(warpt_models::device::HELP),
        )
        .param(Param::input_path("model_dir", "").help(
            "start from model.safetensors (torchvision's names) instead of the seed",
        ))
        .check(check_params)
        .timeouts(StageLimits {
            setup: Some(600.0),
            warmup: Some(3600.0),
            measure: Some(4.0 * 3600.0),
            validate: Some(3600.0),
        })
        .metric("images_per_s")
        .build()
}

/// Checks the parameters before anything runs.
pub fn check_params(params: &Params) -> Result<(), String> {
    let lr = params.get("lr").and_then(ParamValue::as_f64).unwrap_or(0.0);
    if lr >= 10.0 {
        return Err(format!("parameter 'lr' must be below 10, not {lr}"));
    }
    Ok(())
}

/// The running benchmark.
#[derive(Default)]
pub struct Resnet50Train {
    net: Option<Training>,
    batch: Option<(Tensor, Tensor)>,
    lr: f64,
    loss_before: Option<f32>,
    steps: usize,
}

fn loss(net: &Training, x: &Tensor, labels: &Tensor) -> candle_core::Result<Tensor> {
    candle_nn::loss::cross_entropy(&net.forward(x)?, labels)
}

fn failed(what: &str) -> impl Fn(candle_core::Error) -> BenchmarkError + '_ {
    move |e| BenchmarkError::Failed(format!("{what}: {e}"))
}

impl Benchmark for Resnet50Train {
    fn prepare(&mut self, ctx: &RunContext) -> Result<(), BenchmarkError> {
        let device = warpt_models::select::device(ctx.str_param("device")?)?;
        let (w, _) = crate::resnet50_infer::weights(ctx)?;
        let net = Training::new(&w, &device).map_err(BenchmarkError::Failed)?;
        let (n, size) = (
            ctx.int_param("batch", 2)? as usize,
            ctx.int_param("image_size", 32)? as usize,
        );
        let library = Library::seeded(ctx.seed, n, size);
        let pixels: Vec<f32> = (0..n).flat_map(|i| library.normalised(i)).collect();
        let x =
            Tensor::from_vec(pixels, (n, 3, size, size), &device).map_err(failed("the batch"))?;
        let labels: Vec<u32> = (0..n as u64)
            .map(|i| ((ctx.seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % CLASSES as u64) as u32)
            .collect();
        let labels = Tensor::from_vec(labels, n, &device).map_err(failed("the labels"))?;
        self.net = Some(net);
        self.batch = Some((x, labels));
        self.lr = ctx.float_param("lr")?;
        self.steps = ctx.int_param("steps", 1)? as usize;
        Ok(())
    }

    fn measure(&mut self, _ctx: &RunContext, measure: &mut Measure<'_>) -> MeasureResult {
        let net = warpt_harness::prepared(&self.net)?;
        let (x, labels) = warpt_harness::prepared(&self.batch)?;
        let before = loss(net, x, labels)
            .and_then(|l| l.to_dtype(DType::F32)?.to_scalar::<f32>())
            .map_err(failed("the loss before training"))?;
        let mut sgd = candle_nn::SGD::new(net.vars(), self.lr).map_err(failed("the optimizer"))?;
        let mut step = || -> Result<f64, BenchmarkError> {
            let start = Instant::now();
            let l = loss(net, x, labels).map_err(failed("forward"))?;
            sgd.backward_step(&l).map_err(failed("backward"))?;
            Ok(start.elapsed().as_secs_f64())
        };
        step()?;
        measure.begin_measurement();
        let start = Instant::now();
        let rows: Vec<Vec<f64>> = (0..self.steps)
            .map(|_| step().map(|s| vec![s]))
            .collect::<Result<_, _>>()?;
        let n = x.dims()[0];
        let def = SeriesDef::rate("images_per_s", "images/s", n as f64);
        let m = measure.record(std::slice::from_ref(&def), &rows, 0, start.elapsed());
        self.loss_before = Some(before);
        let size = x.dims()[2];
        let gflop = 3.0 * resnet::forward_flops(size) / 1e9;
        let mut details = vec![
            (
                "parameters".into(),
                ParamValue::Int(net.parameters() as i64),
            ),
            ("loss_before".into(), ParamValue::Float(before as f64)),
            ("steps".into(), ParamValue::Int(self.steps as i64 + 1)),
            ("gflop_per_image".into(), ParamValue::Float(gflop)),
            (
                "counting".into(),
                ParamValue::from(
                    "images/s = batch / the step's seconds (forward, loss, backward, update); GFLOP per image ~ 3 x the forward's",
                ),
            ),
        ];
        if let Some(rate) = m.metrics.first() {
            details.push(("gflops".into(), ParamValue::Float(rate.value * gflop)));
        }
        Ok(Measured::new(m.metrics, details))
    }

    fn validate(&mut self, _: &RunContext) -> Validation {
        let (Some(net), Some((x, labels)), Some(before)) =
            (&self.net, &self.batch, self.loss_before)
        else {
            return Validation::fail("nothing was trained");
        };
        match loss(net, x, labels).and_then(|l| l.to_dtype(DType::F32)?.to_scalar::<f32>()) {
            Ok(after) if after.is_finite() && after < before => Validation::pass(format!(
                "the loss on the batch fell from {before:.4} to {after:.4} over {} SGD steps",
                self.steps + 1
            )),
            Ok(after) => Validation::fail(format!(
                "the loss on the batch did not fall: {before:.4} before, {after:.4} after {} steps",
                self.steps + 1
            )),
            Err(e) => Validation::fail(format!("the loss after training: {e}")),
        }
    }
}
