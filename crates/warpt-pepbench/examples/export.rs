//! Writes pepbench's seeded inputs as files, so a peer tool can run on
//! exactly what warpt runs on (used by `scripts/bench-pepbench`):
//!
//! ```text
//! export llama PRESET SEED DIR          Hugging Face directory (config.json, model.safetensors, f32)
//! export gguf PRESET SEED TYPE FILE     GGUF file, TYPE q8_0 | q4_0 | f32 | f16 | bf16
//! export tokenizer SEED FILE            the in-process BPE tokenizer, as tokenizer.json
//! export corpus SEED LINES FILE         held-out corpus text, one line per record
//! ```

use std::path::Path;

use candle_core::quantized::GgmlDType;
use warpt_models::{gguf, hf, model};
use warpt_pepbench::{corpus, tokenize};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("export: {e}");
        std::process::exit(2);
    }
}

fn num(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("'{s}' is not a number"))
}

fn run(args: &[String]) -> Result<(), String> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["llama", preset, seed, dir] => {
            let shape = model::Preset::parse(preset)?.shape();
            hf::save(Path::new(dir), &shape, num(seed)?)
        }
        ["gguf", preset, seed, qtype, file] => {
            let shape = model::Preset::parse(preset)?.shape();
            let qtype = match *qtype {
                "q8_0" => GgmlDType::Q8_0,
                "q4_0" => GgmlDType::Q4_0,
                "f32" => GgmlDType::F32,
                "f16" => GgmlDType::F16,
                "bf16" => GgmlDType::BF16,
                other => {
                    return Err(format!(
                        "type '{other}' is not one of q8_0, q4_0, f32, f16, bf16"
                    ));
                }
            };
            let tensors = model::generate(&shape, num(seed)?, &candle_core::Device::Cpu)
                .map_err(|e| e.to_string())?;
            gguf::save(Path::new(file), &shape, &tensors, qtype)
        }
        ["tokenizer", seed, file] => {
            let (t, _) = tokenize::load_or_train("", num(seed)?)?;
            t.save(file, false)
                .map_err(|e| format!("writing {file}: {e}"))
        }
        ["corpus", seed, lines, file] => {
            let text = corpus::lines(num(seed)?, num(lines)? as usize).join("\n");
            std::fs::write(file, text + "\n").map_err(|e| format!("writing {file}: {e}"))
        }
        _ => Err(
            "usage: export llama PRESET SEED DIR | gguf PRESET SEED TYPE FILE | \
                  tokenizer SEED FILE | corpus SEED LINES FILE"
                .into(),
        ),
    }
}
