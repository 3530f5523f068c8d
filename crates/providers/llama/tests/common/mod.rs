//! What the real-model tests share.

use agent_provider_llama::models::{DEFAULT_MODEL, ModelStore, known_model};
use agent_provider_llama::{LlamaClient, LlamaConfig};

/// The embedded model loaded with `config`, or `None` (after saying why)
/// when it is not fetched; with `AGENTRY_REQUIRE_MODEL` set, as CI sets
/// it, a missing model fails the test instead.
pub fn client_with(config: LlamaConfig) -> Option<LlamaClient> {
    let known = known_model(DEFAULT_MODEL)?;
    if !ModelStore::default_location().is_ready(known) {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_MODEL").is_none(),
            "the model {DEFAULT_MODEL} is not in the store; run `cargo xtask fetch-model`"
        );
        eprintln!("skipped: the model is not fetched (run `cargo xtask fetch-model`)");
        return None;
    }
    Some(LlamaClient::load(config).expect("the model loads"))
}
