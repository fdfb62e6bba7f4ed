//! The bodies of warpt's fuzz targets: one function per reader of outside
//! input, each taking the fuzzer's bytes and panicking only on a bug (a
//! reader that panics, aborts, hangs, or breaks a property stated beside
//! it). `fuzz_targets/NAME.rs` hands libFuzzer the function `NAME`;
//! `scripts/fuzz` runs them all.
//!
//! Readers that take a path get the bytes as a file in this process's
//! [`scratch`] directory, so the very code a user's file meets is fuzzed.

pub mod bio;
pub mod config;
pub mod models;
pub mod results;
pub mod scratch;
pub mod serving;
pub mod wire;

/// The part of `data` before its first NUL byte and the part after it:
/// how a target that needs two inputs (a config and its weights) takes
/// them from one. Without a NUL the second part is empty.
pub fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// Panics warpt catches on purpose, by the file they are raised in:
/// libFuzzer's panic hook aborts on every panic, caught or not, so the
/// targets whose readers catch one let these through. The tokenizers
/// library panics on a `decoder` of the wrong shape instead of returning an
/// error; `tokenize::load_file` catches it.
const CAUGHT: &[(&str, &str)] = &[("tokenizers-", "src/decoders/mod.rs")];

/// Lets the [`CAUGHT`] panics unwind to the code that catches them; every
/// other panic still reaches the hook that was there (libFuzzer's abort).
pub fn let_caught_panics_unwind() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let caught = info.location().is_some_and(|l| {
                CAUGHT
                    .iter()
                    .any(|(krate, file)| l.file().contains(krate) && l.file().ends_with(file))
            });
            if !caught {
                previous(info);
            }
        }));
    });
}

/// A target's body: the fuzzer's bytes in, a panic out on a bug.
pub type Body = fn(&[u8]);

/// Every target: its name (its `fuzz_targets/` file and `corpus/` folder)
/// and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("gguf_file", models::gguf_file),
    ("model_dir", models::model_dir),
    ("hf_config", models::hf_config),
    ("tokenizer_json", models::tokenizer_json),
    ("sse_stream", serving::sse_stream),
    ("serving_inputs", serving::serving_inputs),
    ("import_file", results::import_file),
    ("import_criterion", results::import_criterion),
    ("hpl_output", results::hpl_output),
    ("warpt_toml", config::warpt_toml),
    ("bench_config", config::bench_config),
    ("fasta", bio::fasta),
    ("fastq", bio::fastq),
    ("protocol_reply", wire::protocol_reply),
    ("run_body", wire::run_body),
    ("net_hello", wire::net_hello),
];

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod seeds;
