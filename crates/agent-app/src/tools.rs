//! Tool domains: from `[tools]` to a registry of enabled providers.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{ToolDefinition, ToolProvider};
use agent_tools::Registry;
#[cfg(feature = "sql")]
use agent_tools_sql::{SqlConfig, SqlTools};
#[cfg(feature = "web")]
use agent_tools_web::{WebConfig, WebTools};
use serde::Serialize;

use crate::config::Settings;
use crate::env::Env;
use crate::error::{AppError, ConfigError};

/// A built-in tool domain: its name in `[tools] enabled`, what it offers,
/// and how it is built from the settings (its `[tools.NAME]` table). A
/// domain of a cargo feature that is off is still known, so that naming it
/// says which feature to build with.
pub struct ToolDomain {
    /// The name in `[tools] enabled`.
    pub name: &'static str,
    /// One line on what it offers.
    pub summary: &'static str,
    /// The cargo feature of agent-app that brings it in (none: always there).
    pub feature: Option<&'static str>,
    /// How it is built; none when its feature is off in this build.
    build: Option<BuildDomain>,
}

/// How a built-in domain is built from the settings.
type BuildDomain = fn(&Settings, &Env) -> Result<Arc<dyn ToolProvider>, AppError>;

impl std::fmt::Debug for ToolDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDomain")
            .field("name", &self.name)
            .field("summary", &self.summary)
            .field("feature", &self.feature)
            .field("compiled", &self.is_compiled())
            .finish_non_exhaustive()
    }
}

impl ToolDomain {
    /// Whether this build has the domain.
    pub fn is_compiled(&self) -> bool {
        self.build.is_some()
    }

    /// The domain built from `settings`, or the error naming its feature.
    fn build(&self, settings: &Settings, env: &Env) -> Result<Arc<dyn ToolProvider>, AppError> {
        let Some(build) = self.build else {
            return Err(self.not_compiled().into());
        };
        build(settings, env)
    }

    /// The error naming the feature a domain of another build needs.
    fn not_compiled(&self) -> ConfigError {
        let feature = self.feature.unwrap_or(self.name);
        ConfigError::not_compiled(format!("the tool domain `{}`", self.name), feature)
    }

    /// An error when the domain is known but its feature is off.
    pub(crate) fn check_compiled(&self) -> Result<(), ConfigError> {
        if self.is_compiled() {
            Ok(())
        } else {
            Err(self.not_compiled())
        }
    }
}

/// Every built-in tool domain: the one table that names them.
pub const TOOL_DOMAINS: &[ToolDomain] = &[
    ToolDomain {
        name: "math",
        summary: "calculator and arithmetic",
        feature: None,
        build: Some(|_, _| Ok(Arc::new(agent_tools_math::tool_set()))),
    },
    ToolDomain {
        name: "travel",
        summary: "weather, flight prices, currency exchange (simulated demo data)",
        feature: Some("demo"),
        #[cfg(feature = "demo")]
        build: Some(|_, _| Ok(Arc::new(agent_tools_travel::TravelTools::new().tool_set()))),
        #[cfg(not(feature = "demo"))]
        build: None,
    },
    ToolDomain {
        name: "sql",
        summary: "read-only SQL over a SQLite file ([tools.sql] path)",
        feature: Some("sql"),
        #[cfg(feature = "sql")]
        build: Some(build_sql),
        #[cfg(not(feature = "sql"))]
        build: None,
    },
    ToolDomain {
        name: "web",
        summary: "guarded page fetching, and web search when [tools.web.search] is set",
        feature: Some("web"),
        #[cfg(feature = "web")]
        build: Some(build_web),
        #[cfg(not(feature = "web"))]
        build: None,
    },
];

/// The domains enabled when `[tools] enabled` is not set: math and the
/// travel demo's, those of them this build has.
pub fn default_domains() -> Vec<String> {
    ["math", "travel"]
        .into_iter()
        .filter(|name| tool_domain(name).is_some_and(ToolDomain::is_compiled))
        .map(str::to_owned)
        .collect()
}

/// The built-in domain called `name`, whether this build has it or not.
pub fn tool_domain(name: &str) -> Option<&'static ToolDomain> {
    TOOL_DOMAINS.iter().find(|domain| domain.name == name)
}

/// The names of the built-in domains this build has, comma-separated.
pub fn tool_domain_names() -> String {
    TOOL_DOMAINS
        .iter()
        .filter(|domain| domain.is_compiled())
        .map(|domain| domain.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The enabled tool providers and the registry that runs them.
#[derive(Clone)]
pub struct ToolBox {
    registry: Arc<Registry>,
    providers: Vec<Arc<dyn ToolProvider>>,
}

impl std::fmt::Debug for ToolBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBox").field("domains", &self.domains()).finish()
    }
}

/// One tool as listed by `agentry tools --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolListing {
    /// The domain (provider) it belongs to.
    pub domain: String,
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

/// `[tools] require_approval` must name enabled tools: a typo would
/// silently let the call run unapproved.
fn check_approval_names(names: &[String], registry: &Registry) -> Result<(), ConfigError> {
    let available: Vec<String> = registry
        .shared_definitions()
        .iter()
        .map(|tool| tool.name.clone())
        .collect();
    match names.iter().find(|name| !available.contains(name)) {
        Some(unknown) => Err(ConfigError::Tool {
            domain: "require_approval".to_owned(),
            message: format!(
                "`{unknown}` in [tools] require_approval is not an enabled tool; enabled tools: {}",
                available.join(", ")
            ),
        }),
        None => Ok(()),
    }
}

impl ToolBox {
    /// The domains of `settings.config.tools.enabled`, built from their tables.
    pub async fn from_settings(settings: &Settings, env: &Env) -> Result<Self, AppError> {
        let tools = &settings.config.tools;
        let mut providers: Vec<Arc<dyn ToolProvider>> = Vec::new();
        for domain in &tools.enabled {
            if providers.iter().any(|provider| provider.name() == domain) {
                continue;
            }
            providers.push(build_domain(domain, settings, env).await?);
        }
        let mut builder = Registry::builder();
        if let Some(timeout) = tools
            .timeout_secs
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        {
            builder = builder.timeout(timeout);
        }
        for provider in &providers {
            builder = builder.provider(Arc::clone(provider));
        }
        let registry = builder
            .require_approval(tools.require_approval.iter().cloned())
            .build()
            .map_err(|error| ConfigError::Tool {
                domain: tools.enabled.join(", "),
                message: error.to_string(),
            })?;
        check_approval_names(&tools.require_approval, &registry)?;
        Ok(Self {
            registry: Arc::new(registry),
            providers,
        })
    }

    /// A tool box of these providers (all enabled).
    pub fn from_providers(providers: Vec<Arc<dyn ToolProvider>>) -> Result<Self, AppError> {
        let mut builder = Registry::builder();
        for provider in &providers {
            builder = builder.provider(Arc::clone(provider));
        }
        let registry = builder.build().map_err(|error| ConfigError::Tool {
            domain: "(custom)".to_owned(),
            message: error.to_string(),
        })?;
        Ok(Self {
            registry: Arc::new(registry),
            providers,
        })
    }

    /// The enabled providers, in order (the tool domains scenes choose from).
    pub fn providers(&self) -> &[Arc<dyn ToolProvider>] {
        &self.providers
    }

    /// The registry, for an agent.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// The enabled domains, in order.
    pub fn domains(&self) -> Vec<&str> {
        self.providers.iter().map(|provider| provider.name()).collect()
    }

    /// Every enabled tool with its domain and schema.
    pub fn listing(&self) -> Vec<ToolListing> {
        self.providers
            .iter()
            .flat_map(|provider| {
                provider
                    .tools()
                    .into_iter()
                    .map(move |tool: ToolDefinition| ToolListing {
                        domain: provider.name().to_owned(),
                        name: tool.name,
                        description: tool.description,
                        input_schema: (*tool.input_schema).clone(),
                    })
            })
            .collect()
    }

    /// The listing as people read it: domains, tools, arguments.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for provider in &self.providers {
            let _ = writeln!(out, "{} — {}", provider.name(), provider.description());
            for tool in provider.tools() {
                let _ = writeln!(out, "  {}({})", tool.name, arguments(&tool.input_schema));
                let _ = writeln!(out, "      {}", first_sentence(&tool.description));
            }
        }
        if out.is_empty() {
            out.push_str(
                "no tool domains are enabled; set `[tools] enabled = [\"math\", \"travel\"]` or pass --tools\n",
            );
        }
        out
    }
}

/// `a, b?` from an object schema: required arguments plain, optional ones with `?`.
fn arguments(schema: &serde_json::Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .keys()
                .map(|name| {
                    if required.contains(&name.as_str()) {
                        name.clone()
                    } else {
                        format!("{name}?")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

async fn build_domain(domain: &str, settings: &Settings, env: &Env) -> Result<Arc<dyn ToolProvider>, AppError> {
    if let Some(built_in) = tool_domain(domain) {
        return built_in.build(settings, env);
    }
    if settings.config.mcp.has(domain) {
        return crate::mcp::build_domain(domain, settings, env).await;
    }
    Err(ConfigError::UnknownToolDomain {
        origin: settings.origin("tools.enabled"),
        name: domain.to_owned(),
        available: tool_domain_names(),
    }
    .into())
}

#[cfg(feature = "sql")]
fn build_sql(settings: &Settings, _: &Env) -> Result<Arc<dyn ToolProvider>, AppError> {
    let Some(mut config) = settings.tool_table::<SqlConfig>("sql")? else {
        return Err(ConfigError::MissingKey {
            origin: settings.origin("tools.enabled"),
            key: "tools.sql.path".to_owned(),
            hint: "; the sql domain needs a database: add `[tools.sql]` with `path = \"data/shop.sqlite\"`".to_owned(),
        }
        .into());
    };
    config.path = settings.resolve_path("tools.sql.path", &config.path);
    let tools = SqlTools::open(config).map_err(|error| ConfigError::Tool {
        domain: "sql".to_owned(),
        message: error.to_string(),
    })?;
    Ok(Arc::new(tools.tool_set()))
}

#[cfg(feature = "web")]
fn build_web(settings: &Settings, env: &Env) -> Result<Arc<dyn ToolProvider>, AppError> {
    let config = settings.tool_table::<WebConfig>("web")?.unwrap_or_default();
    let tools = WebTools::with_env(&config, |name| env.get(name)).map_err(|error| ConfigError::Tool {
        domain: "web".to_owned(),
        message: error.to_string(),
    })?;
    Ok(Arc::new(tools.tool_set()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(feature = "demo", feature = "sql", feature = "web"))]
    fn settings(toml: &str, dir: &std::path::Path) -> Settings {
        std::fs::write(dir.join("agentry.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        Settings::load(&crate::config::Overrides::default(), &Env::default(), dir).unwrap_or_else(|e| panic!("{e}"))
    }

    #[cfg(feature = "demo")]
    #[tokio::test]
    async fn the_default_domains_are_math_and_travel() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tools = ToolBox::from_settings(&settings("", dir.path()), &Env::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tools.domains(), ["math", "travel"]);
        let names: Vec<String> = tools.listing().into_iter().map(|tool| tool.name).collect();
        assert!(names.contains(&"calculator".to_owned()) && names.contains(&"get_weather".to_owned()));
        let text = tools.describe();
        assert!(
            text.contains("get_flight_prices(origin?, destination?, date?)"),
            "{text}"
        );
    }

    #[cfg(feature = "sql")]
    #[tokio::test]
    async fn sql_without_a_table_says_what_to_add() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let error = ToolBox::from_settings(&settings("[tools]\nenabled = [\"sql\"]\n", dir.path()), &Env::default())
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("tools.sql.path"), "{error}");
        let error = ToolBox::from_settings(
            &settings(
                "[tools]\nenabled = [\"sql\"]\n[tools.sql]\npath = \"missing.sqlite\"\n",
                dir.path(),
            ),
            &Env::default(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            error.contains("missing.sqlite") && error.contains("does not exist"),
            "{error}"
        );
    }

    #[cfg(feature = "web")]
    #[tokio::test]
    async fn web_is_built_from_its_table() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let tools = ToolBox::from_settings(
            &settings(
                "[tools]\nenabled = [\"web\"]\n[tools.web]\nmax_redirects = 2\n",
                dir.path(),
            ),
            &Env::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(tools.listing()[0].name, "fetch_url");
        let error = ToolBox::from_settings(
            &settings(
                "[tools]\nenabled = [\"web\"]\n[tools.web]\nmax_redirects = \"two\"\n",
                dir.path(),
            ),
            &Env::default(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("tools.web.max_redirects"), "{error}");
    }

    #[test]
    fn every_domain_of_this_build_is_compiled_and_the_others_name_their_feature() {
        assert_eq!(
            tool_domain("web").map(ToolDomain::is_compiled),
            Some(cfg!(feature = "web"))
        );
        assert_eq!(
            tool_domain("sql").map(ToolDomain::is_compiled),
            Some(cfg!(feature = "sql"))
        );
        assert_eq!(
            tool_domain("travel").map(ToolDomain::is_compiled),
            Some(cfg!(feature = "demo"))
        );
        assert_eq!(default_domains().contains(&"travel".to_owned()), cfg!(feature = "demo"));
        assert!(default_domains().contains(&"math".to_owned()));
        for domain in TOOL_DOMAINS {
            let listed = tool_domain_names().split(", ").any(|name| name == domain.name);
            assert_eq!(listed, domain.is_compiled(), "{}", domain.name);
            match domain.check_compiled() {
                Ok(()) => assert!(domain.is_compiled(), "{}", domain.name),
                Err(error) => assert!(
                    error
                        .to_string()
                        .contains(&format!("`{}`", domain.feature.unwrap_or_default())),
                    "{error}"
                ),
            }
        }
    }
}
