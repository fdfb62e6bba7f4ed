#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::config::warpt_toml`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::config::warpt_toml(data));
