//! Agentry's cross-crate end-to-end tests.
//!
//! This package holds no library code: its test targets (`e2e/*.rs`, listed
//! in its `Cargo.toml`) assemble a provider adapter, the runner
//! (`agent-runner`) and tool crates together, the way a program built on
//! Agentry does. Tests of one crate stay in that crate; shared test doubles
//! live in `agent-testing`. Run them with `cargo test -p agentry-tests`.
