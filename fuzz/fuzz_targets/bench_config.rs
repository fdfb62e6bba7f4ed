#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::config::bench_config`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::config::bench_config(data));
