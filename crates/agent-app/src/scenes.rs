//! `[scenes]`: scenes declared in `agentry.toml` (read by
//! [`Settings::scene_specs`]), and how `run`, `chat` and `demo` use them
//! (the demo's as [`scene_list`], given to the travel-assistant crate).
//!
//! ```toml
//! [scenes]
//! default = "general"            # optional: the scene for requests no scene fits
//!
//! [scenes.math]
//! description = "Arithmetic and unit conversions."   # what the routing model reads
//! system_prompt = "You calculate. Use the calculator for every number."
//! tools = ["math"]               # tool domains, or single tools ("get_weather")
//!
//! [scenes.weather]
//! description = "The current weather in a city."
//! prompt_template = "prompts/weather.md"   # a {{var}} template, relative to this file
//! tools = ["get_weather"]
//! current_date = true            # adds `date` and `weekday` (UTC)
//! context = { home = "Lisbon" }  # fixed values (a user profile, ...)
//! ```
//!
//! When the file has scenes, every request first goes to the model with one
//! function per scene (in the order of their names); the name it picks is
//! matched forgivingly (case, separators, small typos), else the default
//! scene runs, else the request fails naming the scenes. Then the scene's
//! own loop runs with its prompt and only its tools, under the `[agent]`
//! settings. A scene without a prompt gets the agent's system prompt and a
//! line naming the scene. Template variables come from `context`,
//! `current_date`, and `scene` / `description`; values the template does
//! not use are appended under `Context:`.
//!
//! `run --json` then has one more key, `scene`: the scene that ran (its
//! routing call counts in `usage`). Without `[scenes]` nothing changes.
//! Scene runs are not saved step by step: `agentry resume` cannot continue
//! one, and `--schema` does not apply.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{LlmClient, ToolProvider};
use agent_runner::scenes::{Scene, SceneError, SceneRouter, SceneRouterBuilder};

use crate::error::{AppError, ConfigError};
use crate::tools::ToolBox;
use agentry::config::{SceneSpecs, Settings};

/// A router builder for `specs` over `client` and `providers`; scenes
/// without a prompt of their own get `base_prompt` and a line naming them.
pub fn router_builder(
    specs: &SceneSpecs,
    client: Arc<dyn LlmClient>,
    providers: &[Arc<dyn ToolProvider>],
    base_prompt: &str,
) -> Result<SceneRouterBuilder, ConfigError> {
    let mut builder = SceneRouter::builder(client)
        .providers(providers.iter().cloned())
        .scenes(scene_list(specs, base_prompt)?);
    if let Some(default) = &specs.default {
        builder = builder.default_scene(default.clone());
    }
    Ok(builder)
}

/// The runner's scenes of `specs`, in order; scenes without a prompt of
/// their own get `base_prompt` and a line naming them.
pub fn scene_list(specs: &SceneSpecs, base_prompt: &str) -> Result<Vec<Scene>, ConfigError> {
    specs.scenes.iter().map(|spec| spec.scene(base_prompt)).collect()
}

/// A router's build error as a configuration error naming the key.
pub fn config_error(settings: &Settings, error: &SceneError) -> ConfigError {
    let key = match error {
        SceneError::UnknownTool { scene, .. } | SceneError::Registry { scene, .. } => format!("scenes.{scene}.tools"),
        SceneError::UnknownDefault { .. } => "scenes.default".to_owned(),
        _ => "scenes".to_owned(),
    };
    ConfigError::InvalidValue {
        origin: settings.origin(&key),
        key,
        message: error.to_string(),
    }
}

/// The router of `run` and `chat` when `[scenes]` is configured: the
/// enabled tool domains, the `[agent]` settings, the catalog's prices.
pub fn router_for(
    settings: &Settings,
    client: &Arc<dyn LlmClient>,
    tools: &ToolBox,
) -> Result<Option<SceneRouter>, AppError> {
    let Some(specs) = settings.scene_specs()? else {
        return Ok(None);
    };
    let agent = &settings.config.agent;
    let base = agent
        .system_prompt
        .clone()
        .unwrap_or_else(|| crate::assemble::default_system_prompt(crate::assemble::today()));
    let mut builder = router_builder(&specs, Arc::clone(client), &tools.providers(), &base)?
        .configure(crate::assemble::configure_agent(settings, client.as_ref()))
        .catalog(crate::assemble::catalog_for(settings, client.as_ref()))
        .require_approval(settings.config.tools.require_approval.iter().cloned());
    if let Some(timeout) = settings
        .config
        .tools
        .timeout_secs
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
    {
        builder = builder.tool_timeout(timeout);
    }
    let request = settings.agent_config().request;
    if let Some(max_tokens) = request.max_tokens {
        builder = builder.routing_max_tokens(max_tokens);
    }
    if let Some(temperature) = request.temperature {
        builder = builder.routing_temperature(temperature);
    }
    builder
        .build()
        .map(Some)
        .map_err(|error| config_error(settings, &error).into())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[cfg(feature = "travel")]
    use agent_core::ToolContext;

    use super::*;
    use agentry::config::{Env, Overrides};

    fn settings(toml: &str, dir: &Path) -> Result<Settings, ConfigError> {
        std::fs::write(dir.join("agentry.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        Settings::load(&Overrides::default(), &Env::default(), dir)
    }

    const SCENES: &str = "[scenes]\ndefault = \"math\"\n\
        [scenes.math]\ndescription = \"Arithmetic\"\nsystem_prompt = \"You calculate.\"\ntools = [\"math\"]\n\
        [scenes.weather]\ndescription = \"Weather\"\nprompt_template = \"weather.md\"\ntools = [\"get_weather\"]\n\
        context = { home = \"Lisbon\" }\n";

    #[test]
    fn scenes_are_read_with_their_templates() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("weather.md"), "You forecast for {{home}}.").unwrap_or_else(|e| panic!("{e}"));
        let loaded = settings(SCENES, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let specs = loaded
            .scene_specs()
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no scenes"));
        assert_eq!(specs.default.as_deref(), Some("math"));
        let names: Vec<&str> = specs.scenes.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["math", "weather"]);
        assert_eq!(specs.scenes[1].template.as_deref(), Some("You forecast for {{home}}."));
        assert_eq!(specs.scenes[1].entry.tools, ["get_weather"]);

        let none = settings("", dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(none.scene_specs(), Ok(None)));
    }

    #[test]
    fn bad_scene_tables_name_the_key() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let error = |toml: &str| {
            settings(toml, dir.path())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let message = error("[scenes.math]\ndescription = \"x\"\ntool = [\"math\"]\n");
        assert!(message.contains("scenes.math") && message.contains("tool"), "{message}");
        let message = error("[scenes.math]\nsystem_prompt = \"x\"\n");
        assert!(message.contains("description"), "{message}");
        let message = error("[scenes.math]\ndescription = \"x\"\nsystem_prompt = \"a\"\nprompt_template = \"b.md\"\n");
        assert!(message.contains("not both"), "{message}");
        let message = error("[scenes.math]\ndescription = \"x\"\nprompt_template = \"missing.md\"\n");
        assert!(
            message.contains("scenes.math.prompt_template") && message.contains("missing.md"),
            "{message}"
        );
        let message = error("[scenes]\ndefault = \"math\"\n");
        assert!(message.contains("no scenes"), "{message}");
    }

    #[cfg(feature = "travel")]
    #[tokio::test]
    async fn the_router_uses_the_enabled_domains_and_reports_bad_tools_as_configuration() {
        use agent_testing::{ScriptedClient, response};
        use serde_json::json;

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("weather.md"), "You forecast for {{home}}.").unwrap_or_else(|e| panic!("{e}"));
        let settings = settings(SCENES, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let tools = crate::tools::ToolBox::from_settings(&settings, &Env::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let client = ScriptedClient::new()
            .respond(response::tool_calls([("Weather", json!({}))]))
            .respond(response::text("Sunny."));
        let shared: Arc<dyn LlmClient> = Arc::new(client.clone());
        let router = router_for(&settings, &shared, &tools)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no router"));
        assert_eq!(router.default_scene(), Some("math"));
        let result = router
            .run(Vec::new(), "Weather?", &ToolContext::new())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(result.scene.as_deref(), Some("weather"));
        let scene_request = &client.requests()[1];
        assert_eq!(scene_request.system.as_deref(), Some("You forecast for Lisbon."));
        let names: Vec<&str> = scene_request.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, ["get_weather"]);

        let settings = self::settings(
            "[tools]\nenabled = [\"math\"]\n[scenes.web]\ndescription = \"Pages\"\ntools = [\"fetch_url\"]\n",
            dir.path(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let tools = crate::tools::ToolBox::from_settings(&settings, &Env::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let error = router_for(&settings, &shared, &tools)
            .err()
            .unwrap_or_else(|| panic!("no error"));
        assert_eq!(error.exit_code(), crate::error::EXIT_USAGE);
        let message = error.to_string();
        assert!(
            message.contains("scenes.web.tools") && message.contains("fetch_url"),
            "{message}"
        );
    }
}
