#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::wire::protocol_reply`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::wire::protocol_reply(data));
