//! The mlperf suite: MLPerf Inference's load scenarios measured the way
//! LoadGen measures them, on systems under test built here.
//!
//! - [`loadgen`]: the scenario engine (scenarios, early stopping,
//!   validity, peak search, MLPerf's log files and their parser);
//! - [`bench`]: parameters, settings and the run every benchmark shares;
//! - [`metrics`]: an outcome as warpt's metrics and details;
//! - [`synthetic`]: a SUT of known service time, to check the engine;
//! - [`bert_infer`]: BERT question answering on SQuAD-shaped inputs;
//! - [`llm_infer`]: pepbench's LLM with TTFT / TPOT bounds;
//! - [`llm_serve`]: an OpenAI-compatible server, through pepbench's serving client;
//! - [`resnet50_infer`]: ResNet-50 v1.5 image classification;
//! - [`resnet50_train`]: ResNet-50 training throughput;
//! - [`resnet`], [`resnet_gemm`], [`winograd`], [`resnet_candle`],
//!   [`resnet_reference`], [`images`]: the network (weights, training on
//!   candle), inference as channels-last GEMMs (3×3 stride-1 convolutions
//!   by Winograd's F(2×2, 3×3)), inference on candle for a GPU, its f64
//!   check, and image directories;
//! - [`external`]: an official MLPerf reference implementation, its logs read.

pub mod bench;
pub mod bert_infer;
pub mod external;
pub mod images;
mod lines;
pub mod llm_infer;
pub mod llm_serve;
pub mod loadgen;
pub mod metrics;
pub mod quality;
pub mod resnet;
pub mod resnet50_infer;
pub mod resnet50_train;
pub mod resnet_candle;
pub mod resnet_gemm;
pub mod resnet_reference;
pub mod squad;
pub mod synthetic;
pub mod winograd;

use warpt_harness::{Listed, ListedSuite};
use warpt_model::StageLimits;

use crate::loadgen::Summary;
use crate::loadgen::engine::SampleRecord;

/// The suite's name.
pub const SUITE: &str = "mlperf";

/// Stage limits of the suite's benchmarks: a test lasts as long as its
/// rules say (600 s each under `rules=official`, many of them in a peak
/// search), so the measurement limit is hours, not the harness default.
pub const LIMITS: StageLimits = StageLimits {
    setup: Some(600.0),
    warmup: None,
    measure: Some(4.0 * 3600.0),
    validate: Some(600.0),
};

/// The metrics a scenario benchmark may report.
pub fn scenario_metrics() -> Vec<String> {
    [
        "latency_p90_ms",
        "latency_p99_ms",
        "qps",
        "samples_per_s",
        "latency_ms",
    ]
    .into_iter()
    .map(String::from)
    .collect()
}

/// Checks a test's answers: no sample answered twice, every response
/// accepted by `ok`, and an AccuracyOnly run covering the whole library
/// exactly once. The message says what was checked, or what failed.
pub fn check_answers(
    summary: &Summary,
    ok: impl Fn(&SampleRecord) -> bool,
) -> Result<String, String> {
    let r = &summary.result;
    if r.duplicate_responses > 0 {
        return Err(format!(
            "{} responses came for samples already answered",
            r.duplicate_responses
        ));
    }
    if let Some(bad) = r.samples.iter().find(|s| !ok(s)) {
        return Err(format!(
            "the response to sample {} is wrong: {:02x?}",
            bad.index, bad.data
        ));
    }
    if summary.settings.mode == loadgen::Mode::AccuracyOnly {
        let mut seen: Vec<usize> = r.samples.iter().map(|s| s.index).collect();
        seen.sort_unstable();
        if seen != (0..summary.settings.total_sample_count as usize).collect::<Vec<_>>() {
            return Err(format!(
                "the accuracy run answered {} samples, not each of the {} once",
                seen.len(),
                summary.settings.total_sample_count
            ));
        }
    }
    Ok(format!(
        "{} queries, {} samples: every sample answered exactly once, each response correct",
        r.queries_issued,
        r.samples.len()
    ))
}

/// The suite's benchmarks, in the order `list` shows them.
const BENCHMARKS: &[Listed] = &[
    Listed::new(resnet50_infer::spec, || {
        Box::new(resnet50_infer::Resnet50Infer::default())
    }),
    Listed::new(resnet50_train::spec, || {
        Box::new(resnet50_train::Resnet50Train::default())
    }),
    Listed::new(bert_infer::spec, || {
        Box::new(bert_infer::BertInfer::default())
    }),
    Listed::new(llm_infer::spec, || Box::new(llm_infer::LlmInfer::default())),
    Listed::new(llm_serve::spec, || Box::new(llm_serve::LlmServe::default())),
    Listed::new(
        synthetic::spec,
        || Box::new(synthetic::Synthetic::default()),
    ),
    Listed::new(external::spec, || Box::new(external::External::default())),
];

/// The mlperf suite, for the registry.
pub const MLPERF: ListedSuite = ListedSuite {
    name: SUITE,
    description: "MLPerf Inference scenarios (SingleStream, MultiStream, Server, Offline) with LoadGen's validity rules and logs; ResNet-50, BERT and LLM SUTs, training throughput, the official harness",
    benchmarks: BENCHMARKS,
};
