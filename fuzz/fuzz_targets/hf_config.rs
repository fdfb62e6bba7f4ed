#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::models::hf_config`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::models::hf_config(data));
