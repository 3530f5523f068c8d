//! What a run request may set for its own run: the agent's limits, lowered
//! but never raised (the server's configuration bounds what a key can
//! spend), and the temperature.

use agent_runner::{AgentConfig, RunState};
use serde::Deserialize;

use crate::error::ApiError;

/// `options` of `POST /v1/runs`.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunOptions {
    /// At most this many model calls (at most the configured number).
    #[serde(default)]
    max_iterations: Option<u32>,
    /// At most this many output tokens a call (at most the configured
    /// number, when one is configured).
    #[serde(default)]
    max_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2.
    #[serde(default)]
    temperature: Option<f32>,
}

impl RunOptions {
    /// The options when they keep within `config`; otherwise the error
    /// naming the option and its bound.
    pub(crate) fn checked(self, config: &AgentConfig) -> Result<Self, ApiError> {
        let invalid = |option: &str, requirement: String| {
            Err(ApiError::InvalidRequest(format!("`options.{option}` {requirement}")))
        };
        if let Some(asked) = self.max_iterations {
            let limit = config.run.max_iterations;
            if asked == 0 || asked > limit {
                return invalid(
                    "max_iterations",
                    format!("must be 1 to {limit} on this server (got {asked})"),
                );
            }
        }
        if let Some(asked) = self.max_tokens {
            match config.request.max_tokens {
                Some(limit) if asked == 0 || asked > limit => {
                    return invalid(
                        "max_tokens",
                        format!("must be 1 to {limit} on this server (got {asked})"),
                    );
                }
                None if asked == 0 => return invalid("max_tokens", "must be at least 1".to_owned()),
                _ => {}
            }
        }
        if let Some(temperature) = self.temperature
            && !(0.0..=2.0).contains(&temperature)
        {
            return invalid("temperature", format!("must be between 0 and 2 (got {temperature})"));
        }
        Ok(self)
    }

    /// `state` with these options.
    pub(crate) fn apply(&self, state: RunState) -> RunState {
        let state = state.with_sampling(self.max_tokens, self.temperature);
        match self.max_iterations {
            Some(limit) => state.with_max_iterations(limit),
            None => state,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> AgentConfig {
        let mut config = AgentConfig::default();
        config.run.max_iterations = 10;
        config.request.max_tokens = Some(1000);
        config
    }

    fn options(value: serde_json::Value) -> RunOptions {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn options_may_lower_the_servers_limits_but_not_raise_them() {
        let lower = options(serde_json::json!({"max_iterations": 3, "max_tokens": 200, "temperature": 0.2}));
        assert_eq!(lower.clone().checked(&config()), Ok(lower));
        for (value, named) in [
            (
                serde_json::json!({"max_iterations": 11}),
                "options.max_iterations` must be 1 to 10",
            ),
            (
                serde_json::json!({"max_iterations": 0}),
                "options.max_iterations` must be 1 to 10",
            ),
            (
                serde_json::json!({"max_tokens": 5000}),
                "options.max_tokens` must be 1 to 1000",
            ),
            (
                serde_json::json!({"temperature": 3.5}),
                "options.temperature` must be between 0 and 2",
            ),
        ] {
            let error = options(value)
                .checked(&config())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(named), "{error}");
        }
        assert!(serde_json::from_value::<RunOptions>(serde_json::json!({"budget": 1})).is_err());
    }
}
