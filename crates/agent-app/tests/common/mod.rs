//! Shared by the tests that run the real embedded model.

use agent_provider_llama::models::{DEFAULT_MODEL, ModelStore, known_model};

/// Whether the default model is in the store. Without it the caller skips
/// (after saying so), unless `AGENTRY_REQUIRE_MODEL` is set, as CI does: then
/// this fails.
pub fn model_is_fetched() -> bool {
    let ready = known_model(DEFAULT_MODEL).is_some_and(|model| ModelStore::default_location().is_ready(model));
    if !ready {
        assert!(
            std::env::var_os("AGENTRY_REQUIRE_MODEL").is_none(),
            "the model {DEFAULT_MODEL} is not in the store; run `cargo xtask fetch-model`"
        );
        agent_testing::report_skip!("the model is not fetched (run `cargo xtask fetch-model`)");
    }
    ready
}
