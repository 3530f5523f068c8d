//! Fuzz target `server_bodies`: see [`agent_fuzz::server_bodies`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agent_fuzz::server_bodies(data));
