//! Wiring: settings + client + tools + catalog -> [`Agent`].

use std::sync::Arc;

use agent_core::{LlmClient, ModelCatalog, ModelInfo, Pricing};
use agent_runner::{Agent, RunConfig};
use chrono::NaiveDate;

use crate::config::Settings;
use crate::tools::ToolBox;

/// The system prompt used when `agent.system_prompt` is not set.
pub fn default_system_prompt(today: NaiveDate) -> String {
    format!(
        "You are Agentry, a helpful assistant that uses tools when they help. Today is {} ({}). \
         Use a tool for every fact it can give you (weather, prices, exchange rates, calculations) instead of \
         guessing. If a tool needs information the user has not given, ask the user for it rather than inventing \
         it. Dates for tools are YYYY-MM-DD. Answer briefly.",
        today.format("%A, %B %-d, %Y"),
        today.format("%Y-%m-%d")
    )
}

/// Today's local date.
pub fn today() -> NaiveDate {
    chrono::Local::now().date_naive()
}

/// The catalog with a zero price for the local model in use, when it is not
/// already listed (any GGUF file runs for free).
pub fn catalog_for(settings: &Settings, client: &dyn LlmClient) -> Arc<ModelCatalog> {
    let mut catalog = settings.catalog();
    if client.provider() == "llama" && catalog.get(client.model()).is_none() {
        catalog.insert(
            client.model(),
            ModelInfo {
                provider: "llama".to_owned(),
                context_window: None,
                pricing: Pricing::default(),
            },
        );
    }
    Arc::new(catalog)
}

/// The agent for `run` and `chat`.
pub fn build_agent(settings: &Settings, client: Arc<dyn LlmClient>, tools: &ToolBox) -> Agent {
    let agent = &settings.config.agent;
    let catalog = catalog_for(settings, client.as_ref());
    let config = RunConfig {
        max_iterations: agent.max_iterations,
        tool_protocol: agent.tool_protocol,
        budget: agent.budget.to_budget(),
        ..RunConfig::default()
    };
    let mut builder = Agent::builder(client)
        .name("agentry")
        .system_prompt(
            agent
                .system_prompt
                .clone()
                .unwrap_or_else(|| default_system_prompt(today())),
        )
        .tools(tools.registry())
        .config(config)
        .prompt_caching(agent.prompt_caching)
        .catalog(catalog);
    if let Some(max_tokens) = agent.max_tokens {
        builder = builder.max_tokens(max_tokens);
    }
    if let Some(temperature) = agent.temperature {
        builder = builder.temperature(temperature);
    }
    builder.build()
}
