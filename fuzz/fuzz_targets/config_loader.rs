//! Fuzz target `config_loader`: see [`agent_fuzz::config_loader`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::config_loader(data));
