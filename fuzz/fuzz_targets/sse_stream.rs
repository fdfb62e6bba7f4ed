#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::serving::sse_stream`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::serving::sse_stream(data));
