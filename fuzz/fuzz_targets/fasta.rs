#![no_main]
//! libFuzzer's entry to [`warpt_fuzz::bio::fasta`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| warpt_fuzz::bio::fasta(data));
