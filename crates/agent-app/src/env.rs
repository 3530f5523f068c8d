//! [`Env`]: a snapshot of environment variables, injectable so that tests
//! never depend on (or change) the real process environment.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// `$AGENTRY_HOME`: where models and sessions live.
pub const HOME_VAR: &str = "AGENTRY_HOME";
/// `$AGENTRY_CONFIG`: the configuration file when `--config` is not given.
pub const CONFIG_VAR: &str = "AGENTRY_CONFIG";
/// `$AGENTRY_PROVIDER`: overrides `agent.provider`.
pub const PROVIDER_VAR: &str = "AGENTRY_PROVIDER";
/// `$AGENTRY_MODEL`: overrides `agent.model`.
pub const MODEL_VAR: &str = "AGENTRY_MODEL";
/// Prefix of generic overrides: `AGENTRY_AGENT__MAX_TOKENS=512` sets
/// `agent.max_tokens` (`__` separates keys, names are lowercased).
pub const OVERRIDE_PREFIX: &str = "AGENTRY_";

/// Environment variables, looked up by name. Its `Debug` output lists the
/// names only, never the values (they may hold API keys).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The process environment (variables that are not valid UTF-8 are skipped).
    pub fn from_process() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The value of `name`, when set and not blank.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|value| !value.trim().is_empty()).cloned()
    }

    /// Every variable, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `$AGENTRY_HOME`, else the user's data directory + `agentry`.
    pub fn agentry_home(&self) -> PathBuf {
        if let Some(home) = self.get(HOME_VAR) {
            return PathBuf::from(home);
        }
        dirs::data_dir()
            .or_else(dirs::home_dir)
            .unwrap_or_else(std::env::temp_dir)
            .join("agentry")
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_values_count_as_unset() {
        let env = Env::from_pairs([("A", "1"), ("B", "  ")]);
        assert_eq!(env.get("A").as_deref(), Some("1"));
        assert_eq!(env.get("B"), None);
        assert_eq!(env.get("C"), None);
    }

    #[test]
    fn debug_shows_names_not_values() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "sk-secret-value")]);
        let debug = format!("{env:?}");
        assert!(debug.contains("OPENAI_API_KEY"));
        assert!(!debug.contains("sk-secret-value"));
    }

    #[test]
    fn home_comes_from_the_variable() {
        let env = Env::from_pairs([(HOME_VAR, "/data/agentry")]);
        assert_eq!(env.agentry_home(), PathBuf::from("/data/agentry"));
    }
}
