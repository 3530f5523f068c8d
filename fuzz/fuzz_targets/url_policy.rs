//! Fuzz target `url_policy`: see [`agent_fuzz::url_policy`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::url_policy(data));
