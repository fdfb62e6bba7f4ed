#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::results::import_criterion`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::results::import_criterion(data));
