//! Tool domains: from `[tools] enabled` to a [`ToolBox`], each domain
//! built by the facade's factory from its table ([`Settings::tool_box`]),
//! and the listing `agentry tools` prints.

use std::ops::Deref;
use std::sync::Arc;

use agent_core::ToolProvider;

pub use agentry::ToolListing;

use crate::error::{AppError, ConfigError};
use agentry::config::{Env, Settings};

/// The facade's [`agentry::ToolBox`] (the enabled providers and the
/// registry that runs them, which it derefs to), shared, built from the
/// settings.
#[derive(Debug, Clone)]
pub struct ToolBox(Arc<agentry::ToolBox>);

impl Deref for ToolBox {
    type Target = agentry::ToolBox;

    fn deref(&self) -> &agentry::ToolBox {
        &self.0
    }
}

impl ToolBox {
    /// The domains of `settings.config.tools.enabled`, built from their
    /// tables, in a box whose registry has `[tools]`'s timeout and
    /// approvals ([`Settings::tool_box`]).
    pub async fn from_settings(settings: &Settings, env: &Env) -> Result<Self, AppError> {
        Ok(Self(Arc::new(settings.tool_box(env).await?)))
    }

    /// A tool box of these providers (all enabled).
    pub fn from_providers(providers: Vec<Arc<dyn ToolProvider>>) -> Result<Self, AppError> {
        let mut builder = agentry::ToolBox::builder();
        for provider in providers {
            builder = builder.provider(provider);
        }
        let tools = builder.build().map_err(|error| ConfigError::Tool {
            domain: "(custom)".to_owned(),
            message: error.to_string(),
        })?;
        Ok(Self(Arc::new(tools)))
    }

    /// The registry, for an agent.
    pub fn registry(&self) -> Arc<agentry::ToolBox> {
        Arc::clone(&self.0)
    }

    /// The listing as `agentry tools` prints it: domains, tools, arguments.
    pub fn describe(&self) -> String {
        let text = self.0.describe();
        if text.is_empty() {
            "no tool domains are enabled; set `[tools] enabled = [\"math\", \"travel\"]` or pass --tools\n".to_owned()
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentry::ToolDomain;
    #[cfg(any(feature = "travel", feature = "sql", feature = "web"))]
    use agentry::config::Overrides;

    #[cfg(any(feature = "travel", feature = "sql", feature = "web"))]
    fn settings(toml: &str, dir: &std::path::Path) -> Settings {
        std::fs::write(dir.join("agentry.toml"), toml).unwrap_or_else(|e| panic!("{e}"));
        Settings::load(&Overrides::default(), &Env::default(), dir).unwrap_or_else(|e| panic!("{e}"))
    }

    #[cfg(feature = "travel")]
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

    #[cfg(feature = "sql")]
    #[tokio::test]
    async fn a_misspelt_key_in_a_tool_table_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let error = ToolBox::from_settings(
            &settings(
                "[tools]\nenabled = [\"sql\"]\n[tools.sql]\npth = \"x.db\"\n",
                dir.path(),
            ),
            &Env::default(),
        )
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.contains("unknown key `tools.sql.pth`"), "{error}");
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
        assert_eq!(ToolDomain::Web.is_compiled(), cfg!(feature = "web"));
        assert_eq!(ToolDomain::Sql.is_compiled(), cfg!(feature = "sql"));
        assert_eq!(ToolDomain::Travel.is_compiled(), cfg!(feature = "travel"));
        let defaults = agentry::config::default_domains();
        assert_eq!(defaults.contains(&"travel".to_owned()), cfg!(feature = "travel"));
        assert!(defaults.contains(&"math".to_owned()));
        for domain in ToolDomain::ALL {
            let listed = ToolDomain::compiled_names()
                .split(", ")
                .any(|name| name == domain.name());
            assert_eq!(listed, domain.is_compiled(), "{domain}");
            if !domain.is_compiled() {
                let error = ConfigError::from(domain.not_compiled()).to_string();
                assert!(error.contains(&format!("`{}`", domain.feature())), "{error}");
            }
        }
    }
}
