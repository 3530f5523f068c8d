//! Fuzz target `agent_parse`: see [`agent_fuzz::agent_parse`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::agent_parse(data));
