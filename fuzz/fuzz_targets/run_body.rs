#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::wire::run_body`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::wire::run_body(data));
