#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::wire::net_hello`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::wire::net_hello(data));
