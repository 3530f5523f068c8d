//! Fuzz target `ndjson_decoder`: see [`agent_fuzz::ndjson_decoder`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::ndjson_decoder(data));
