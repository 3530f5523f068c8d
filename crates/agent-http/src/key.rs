//! The API key every HTTP provider's table may carry, and the one way it is
//! looked up.

use agent_core::LlmError;
use serde::Deserialize;

use crate::SecretString;

/// The `api_key` and `api_key_env` keys of a provider's config table,
/// flattened into each provider's config (`#[serde(flatten)] key: ApiKeyConfig`),
/// so `agentry.toml` writes them beside the provider's own keys.
///
/// The key itself is a [`SecretString`]: it never shows in `Debug` output.
///
/// ```
/// use agent_http::{ApiKeyConfig, KeyRule};
///
/// let rule = KeyRule::required("providers.example", "example", &["EXAMPLE_API_KEY"]);
/// let config = ApiKeyConfig::default();
/// let env = |name: &str| (name == "EXAMPLE_API_KEY").then(|| " sk-123 ".to_owned());
/// assert_eq!(config.resolve(&rule, env).unwrap().unwrap().expose(), "sk-123");
///
/// let missing = config.resolve(&rule, |_| None).unwrap_err();
/// assert!(missing.message.contains("set the EXAMPLE_API_KEY environment variable"));
/// assert!(!format!("{:?}", ApiKeyConfig::with_key("sk-secret")).contains("sk-secret"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ApiKeyConfig {
    /// The key itself. Prefer `api_key_env`: a key in a file is easily shared.
    pub api_key: Option<SecretString>,
    /// The environment variable holding the key, instead of the provider's
    /// default variables.
    pub api_key_env: Option<String>,
}

/// How one provider looks its key up: where its table is, its name in
/// errors, and the variables read when `api_key_env` is not set.
///
/// With no default variables the key is optional (a local or compatible
/// server): none is sent unless `api_key` or `api_key_env` is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRule<'a> {
    /// The config table, as errors name it: `providers.anthropic`.
    pub table: &'a str,
    /// The provider name errors carry ([`LlmError::provider`]).
    pub provider: &'a str,
    /// The variables tried in order when `api_key_env` is not set.
    pub default_envs: &'a [&'a str],
}

impl<'a> KeyRule<'a> {
    /// A provider that needs a key, read from the first of `default_envs`
    /// that is set.
    pub const fn required(table: &'a str, provider: &'a str, default_envs: &'a [&'a str]) -> Self {
        Self {
            table,
            provider,
            default_envs,
        }
    }

    /// A provider that works without a key unless one is configured.
    pub const fn optional(table: &'a str, provider: &'a str) -> Self {
        Self {
            table,
            provider,
            default_envs: &[],
        }
    }
}

impl ApiKeyConfig {
    /// A configuration holding `key` itself.
    pub fn with_key(key: impl Into<SecretString>) -> Self {
        Self {
            api_key: Some(key.into()),
            api_key_env: None,
        }
    }

    /// The variables the key is read from: `api_key_env` alone when it is
    /// set, else the rule's defaults.
    pub fn env_names<'r>(&'r self, rule: &KeyRule<'r>) -> Vec<&'r str> {
        match self.explicit_env() {
            Some(name) => vec![name],
            None => rule.default_envs.to_vec(),
        }
    }

    /// The key: `api_key` when set, else the first variable of
    /// [`env_names`](Self::env_names) that `env` finds, trimmed (pass
    /// `|name| std::env::var(name).ok()`).
    ///
    /// `Ok(None)` means no key is wanted: the rule has no default variables
    /// and neither key is set. A wanted key that is missing is an
    /// authentication error naming the variable to set.
    pub fn resolve(
        &self,
        rule: &KeyRule<'_>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<SecretString>, LlmError> {
        if let Some(key) = self.api_key.as_ref().filter(|key| !key.is_empty()) {
            return Ok(Some(key.clone()));
        }
        let names = self.env_names(rule);
        if names.is_empty() {
            return Ok(None);
        }
        let found = names.iter().find_map(|name| {
            env(name)
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        });
        match found {
            Some(value) => Ok(Some(SecretString::new(value))),
            None => Err(LlmError::auth(format!(
                "no API key: set the {} environment variable (or `api_key` in [{}])",
                listed(&names),
                rule.table
            ))
            .with_provider(rule.provider)),
        }
    }

    /// Like [`resolve`](Self::resolve), for a provider that cannot work
    /// without a key: `Ok(None)` becomes the same authentication error.
    pub fn require(&self, rule: &KeyRule<'_>, env: impl Fn(&str) -> Option<String>) -> Result<SecretString, LlmError> {
        self.resolve(rule, env)?.ok_or_else(|| {
            LlmError::auth(format!(
                "no API key: set `api_key_env` to the name of the environment variable holding it (or `api_key`) \
                 in [{}]",
                rule.table
            ))
            .with_provider(rule.provider)
        })
    }

    /// The hint added to an authentication failure: which key was
    /// rejected, and what to set instead.
    pub fn auth_hint(&self, rule: &KeyRule<'_>) -> String {
        let table = rule.table;
        let first = self.env_names(rule).first().copied();
        match (self.api_key.is_some(), first) {
            (true, Some(name)) => format!(
                "the key from `api_key` in [{table}] was rejected: fix it, or remove it and set the {name} \
                 environment variable"
            ),
            (true, None) => format!("the key from `api_key` in [{table}] was rejected"),
            (false, Some(name)) => {
                format!("set the {name} environment variable to a valid key (or `api_key` in [{table}])")
            }
            (false, None) => format!(
                "this server wants an API key: set `api_key_env` to the name of the environment variable holding it \
                 (or `api_key`) in [{table}]"
            ),
        }
    }

    fn explicit_env(&self) -> Option<&str> {
        self.api_key_env
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty())
    }
}

/// `A` or `A (or B, C)`.
fn listed(names: &[&str]) -> String {
    match names {
        [first, rest @ ..] if !rest.is_empty() => format!("{first} (or {})", rest.join(", ")),
        _ => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const REQUIRED: KeyRule<'static> = KeyRule::required("providers.p", "p", &["P_KEY", "P_OTHER_KEY"]);
    const OPTIONAL: KeyRule<'static> = KeyRule::optional("providers.local", "local");

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_configured_key_wins_over_every_variable() {
        let config = ApiKeyConfig::with_key("from-file");
        let key = config
            .resolve(&REQUIRED, env(&[("P_KEY", "from-env")]))
            .unwrap()
            .unwrap();
        assert_eq!(key.expose(), "from-file");
    }

    #[test]
    fn the_default_variables_are_tried_in_order_and_blank_ones_skipped() {
        let config = ApiKeyConfig::default();
        let key = config
            .resolve(&REQUIRED, env(&[("P_KEY", "  "), ("P_OTHER_KEY", "second")]))
            .unwrap()
            .unwrap();
        assert_eq!(key.expose(), "second");
        let error = config.resolve(&REQUIRED, env(&[])).unwrap_err();
        assert_eq!(error.kind, agent_core::LlmErrorKind::Auth);
        assert_eq!(error.provider.as_deref(), Some("p"));
        assert!(
            error
                .message
                .contains("set the P_KEY (or P_OTHER_KEY) environment variable (or `api_key` in [providers.p])"),
            "{error}"
        );
    }

    #[test]
    fn api_key_env_replaces_the_defaults() {
        let config = ApiKeyConfig {
            api_key: None,
            api_key_env: Some(" MY_KEY ".into()),
        };
        assert_eq!(config.env_names(&REQUIRED), ["MY_KEY"]);
        assert!(config.resolve(&REQUIRED, env(&[("P_KEY", "unused")])).is_err());
        assert_eq!(
            config
                .resolve(&REQUIRED, env(&[("MY_KEY", "k")]))
                .unwrap()
                .unwrap()
                .expose(),
            "k"
        );
    }

    #[test]
    fn an_optional_key_is_none_until_a_variable_is_named_then_it_is_needed() {
        assert_eq!(
            ApiKeyConfig::default()
                .resolve(&OPTIONAL, env(&[("ANY", "x")]))
                .unwrap(),
            None
        );
        let named = ApiKeyConfig {
            api_key: None,
            api_key_env: Some("LOCAL_KEY".into()),
        };
        let error = named.resolve(&OPTIONAL, env(&[])).unwrap_err();
        assert!(
            error.message.contains("set the LOCAL_KEY environment variable"),
            "{error}"
        );
        let required = ApiKeyConfig::default().require(&OPTIONAL, env(&[])).unwrap_err();
        assert!(required.message.contains("set `api_key_env`"), "{required}");
    }

    #[test]
    fn hints_say_which_key_was_rejected_and_what_to_set() {
        let from_file = ApiKeyConfig::with_key("k");
        assert!(
            from_file
                .auth_hint(&REQUIRED)
                .contains("`api_key` in [providers.p] was rejected")
        );
        assert!(
            from_file
                .auth_hint(&REQUIRED)
                .contains("set the P_KEY environment variable")
        );
        assert_eq!(
            from_file.auth_hint(&OPTIONAL),
            "the key from `api_key` in [providers.local] was rejected"
        );
        assert!(
            ApiKeyConfig::default()
                .auth_hint(&REQUIRED)
                .starts_with("set the P_KEY environment variable")
        );
        assert!(
            ApiKeyConfig::default()
                .auth_hint(&OPTIONAL)
                .contains("this server wants an API key")
        );
    }

    #[test]
    fn it_deserialises_from_a_table_and_hides_the_key() {
        let config: ApiKeyConfig = serde_json::from_value(serde_json::json!({"api_key": "sk-hidden"})).unwrap();
        assert_eq!(config.api_key.as_ref().unwrap().expose(), "sk-hidden");
        assert!(!format!("{config:?}").contains("sk-hidden"));
    }
}
