//! Fuzz target `sql_guard`: see [`agent_fuzz::sql_guard`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::sql_guard(data));
