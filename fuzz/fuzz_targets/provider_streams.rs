//! Fuzz target `provider_streams`: see [`agent_fuzz::provider_streams`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::provider_streams(data));
