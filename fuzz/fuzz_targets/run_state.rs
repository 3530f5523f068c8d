//! Fuzz target `run_state`: see [`agent_fuzz::run_state`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::run_state(data));
