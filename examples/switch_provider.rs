//! The same agent on any provider, chosen by configuration: the provider
//! comes from `examples/switch_provider.toml` (or the file named by
//! `AGENTRY_EXAMPLE_CONFIG`), and `AGENTRY_EXAMPLE_PROVIDER` overrides it.
//!
//! ```sh
//! cargo run --example switch_provider                                   # offline script
//! AGENTRY_EXAMPLE_PROVIDER=openai cargo run --example switch_provider   # OPENAI_API_KEY
//! AGENTRY_EXAMPLE_PROVIDER=ollama cargo run --example switch_provider --features agentry/ollama
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use agent_testing::{ScriptedClient, response};
use agentry::prelude::*;
use agentry::serde_json::json;

const QUESTION: &str = "What is 1234 * 5678? Use the calculator.";

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("switch_provider: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::var_os("AGENTRY_EXAMPLE_CONFIG").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/switch_provider.toml"),
        PathBuf::from,
    );
    let text = std::fs::read_to_string(&path).map_err(|error| format!("{}: {error}", path.display()))?;
    let file: toml::Table = toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))?;
    let name = match std::env::var("AGENTRY_EXAMPLE_PROVIDER") {
        Ok(name) if !name.is_empty() => name,
        _ => file
            .get("provider")
            .and_then(toml::Value::as_str)
            .unwrap_or("scripted")
            .to_owned(),
    };

    // The only provider-specific line: configuration in, client out.
    let client = client_for(&name, &file).await?;

    // Everything below is the same whatever the provider.
    let agent = Agent::builder(client)
        .system_prompt("You are terse. Use the calculator for arithmetic.")
        .tools_from(Arc::new(agentry::math::tool_set()))
        .build();
    let result = agent.run(QUESTION).await?;
    for call in &result.tool_calls {
        println!("tool {}({}) -> {}", call.name, call.arguments, call.result);
    }
    println!("[{name}] {} ({:?})", result.response.trim(), result.stop_reason);
    if result.stop_reason != RunEnd::Completed {
        return Err(format!("the run ended with {:?}", result.stop_reason).into());
    }
    Ok(())
}

/// A client for the provider `name`, configured by the file's table of
/// that name.
async fn client_for(name: &str, file: &toml::Table) -> Result<Arc<dyn LlmClient>, Box<dyn std::error::Error>> {
    if name == "scripted" {
        let script = ScriptedClient::new()
            .respond(response::tool_calls([(
                "calculator",
                json!({"expression": "1234 * 5678"}),
            )]))
            .respond(response::text("1234 * 5678 = 7006652."));
        return Ok(Arc::new(script));
    }
    let mut table = file
        .get(name)
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    table.insert("provider".to_owned(), toml::Value::String(name.to_owned()));
    let config: ProviderConfig = toml::Value::Table(table).try_into().map_err(|error| {
        format!(
            "provider `{name}`: {}; this build has: scripted, {} (others need their cargo feature: --features agentry/{name})",
            error.to_string().trim_end().replace('\n', " "),
            ProviderConfig::available().join(", ")
        )
    })?;
    // Loading a local model blocks; remote clients are made at once.
    Ok(tokio::task::spawn_blocking(move || config.client()).await??)
}
