#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::models::gguf_file`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::models::gguf_file(data));
