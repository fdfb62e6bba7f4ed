//! The compatibility map: which model family runs in which precision on
//! which device with this build (`warpt list`, the benchmarks'
//! descriptions), and the nearest combination that does when one does not.

use warpt_model::ModelSupport;

use crate::family::{Family, Kind};

/// The devices candle was built for here: the CPU always, CUDA in a build
/// with the `cuda` feature ([`crate::device::BUILT`]); Metal never.
pub const BUILT_DEVICES: &[&str] = crate::device::BUILT;

/// Every device a model parameter names.
const DEVICES: &[&str] = &["cpu", "cuda", "metal"];

/// The benchmark a family runs in, and the precisions it runs in.
fn runs_in(family: Family) -> (&'static str, &'static [&'static str]) {
    match family.kind() {
        Kind::Decoder if family == Family::Llama => (
            "pepbench/llm_infer",
            &["f32", "bf16", "f16", "q8_0", "q4_0"],
        ),
        Kind::Decoder | Kind::EncoderDecoder => ("pepbench/llm_infer", &["f32", "bf16", "f16"]),
        Kind::Encoder => ("pepbench/embed", &["f32", "bf16", "f16"]),
        Kind::Vision => ("pepbench/vision_infer", &["f32", "bf16", "f16"]),
        Kind::Speech => ("pepbench/speech_infer", &["f32"]),
    }
}

/// The map for this build: one row per family and device.
pub fn table() -> Vec<ModelSupport> {
    let mut rows = Vec::new();
    for family in Family::ALL {
        let (benchmark, precisions) = runs_in(family);
        for &device in DEVICES {
            let reason = if !BUILT_DEVICES.contains(&device) {
                Some(format!(
                    "this warpt was built without candle's {device} support"
                ))
            } else {
                None
            };
            rows.push(ModelSupport {
                family: family.model_type().into(),
                benchmark: benchmark.into(),
                device: device.into(),
                precisions: if reason.is_none() {
                    precisions.iter().map(|p| p.to_string()).collect()
                } else {
                    Vec::new()
                },
                reason,
            });
        }
    }
    rows
}

/// Why `family` cannot run in `precision` on `device`, naming the nearest
/// combination that runs here; `None` when it runs.
pub fn refusal(family: Family, precision: &str, device: &str) -> Option<String> {
    let (_, precisions) = runs_in(family);
    let name = family.model_type();
    let device_ok = BUILT_DEVICES.contains(&device);
    let precision_ok = precisions.contains(&precision);
    if device_ok && precision_ok {
        return None;
    }
    // Nearest: the same precision elsewhere, else the same device in the
    // format closest in size (the smallest that is not smaller, else the
    // largest there is).
    let order = ["q4_0", "q8_0", "f16", "bf16", "f32"];
    let rank = |p: &str| order.iter().position(|q| *q == p).unwrap_or(order.len());
    let nearest_precision = precisions
        .iter()
        .filter(|p| rank(p) >= rank(precision))
        .min_by_key(|p| rank(p))
        .or_else(|| precisions.iter().max_by_key(|p| rank(p)))
        .copied()
        .unwrap_or("f32");
    let nearest_device = BUILT_DEVICES.first().copied().unwrap_or("cpu");
    Some(match (device_ok, precision_ok) {
        (false, true) => format!(
            "device '{device}': this warpt was built without candle's {device} support; \
             device={nearest_device} precision={precision} runs {name} here"
        ),
        (true, false) => format!(
            "{name} does not run in {precision} (it runs in {}); precision={nearest_precision} on \
             {device} is the nearest that does",
            precisions.join(", ")
        ),
        _ => format!(
            "{name} does not run in {precision} on {device} with this build; \
             device={nearest_device} precision={nearest_precision} is the nearest that does"
        ),
    })
}

/// One line for a benchmark's description: which families run in which
/// precisions on which device with this build.
pub fn summary(benchmark: &str) -> String {
    let rows: Vec<ModelSupport> = table()
        .into_iter()
        .filter(|r| r.benchmark == benchmark)
        .collect();
    let mut parts = Vec::new();
    for &device in DEVICES {
        let here: Vec<&ModelSupport> = rows.iter().filter(|r| r.device == device).collect();
        if here.iter().all(|r| r.precisions.is_empty()) {
            parts.push(format!("{device}: not in this build"));
            continue;
        }
        // Families with the same precisions together.
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for r in &here {
            let key = r.precisions.join("/");
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, fams)) => fams.push(&r.family),
                None => groups.push((key, vec![&r.family])),
            }
        }
        let text: Vec<String> = groups
            .iter()
            .map(|(p, fams)| format!("{} in {p}", fams.join(", ")))
            .collect();
        parts.push(format!("{device}: {}", text.join("; ")));
    }
    parts.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_and_the_refusals_agree() {
        let rows = table();
        assert_eq!(rows.len(), Family::ALL.len() * DEVICES.len());
        for r in &rows {
            let family = Family::from_model_type(&r.family).unwrap_or(Family::Llama);
            for p in ["f32", "bf16", "f16", "q8_0", "q4_0"] {
                let runs = r.precisions.iter().any(|q| q == p);
                assert_eq!(refusal(family, p, &r.device).is_none(), runs, "{r:?} {p}");
            }
        }
        let q8 = refusal(Family::Qwen2, "q8_0", "cpu").unwrap_or_default();
        assert!(q8.contains("precision=f16 on cpu is the nearest"), "{q8}");
        let cuda = refusal(Family::Llama, "bf16", "cuda");
        let families = "llama in f32/bf16/f16/q8_0/q4_0; mistral, qwen2, qwen3, phi3, gemma, gemma2, gpt2, \
                        t5 in f32/bf16/f16";
        if BUILT_DEVICES.contains(&"cuda") {
            assert_eq!(cuda, None);
            assert_eq!(
                summary("pepbench/llm_infer"),
                format!("cpu: {families} | cuda: {families} | metal: not in this build")
            );
        } else {
            let cuda = cuda.unwrap_or_default();
            assert!(
                cuda.contains("device=cpu precision=bf16 runs llama here"),
                "{cuda}"
            );
            assert_eq!(
                summary("pepbench/llm_infer"),
                format!("cpu: {families} | cuda: not in this build | metal: not in this build")
            );
        }
        let whisper = refusal(Family::Whisper, "bf16", "cpu").unwrap_or_default();
        assert!(whisper.contains("precision=f32"), "{whisper}");
    }
}
