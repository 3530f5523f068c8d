//! The model client a configuration describes, kept up through provider
//! failures: `[agent] provider`'s client, then `[agent] fallback`'s, each
//! behind the circuit breaker and rate limiter of its
//! `[providers.NAME.circuit_breaker]` and `[providers.NAME.rate_limit]`
//! tables (the `resilience` feature):
//!
//! ```toml
//! [agent]
//! provider = "anthropic"
//! fallback = ["openai"]          # tried when anthropic fails before replying
//!
//! [providers.anthropic.circuit_breaker]
//! consecutive_failures = 5       # opens after 5 failures in a row,
//! failure_rate = 0.5             # or half of the last 20 calls
//! window = 20
//! open_secs = 30                 # then one probe call after 30 s
//!
//! [providers.openai.rate_limit]
//! requests_per_minute = 500
//! tokens_per_minute = 200000
//! max_wait_secs = 10             # wait for room up to 10 s, else fail (and fall back)
//! ```
//!
//! In a fallback chain every provider has a breaker (the defaults of
//! [`BreakerConfig`](agent_resilience::BreakerConfig) unless its table says
//! otherwise), so a provider that is down is skipped at once rather than
//! waited for on every call; alone, a provider has one only if its table
//! asks.

use std::sync::Arc;

use agent_core::LlmClient;

use super::{ConfigError, Settings};
use crate::ProviderKind;

/// The tables inside `[providers.NAME]` that are not the provider's own.
pub(super) const RESILIENCE_TABLES: [&str; 2] = ["circuit_breaker", "rate_limit"];

/// What `GET /readyz` of `agentry serve` adds as its `details`.
pub type ReadinessDetails = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// The model client of a configuration ([`Settings::model_client`]) and
/// the circuit breakers inside it.
#[derive(Clone)]
pub struct ModelClient {
    /// The client: the primary provider's, or a fallback chain.
    pub client: Arc<dyn LlmClient>,
    #[cfg(feature = "resilience")]
    breakers: Vec<Arc<agent_resilience::CircuitBreaker>>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("provider", &self.client.provider())
            .field("model", &self.client.model())
            .finish_non_exhaustive()
    }
}

impl ModelClient {
    /// The circuit breakers' states as `/readyz` details
    /// (`{"circuit_breakers": [{"name", "state", ...}]}`), read at each
    /// call; `None` when no provider has a breaker.
    pub fn readiness_details(&self) -> Option<ReadinessDetails> {
        #[cfg(feature = "resilience")]
        if !self.breakers.is_empty() {
            let breakers = self.breakers.clone();
            return Some(Arc::new(move || {
                let states: Vec<_> = breakers.iter().map(|breaker| breaker.snapshot()).collect();
                serde_json::json!({ "circuit_breakers": states })
            }));
        }
        None
    }
}

/// A provider's client behind its guards, and its breaker.
#[cfg(feature = "resilience")]
type Guarded = (Arc<dyn LlmClient>, Option<Arc<agent_resilience::CircuitBreaker>>);

/// The resilience tables of one provider.
#[cfg(feature = "resilience")]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderResilience {
    /// `[providers.NAME.circuit_breaker]`.
    pub circuit_breaker: Option<agent_resilience::BreakerConfig>,
    /// `[providers.NAME.rate_limit]`.
    pub rate_limit: Option<agent_resilience::RateLimitConfig>,
}

impl Settings {
    /// The client of `[agent] provider` (`primary`), behind its breaker and
    /// limiter, falling back to the clients of `[agent] fallback`
    /// (`fallbacks`, made from [`Self::fallback_providers`] and
    /// [`Self::fallback_provider_config`], in that order).
    ///
    /// # Errors
    ///
    /// A breaker or limiter table is wrong, or there are fallbacks in a
    /// build without the `resilience` feature.
    pub fn model_client(
        &self,
        primary: Arc<dyn LlmClient>,
        fallbacks: Vec<(ProviderKind, Arc<dyn LlmClient>)>,
    ) -> Result<ModelClient, ConfigError> {
        #[cfg(feature = "resilience")]
        {
            let in_chain = !fallbacks.is_empty();
            let mut breakers = Vec::new();
            let mut chain = Vec::with_capacity(1 + fallbacks.len());
            for (kind, client) in std::iter::once((self.provider()?, primary)).chain(fallbacks) {
                let (client, breaker) = self.guarded(kind, client, in_chain)?;
                breakers.extend(breaker);
                chain.push(client);
            }
            let client: Arc<dyn LlmClient> = match chain.len() {
                1 => chain.remove(0),
                _ => Arc::new(
                    agent_resilience::FallbackClient::new(chain)
                        .map_err(|error| ConfigError::Unsupported(error.to_string()))?,
                ),
            };
            Ok(ModelClient { client, breakers })
        }
        #[cfg(not(feature = "resilience"))]
        {
            if !fallbacks.is_empty() {
                return Err(ConfigError::FeatureNotCompiled {
                    what: "`[agent] fallback`".to_owned(),
                    feature: "resilience",
                });
            }
            Ok(ModelClient { client: primary })
        }
    }

    /// `[providers.NAME.circuit_breaker]` and `[providers.NAME.rate_limit]`
    /// of `kind`, checked.
    ///
    /// # Errors
    ///
    /// A key that does not exist, or a value out of range, by name.
    #[cfg(feature = "resilience")]
    pub fn provider_resilience(&self, kind: ProviderKind) -> Result<ProviderResilience, ConfigError> {
        let table = format!("providers.{}", kind.name());
        let circuit_breaker: Option<agent_resilience::BreakerConfig> =
            self.table(&format!("{table}.circuit_breaker"))?;
        let rate_limit: Option<agent_resilience::RateLimitConfig> = self.table(&format!("{table}.rate_limit"))?;
        if let Some(config) = &circuit_breaker {
            config
                .validate()
                .map_err(|error| self.resilience_error(kind, "circuit_breaker", error))?;
        }
        if let Some(config) = &rate_limit {
            config
                .validate()
                .map_err(|error| self.resilience_error(kind, "rate_limit", error))?;
        }
        Ok(ProviderResilience {
            circuit_breaker,
            rate_limit,
        })
    }

    /// `client` of `kind` behind the breaker and limiter its tables ask
    /// for (a breaker by default `in_chain`), and the breaker.
    #[cfg(feature = "resilience")]
    fn guarded(&self, kind: ProviderKind, client: Arc<dyn LlmClient>, in_chain: bool) -> Result<Guarded, ConfigError> {
        use agent_resilience::{BreakerConfig, CircuitBreaker, RateLimiter, ResilientClient};

        let tables = self.provider_resilience(kind)?;
        let breaker = tables
            .circuit_breaker
            .or_else(|| in_chain.then(BreakerConfig::default))
            .map(|config| CircuitBreaker::new(kind.name(), config).map(Arc::new))
            .transpose()
            .map_err(|error| self.resilience_error(kind, "circuit_breaker", error))?;
        let limiter = tables
            .rate_limit
            .map(|config| RateLimiter::new(kind.name(), &config).map(Arc::new))
            .transpose()
            .map_err(|error| self.resilience_error(kind, "rate_limit", error))?;
        if breaker.is_none() && limiter.is_none() {
            return Ok((client, None));
        }
        let mut guarded = ResilientClient::new(client);
        if let Some(breaker) = &breaker {
            guarded = guarded.with_breaker(Arc::clone(breaker));
        }
        if let Some(limiter) = limiter {
            guarded = guarded.with_rate_limiter(limiter);
        }
        Ok((Arc::new(guarded), breaker))
    }

    /// A breaker or limiter setting of `kind`'s `[providers.NAME.{table}]`
    /// out of range, as the configuration's error naming the key.
    #[cfg(feature = "resilience")]
    fn resilience_error(&self, kind: ProviderKind, table: &str, error: agent_resilience::ConfigError) -> ConfigError {
        let key = format!("providers.{}.{table}.{}", kind.name(), error.key);
        ConfigError::InvalidValue {
            origin: self.origin(&key),
            key,
            message: error.message,
        }
    }
}

#[cfg(all(test, feature = "resilience", feature = "openai", feature = "anthropic"))]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};

    use super::*;
    use crate::config::{CONFIG_FILE_NAME, Env, Overrides};

    const KEYS: [(&str, &str); 2] = [("OPENAI_API_KEY", "sk-test"), ("ANTHROPIC_API_KEY", "sk-ant-test")];

    fn settings(dir: &Path, toml: &str) -> Result<Settings, ConfigError> {
        std::fs::write(dir.join(CONFIG_FILE_NAME), toml).unwrap_or_else(|e| panic!("{e}"));
        Settings::read(&Overrides::default(), &Env::from_pairs(KEYS), dir)
    }

    /// The configuration's model client, built as the app builds it.
    fn model_client(toml: &str) -> Result<ModelClient, ConfigError> {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let settings = settings(dir.path(), toml)?;
        let env = Env::from_pairs(KEYS);
        let client = |config: crate::ProviderConfig| {
            config
                .client_with_env(|name| env.get(name))
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let primary = client(settings.provider_config(&env)?);
        let mut fallbacks = Vec::new();
        for kind in settings.fallback_providers()? {
            fallbacks.push((kind, client(settings.fallback_provider_config(kind, &env)?)));
        }
        settings.model_client(primary, fallbacks)
    }

    fn breakers(model: &ModelClient) -> Value {
        model.readiness_details().map_or(Value::Null, |details| details())["circuit_breakers"].clone()
    }

    fn error(toml: &str) -> String {
        model_client(toml).err().map(|e| e.to_string()).unwrap_or_default()
    }

    /// The first ```toml block of docs/resilience.md.
    fn documented_example() -> &'static str {
        let page = include_str!("../../../../docs/resilience.md");
        let start = page.find("```toml\n").map_or(0, |at| at + "```toml\n".len());
        let end = page[start..].find("```").map_or(page.len(), |at| start + at);
        &page[start..end]
    }

    #[test]
    fn the_documented_example_builds_a_chain_with_a_breaker_per_provider() {
        let model = model_client(documented_example()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (model.client.provider(), model.client.model()),
            ("anthropic", "claude-sonnet-4-5")
        );
        let breakers = breakers(&model);
        let names: Vec<&str> = breakers
            .as_array()
            .map(|list| list.iter().filter_map(|b| b["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["anthropic", "openai"]);
        assert_eq!(breakers[0]["state"], "closed");
    }

    #[test]
    fn a_lone_provider_has_a_breaker_only_if_its_table_asks() {
        let alone = model_client("[agent]\nprovider = \"openai\"\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(alone.readiness_details().is_none());
        let guarded = "[agent]\nprovider = \"openai\"\n[providers.openai]\nmodel = \"m\"\n\
                       [providers.openai.circuit_breaker]\nconsecutive_failures = 2\n";
        let guarded = model_client(guarded).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            breakers(&guarded),
            json!([{"name": "openai", "state": "closed", "consecutive_failures": 0,
                    "recent_calls": 0, "recent_failures": 0, "times_opened": 0}])
        );
        assert_eq!(guarded.client.model(), "m", "the provider's own keys still apply");
    }

    #[test]
    fn fallback_names_are_checked() {
        let unknown = error("[agent]\nprovider = \"openai\"\nfallback = [\"antropic\"]\n");
        assert!(
            unknown.contains("unknown provider `antropic` in `agent.fallback`") && unknown.contains("anthropic"),
            "{unknown}"
        );
        let again = error("[agent]\nprovider = \"openai\"\nfallback = [\"anthropic\", \"openai\"]\n");
        assert!(
            again.contains("`agent.fallback`") && again.contains("`openai` is tried already"),
            "{again}"
        );
    }

    #[test]
    fn wrong_breaker_and_limiter_keys_are_named() {
        let misspelt = error("[agent]\nprovider = \"openai\"\n[providers.openai.circuit_breaker]\nfailures = 3\n");
        assert!(
            misspelt.contains("providers.openai.circuit_breaker.failures"),
            "{misspelt}"
        );
        let over =
            error("[agent]\nprovider = \"openai\"\n[providers.openai.circuit_breaker]\nwindow = 5\nmin_calls = 6\n");
        assert!(
            over.contains("providers.openai.circuit_breaker.min_calls") && over.contains("more than the window"),
            "{over}"
        );
        let out_of_range = error("[agent]\nprovider = \"openai\"\n[providers.openai.rate_limit]\nburst = 0\n");
        assert!(
            out_of_range.contains("providers.openai.rate_limit.burst = 0") && out_of_range.contains("out of range"),
            "{out_of_range}"
        );
    }

    #[test]
    fn model_and_base_url_flags_are_the_first_providers_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            dir.path().join(CONFIG_FILE_NAME),
            "[agent]\nprovider = \"openai\"\nfallback = [\"anthropic\"]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let flags = Overrides {
            model: Some("from-flag".to_owned()),
            base_url: Some("http://127.0.0.1:9/v1".to_owned()),
            ..Overrides::default()
        };
        let env = Env::from_pairs(KEYS);
        let settings = Settings::read(&flags, &env, dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let crate::ProviderConfig::Anthropic(fallback) = settings
            .fallback_provider_config(ProviderKind::Anthropic, &env)
            .unwrap_or_else(|e| panic!("{e}"))
        else {
            panic!("not anthropic")
        };
        assert_ne!(fallback.model, "from-flag");
        assert!(!fallback.base_url.contains("127.0.0.1:9"), "{}", fallback.base_url);
    }
}
