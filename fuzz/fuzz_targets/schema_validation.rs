//! Fuzz target `schema_validation`: see [`agent_fuzz::schema_validation`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::schema_validation(data));
