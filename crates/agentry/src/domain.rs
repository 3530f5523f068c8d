//! The tool-domain factory: [`ToolDomain`] names every built-in domain
//! (`math`, `travel`, `sql`, `web`), each built from its `[tools.NAME]`
//! table by [`ToolDomain::build`]; [`mcp_domain`] makes an MCP server's
//! tools a domain of its own, from its `[mcp.servers.NAME]` table.

use std::fmt;
use std::sync::Arc;

use agent_core::ToolProvider;
use serde::Deserializer;

use crate::error::{DomainError, NotCompiled};

/// A built-in tool domain, whether this build has it or not (a cargo
/// feature each, but `math`'s is on by default), so that naming one of
/// another build says which feature to build with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolDomain {
    /// Calculator and arithmetic.
    Math,
    /// The travel-assistant demo's weather, flight prices and currency
    /// exchange (simulated data).
    Travel,
    /// Read-only SQL over a SQLite file.
    Sql,
    /// Guarded page fetching, and web search.
    Web,
}

/// What Agentry knows of a domain besides its crate.
struct Spec {
    name: &'static str,
    summary: &'static str,
    feature: &'static str,
    compiled: bool,
}

/// A domain without options: its table, if any, must be empty.
#[cfg(any(feature = "math", feature = "travel"))]
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

impl ToolDomain {
    /// Every built-in domain, in the order they are listed to users.
    pub const ALL: [ToolDomain; 4] = [Self::Math, Self::Travel, Self::Sql, Self::Web];

    /// The one row per domain: its name, summary and feature.
    const fn spec(self) -> Spec {
        match self {
            Self::Math => Spec {
                name: "math",
                summary: "calculator and arithmetic",
                feature: "math",
                compiled: cfg!(feature = "math"),
            },
            Self::Travel => Spec {
                name: "travel",
                summary: "weather, flight prices, currency exchange (simulated demo data)",
                feature: "travel",
                compiled: cfg!(feature = "travel"),
            },
            Self::Sql => Spec {
                name: "sql",
                summary: "read-only SQL over a SQLite file ([tools.sql] path)",
                feature: "sql",
                compiled: cfg!(feature = "sql"),
            },
            Self::Web => Spec {
                name: "web",
                summary: "guarded page fetching, and web search when [tools.web.search] is set",
                feature: "web",
                compiled: cfg!(feature = "web"),
            },
        }
    }

    /// The name in `[tools] enabled` and `[tools.NAME]`.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// One line on what the domain offers.
    pub const fn summary(self) -> &'static str {
        self.spec().summary
    }

    /// The cargo feature that brings the domain in.
    pub const fn feature(self) -> &'static str {
        self.spec().feature
    }

    /// Whether this build has the domain.
    pub const fn is_compiled(self) -> bool {
        self.spec().compiled
    }

    /// The built-in domain called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|domain| domain.name() == name)
    }

    /// The names of the built-in domains this build has, comma-separated.
    pub fn compiled_names() -> String {
        Self::ALL
            .into_iter()
            .filter(|domain| domain.is_compiled())
            .map(Self::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Why the domain cannot be used by this build: its feature is off.
    pub fn not_compiled(self) -> NotCompiled {
        NotCompiled {
            what: format!("the tool domain `{}`", self.name()),
            feature: self.feature(),
        }
    }

    /// The domain's tools, configured by its `[tools.NAME]` table (an empty
    /// table for the defaults; `sql` needs its `path`). Environment
    /// variables (a search key) are looked up by `env`.
    ///
    /// ```
    /// # #[cfg(feature = "math")] {
    /// use agentry::ToolDomain;
    ///
    /// let math = ToolDomain::Math.build(&serde_json::json!({}), |_| None)?;
    /// assert_eq!(math.name(), "math");
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build<'de, D: Deserializer<'de>>(
        self,
        table: D,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ToolProvider>, DomainError<D::Error>> {
        let _ = &env;
        match self {
            #[cfg(feature = "math")]
            Self::Math => {
                <NoOptions as serde::Deserialize>::deserialize(table).map_err(DomainError::Invalid)?;
                Ok(Arc::new(agent_tools_math::tool_set()))
            }
            #[cfg(feature = "travel")]
            Self::Travel => {
                <NoOptions as serde::Deserialize>::deserialize(table).map_err(DomainError::Invalid)?;
                Ok(Arc::new(agent_tools_travel::TravelTools::new().tool_set()))
            }
            #[cfg(feature = "sql")]
            Self::Sql => {
                let config: agent_tools_sql::SqlConfig =
                    serde::Deserialize::deserialize(table).map_err(DomainError::Invalid)?;
                let tools = agent_tools_sql::SqlTools::open(config).map_err(|error| self.setup(&error))?;
                Ok(Arc::new(tools.tool_set()))
            }
            #[cfg(feature = "web")]
            Self::Web => {
                let config: agent_tools_web::WebConfig =
                    serde::Deserialize::deserialize(table).map_err(DomainError::Invalid)?;
                let tools = agent_tools_web::WebTools::with_env(&config, env).map_err(|error| self.setup(&error))?;
                Ok(Arc::new(tools.tool_set()))
            }
            #[allow(unreachable_patterns)]
            other => {
                drop(table);
                Err(DomainError::NotCompiled(other.not_compiled()))
            }
        }
    }

    /// The error of a domain that cannot start with a valid table.
    #[cfg(any(feature = "sql", feature = "web"))]
    fn setup<E>(self, error: &dyn std::error::Error) -> DomainError<E> {
        DomainError::Setup {
            domain: self.name().to_owned(),
            message: error.to_string(),
        }
    }
}

impl fmt::Display for ToolDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `name` can name an MCP server's domain: letters, digits, `-`
/// and `_`, and not the name of a built-in domain.
pub fn check_mcp_name(name: &str) -> Result<(), String> {
    if ToolDomain::parse(name).is_some() {
        return Err(format!(
            "`{name}` is a built-in tool domain; give the MCP server another name, e.g. [mcp.servers.{name}-mcp]"
        ));
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(
            "an MCP server name may only have letters, digits, `-` and `_` (it is a tool domain name)".to_owned(),
        );
    }
    Ok(())
}

/// The tools of the MCP server `name`, configured by its
/// `[mcp.servers.NAME]` table: the server is started (a `command`) or
/// connected to (a `url`) and its tools listed. A stdio server's
/// environment is built with `env`; its connection runs on the current
/// runtime.
#[cfg(feature = "mcp")]
pub async fn mcp_domain<'de, D: Deserializer<'de>>(
    name: &str,
    table: D,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ToolProvider>, DomainError<D::Error>> {
    let config: agent_tools_mcp::McpServerConfig =
        serde::Deserialize::deserialize(table).map_err(DomainError::Invalid)?;
    let provider = agent_tools_mcp::McpToolProvider::connect(name, &config, env)
        .await
        .map_err(DomainError::Mcp)?;
    Ok(Arc::new(provider))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_domain_is_known_and_the_others_name_their_feature() {
        for domain in ToolDomain::ALL {
            assert_eq!(ToolDomain::parse(domain.name()), Some(domain));
            let listed = ToolDomain::compiled_names()
                .split(", ")
                .any(|name| name == domain.name());
            assert_eq!(listed, domain.is_compiled(), "{domain}");
            match domain.build(&serde_json::json!({"unknown": 1}), |_| None) {
                Err(DomainError::NotCompiled(error)) => {
                    assert!(!domain.is_compiled());
                    assert!(
                        error.to_string().contains(&format!("`{}`", domain.feature())),
                        "{error}"
                    );
                }
                Err(DomainError::Invalid(_)) => assert!(domain.is_compiled(), "{domain}"),
                Err(error) => panic!("{domain}: {error}"),
                Ok(_) => panic!("{domain}: an unknown key is refused"),
            }
        }
        assert_eq!(ToolDomain::parse("wether"), None);
        assert!(check_mcp_name("sql").is_err_and(|e| e.contains("built-in")));
        assert!(check_mcp_name("a b").is_err());
        assert_eq!(check_mcp_name("time-mcp"), Ok(()));
    }

    #[cfg(feature = "math")]
    #[test]
    fn math_is_built_from_an_empty_table() {
        let math = ToolDomain::Math.build(&serde_json::json!({}), |_| None);
        assert!(math.is_ok_and(|provider| provider.tools().iter().any(|tool| tool.name == "calculator")));
    }
}
