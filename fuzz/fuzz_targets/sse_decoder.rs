//! Fuzz target `sse_decoder`: see [`agent_fuzz::sse_decoder`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::sse_decoder(data));
