//! The `examples` step of `cargo xtask ci`: runs every program of the
//! repository's `examples/` directory and fails if one fails.

use std::process::Command;

use agent_model_store::{self as models, ModelStore};

/// The examples that run offline with the default features.
const OFFLINE: &[&str] = &["typed_tool", "streaming", "switch_provider"];

/// Runs each example with `cargo`; the local-model ones (`local_model`, and
/// `travel_assistant`, the demo's ten turns on the embedded model) run where
/// the model is fetched, or always when `AGENTRY_REQUIRE_MODEL=1` (as in
/// CI), so a missing model fails there instead of skipping.
pub fn run(cargo: &str) -> Result<(), String> {
    let mut runs: Vec<Vec<&str>> = OFFLINE
        .iter()
        .map(|name| vec!["run", "--quiet", "--example", name])
        .collect();
    if model_expected() {
        runs.push(vec![
            "run",
            "--quiet",
            "--example",
            "local_model",
            "--features",
            "agentry/llama",
        ]);
        // agent-travel-assistant has the llama provider as a dev-dependency:
        // no feature to turn on.
        runs.push(vec!["run", "--quiet", "--example", "travel_assistant"]);
    } else {
        eprintln!(
            "xtask ci: examples: skipping local_model and travel_assistant: the model is not fetched (run `cargo xtask \
             fetch-model`, or set AGENTRY_REQUIRE_MODEL=1 to fail instead)"
        );
    }
    for args in runs {
        let name = args[3];
        eprintln!("==> xtask ci: example {name}: cargo {}", args.join(" "));
        let status = Command::new(cargo)
            .args(&args)
            // From the workspace root, where `--example NAME` finds them.
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            // The scripted default, whatever the caller's environment says.
            .env_remove("AGENTRY_EXAMPLE_PROVIDER")
            .env_remove("AGENTRY_EXAMPLE_CONFIG")
            .status()
            .map_err(|error| format!("could not start cargo for example `{name}`: {error}"))?;
        if !status.success() {
            return Err(format!("example `{name}` failed ({status})"));
        }
    }
    Ok(())
}

/// Whether the local-model examples should run.
fn model_expected() -> bool {
    if std::env::var("AGENTRY_REQUIRE_MODEL").is_ok_and(|value| value == "1") {
        return true;
    }
    models::known_model(models::DEFAULT_MODEL).is_some_and(|model| ModelStore::default_location().is_ready(model))
}
