//! The model catalog: which provider serves a model, its context window and
//! its prices, used to turn [`Usage`] into an estimated cost.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Usage;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached prompt tokens.
    pub input_per_million: f64,
    /// Generated tokens.
    pub output_per_million: f64,
    /// Prompt tokens read from the cache; the input price when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_million: Option<f64>,
    /// Prompt tokens written to the cache; the input price when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_million: Option<f64>,
}

impl Pricing {
    /// The estimated cost of `usage` in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let uncached = usage.input_tokens - cached - written;
        let per_token = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
        per_token(uncached, self.input_per_million)
            + per_token(cached, self.cached_input_per_million.unwrap_or(self.input_per_million))
            + per_token(written, self.cache_write_per_million.unwrap_or(self.input_per_million))
            + per_token(usage.output_tokens, self.output_per_million)
    }
}

/// What the catalog knows about one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The provider that serves it (`openai`, `anthropic`, `llama`, ...).
    pub provider: String,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Its prices.
    #[serde(default)]
    pub pricing: Pricing,
    /// The media it reads besides text; `Some(vec![])` for a text-only
    /// model, `None` when not known (nothing is refused then). A run
    /// refuses, before sending, an attachment of a kind not listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<crate::MediaKind>>,
}

/// Model name -> [`ModelInfo`].
///
/// Lookup is by exact name first, then by the longest catalog name that is a
/// prefix of the requested one followed by `-` (so `gpt-4o-2024-08-06` is
/// priced as `gpt-4o` unless it has an entry of its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelCatalog {
    models: BTreeMap<String, ModelInfo>,
}

impl ModelCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a model.
    pub fn insert(&mut self, name: impl Into<String>, info: ModelInfo) {
        self.models.insert(name.into(), info);
    }

    /// Adds every entry of `other`, replacing entries of the same name.
    pub fn merge(&mut self, other: ModelCatalog) {
        self.models.extend(other.models);
    }

    /// Number of models.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether the catalog is empty.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The entry for `model` (exact, else longest `name-` prefix).
    pub fn get(&self, model: &str) -> Option<&ModelInfo> {
        if let Some(info) = self.models.get(model) {
            return Some(info);
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                model.len() > name.len() && model.starts_with(name.as_str()) && model.as_bytes()[name.len()] == b'-'
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, info)| info)
    }

    /// The estimated cost of `usage` on `model`; `None` when the model is unknown.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.get(model).map(|info| info.pricing.cost(usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> ModelCatalog {
        let mut catalog = ModelCatalog::new();
        let info = |input, output, cached| ModelInfo {
            provider: "openai".into(),
            context_window: Some(128_000),
            pricing: Pricing {
                input_per_million: input,
                output_per_million: output,
                cached_input_per_million: cached,
                cache_write_per_million: None,
            },
            inputs: None,
        };
        catalog.insert("gpt-4o", info(2.5, 10.0, Some(1.25)));
        catalog.insert("gpt-4o-mini", info(0.15, 0.6, Some(0.075)));
        catalog
    }

    #[test]
    fn exact_name_wins_over_prefix() {
        let catalog = catalog();
        assert_eq!(
            catalog.get("gpt-4o-mini").map(|m| m.pricing.input_per_million),
            Some(0.15)
        );
        assert_eq!(
            catalog
                .get("gpt-4o-mini-2024-07-18")
                .map(|m| m.pricing.input_per_million),
            Some(0.15)
        );
        assert_eq!(
            catalog.get("gpt-4o-2024-08-06").map(|m| m.pricing.input_per_million),
            Some(2.5)
        );
        assert!(catalog.get("gpt-4").is_none());
        assert!(catalog.get("gpt-4oX").is_none());
    }

    #[test]
    fn cost_prices_cached_tokens_apart() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 400_000,
            ..Usage::default()
        };
        let cost = catalog().cost("gpt-4o", &usage).unwrap_or_default();
        // 600k * 2.5 + 400k * 1.25 + 100k * 10 = 1.5 + 0.5 + 1.0
        assert!((cost - 3.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn catalog_round_trips_as_a_map() {
        let text = serde_json::to_string(&catalog()).unwrap_or_default();
        assert!(text.starts_with("{\"gpt-4o\":"));
        let back: ModelCatalog = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, catalog());
    }
}
