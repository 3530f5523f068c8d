//! Fuzz target `templates`: see [`agent_fuzz::templates`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::templates(data));
