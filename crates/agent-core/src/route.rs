//! Which provider answered a model call, when a client routes between
//! several (a fallback chain), and what the providers tried before it said.

use serde::{Deserialize, Serialize};

use crate::LlmError;

/// The way a model call went through a client that routes between
/// providers: the provider that answered and the attempts that failed
/// before it, in order. A client talking to one provider sets none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The provider that answered (its [`LlmClient::provider`](crate::LlmClient::provider) name).
    pub provider: String,
    /// The model that was asked.
    pub model: String,
    /// The providers tried first, each with the error that moved the call on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<ProviderAttempt>,
}

/// One provider's failed attempt at a model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderAttempt {
    /// The provider tried.
    pub provider: String,
    /// The model asked.
    pub model: String,
    /// Why it did not answer.
    pub error: LlmError,
    /// How long the attempt took, in milliseconds.
    pub duration_ms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_round_trips_and_omits_an_empty_attempt_list() -> Result<(), serde_json::Error> {
        let direct = Route {
            provider: "openai".into(),
            model: "gpt".into(),
            failed: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&direct)?,
            serde_json::json!({"provider": "openai", "model": "gpt"})
        );
        let routed = Route {
            failed: vec![ProviderAttempt {
                provider: "anthropic".into(),
                model: "claude".into(),
                error: LlmError::new(crate::LlmErrorKind::Overloaded, "busy").with_status(529),
                duration_ms: 12,
            }],
            ..direct
        };
        let back: Route = serde_json::from_value(serde_json::to_value(&routed)?)?;
        assert_eq!(back, routed);
        Ok(())
    }
}
