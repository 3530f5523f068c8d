//! Wiring: settings + client + tools + catalog -> [`Agent`].

use std::sync::Arc;

use agent_core::{LlmClient, ModelCatalog, ModelInfo, Pricing};
use agent_runner::{Agent, AgentBuilder};
use chrono::NaiveDate;

use crate::tools::ToolBox;
use agentry::config::Settings;

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
                inputs: None,
            },
        );
    }
    Arc::new(catalog)
}

/// The `[agent]` and `[tools]` settings of every agent built from
/// `settings` for `client` (loop policies, budgets, tokens, temperature,
/// prompt caching, context window, prices, guardrails), as a step of an
/// [`AgentBuilder`]: the agent of `run` and `chat`, and each scene's.
pub fn configure_agent(
    settings: &Settings,
    client: &dyn LlmClient,
) -> impl Fn(AgentBuilder) -> AgentBuilder + Send + Sync + 'static {
    let config = settings.agent_config();
    let catalog = catalog_for(settings, client);
    let window = crate::providers::configured_context_window(settings, client);
    let guardrails = settings.guardrails().clone();
    move |builder: AgentBuilder| {
        let builder = builder.agent_config(config.clone()).guardrails(guardrails.clone());
        let builder = builder.catalog(Arc::clone(&catalog));
        match window {
            Some(window) => builder.context_window(window),
            None => builder,
        }
    }
}

/// The agent for `run` and `chat`.
pub fn build_agent(settings: &Settings, client: Arc<dyn LlmClient>, tools: &ToolBox) -> Agent {
    let configure = configure_agent(settings, client.as_ref());
    configure(Agent::builder(client))
        .name("agentry")
        .system_prompt(
            settings
                .config
                .agent
                .system_prompt
                .clone()
                .unwrap_or_else(|| default_system_prompt(today())),
        )
        .tools(tools.registry())
        .build()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_testing::ScriptedClient;

    use super::*;
    use agentry::config::{CONFIG_FILE_NAME, Env, Overrides};

    #[tokio::test]
    async fn the_tool_result_cap_and_budgets_of_the_file_reach_the_loop() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.path().join(CONFIG_FILE_NAME),
            "[agent]\nmax_iterations = 4\n[agent.budget]\nmax_total_tokens = 900\n[tools]\nmax_result_bytes = 100\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let env = Env::from_pairs([("AGENTRY_HOME", dir.path().to_string_lossy().into_owned())]);
        let settings = Settings::load(&Overrides::default(), &env, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let tools = crate::tools::ToolBox::from_settings(&settings, &env)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let agent = build_agent(&settings, Arc::new(ScriptedClient::new()), &tools);
        assert_eq!(agent.config().max_tool_result_bytes, 100);
        assert_eq!(agent.config().max_iterations, 4);
        assert_eq!(agent.config().budget.max_total_tokens, Some(900));

        let defaults =
            Settings::load(&Overrides::default(), &env, &dir.path().join("none")).unwrap_or_else(|e| panic!("{e}"));
        let agent = build_agent(&defaults, Arc::new(ScriptedClient::new()), &tools);
        assert_eq!(
            agent.config().max_tool_result_bytes,
            agent_runner::DEFAULT_MAX_TOOL_RESULT_BYTES
        );
    }
}
