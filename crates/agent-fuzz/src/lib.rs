//! # agent-fuzz
//!
//! The checks behind Agentry's fuzz targets. Each takes arbitrary bytes,
//! feeds them to one parser or decoder of the project, and panics only when
//! a property it must keep is broken:
//!
//! | target | what it feeds | what must hold |
//! |---|---|---|
//! | `sse_decoder`, `ndjson_decoder` | a response body | the same items and error, fed whole or in pieces; no item over the limit |
//! | `provider_streams` | a body to each provider's reply parser and stream mapper | a reply or a typed error; the same events fed whole or in pieces |
//! | `agent_parse` | model text | JSON extraction, repair, ReAct steps and tool-call parsing never panic; the streaming filter shows the same text and calls whatever the pieces |
//! | `templates` | a `{{var}}` template | parsed or a typed error; a parsed one renders, values are never expanded again |
//! | `schema_validation` | a JSON Schema and arguments | a validator or a typed error; `validate` agrees with `problems` |
//! | `sql_guard` | a statement for the SQL tool | a result or a typed error; the database file unchanged |
//! | `url_policy` | a URL for `fetch_url` | no private, loopback or link-local address and no other scheme than http(s) passes |
//! | `config_loader` | an `agentry.toml` | settings or a typed error, and the parts they describe |
//! | `server_bodies` | a request body for each POST route | a 2xx or 4xx answer, never a 5xx |
//! | `run_state` | a saved run to resume | resumed, or refused with a typed error |
//!
//! libFuzzer runs them from the repository's `fuzz/` folder
//! (`cargo xtask fuzz`, docs/fuzzing.md); `cargo test -p agent-fuzz`
//! replays every seed and every regression input under `fuzz/`, so a crash
//! once found stays fixed on stable Rust.
//!
//! ```
//! // Any bytes: a target returns, or panics naming the broken property.
//! agent_fuzz::sse_decoder(b"data: {\"a\":1}\n\n: comment\ndata: [DONE]\n\n");
//! agent_fuzz::agent_parse(b"<tool_call>{\"name\": \"clock\", \"arguments\": {}}</tool_call>");
//! assert!(agent_fuzz::TARGETS.iter().any(|(name, _)| *name == "run_state"));
//! ```

mod agent;
mod config;
mod decoders;
mod parse;
mod pieces;
mod run_state;
mod runtime;
mod schema;
mod server;
mod sql;
mod streams;
mod templates;
mod url_policy;

pub use config::config_loader;
pub use decoders::{ndjson_decoder, sse_decoder};
pub use parse::agent_parse;
pub use run_state::{restores, run_state, saved_runs};
pub use schema::schema_validation;
pub use server::server_bodies;
pub use sql::sql_guard;
pub use streams::provider_streams;
pub use templates::templates;
pub use url_policy::url_policy;

/// A fuzz target's check.
pub type Check = fn(&[u8]);

/// Every target, by the name of its folder under `fuzz/` (`fuzz_targets`,
/// `seeds`, `regressions`).
pub const TARGETS: &[(&str, Check)] = &[
    ("sse_decoder", sse_decoder),
    ("ndjson_decoder", ndjson_decoder),
    ("provider_streams", provider_streams),
    ("agent_parse", agent_parse),
    ("templates", templates),
    ("schema_validation", schema_validation),
    ("sql_guard", sql_guard),
    ("url_policy", url_policy),
    ("config_loader", config_loader),
    ("server_bodies", server_bodies),
    ("run_state", run_state),
];
