#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::models::model_dir`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::models::model_dir(data));
