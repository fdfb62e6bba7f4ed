#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::models::tokenizer_json`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::models::tokenizer_json(data));
