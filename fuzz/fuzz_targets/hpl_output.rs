#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::results::hpl_output`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::results::hpl_output(data));
