//! The model catalog shipped with Agentry (`data/models.toml`) and the
//! `[catalog."model-name"]` tables that override it.

use std::collections::BTreeMap;

use agent_core::{ModelCatalog, ModelInfo, Pricing};
use serde::{Deserialize, Serialize};

/// The shipped catalog, as TOML: model name -> [`CatalogEntry`].
pub const SHIPPED_CATALOG: &str = include_str!("../data/models.toml");

/// One model's entry, as written in `data/models.toml` and in
/// `[catalog."model-name"]` tables. Prices are US dollars per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogEntry {
    /// The provider that serves the model (`openai`, `anthropic`, `llama`, ...).
    #[serde(default)]
    pub provider: String,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Uncached prompt tokens.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the cache (the input price when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Prompt tokens written to the cache (the input price when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl CatalogEntry {
    /// The core type.
    pub fn to_model_info(&self) -> ModelInfo {
        ModelInfo {
            provider: self.provider.clone(),
            context_window: self.context_window,
            pricing: Pricing {
                input_per_million: self.input,
                output_per_million: self.output,
                cached_input_per_million: self.cached_input,
                cache_write_per_million: self.cache_write,
            },
        }
    }

    /// Whether every price is a finite, non-negative number.
    pub fn prices_are_valid(&self) -> bool {
        [Some(self.input), Some(self.output), self.cached_input, self.cache_write]
            .into_iter()
            .flatten()
            .all(|price| price.is_finite() && price >= 0.0)
    }
}

/// The shipped entries. The file is part of the binary and covered by tests;
/// should it ever fail to parse, the catalog is empty (costs are then
/// reported as unknown) rather than the program failing.
pub fn shipped_entries() -> BTreeMap<String, CatalogEntry> {
    parse(SHIPPED_CATALOG).unwrap_or_default()
}

/// Entries from TOML text; the error names the entry and key at fault.
pub fn parse(text: &str) -> Result<BTreeMap<String, CatalogEntry>, String> {
    use figment::providers::{Format, Toml};
    figment::Figment::from(Toml::string(text))
        .extract()
        .map_err(|error| error.to_string())
}

/// A [`ModelCatalog`] of `entries`.
pub fn to_catalog(entries: &BTreeMap<String, CatalogEntry>) -> ModelCatalog {
    let mut catalog = ModelCatalog::new();
    for (name, entry) in entries {
        catalog.insert(name.clone(), entry.to_model_info());
    }
    catalog
}

#[cfg(test)]
mod tests {
    use agent_core::Usage;

    use super::*;

    #[test]
    fn the_shipped_catalog_parses_and_prices_are_sane() {
        let entries = parse(SHIPPED_CATALOG).unwrap_or_else(|error| panic!("data/models.toml: {error}"));
        assert!(entries.len() >= 20, "{}", entries.len());
        for (name, entry) in &entries {
            assert!(entry.prices_are_valid(), "{name}");
            assert!(!entry.provider.is_empty(), "{name} has no provider");
            if let Some(cached) = entry.cached_input {
                assert!(cached <= entry.input, "{name}: cached input dearer than input");
            }
        }
        for provider in ["openai", "anthropic", "gemini", "llama"] {
            assert!(
                entries.values().any(|entry| entry.provider == provider),
                "no {provider} model"
            );
        }
    }

    #[test]
    fn local_models_are_free_and_remote_ones_are_not() {
        let catalog = to_catalog(&shipped_entries());
        let usage = Usage::new(1_000_000, 1_000_000);
        assert_eq!(catalog.cost("qwen2.5-coder-0.5b", &usage), Some(0.0));
        let cost = catalog.cost("gpt-4o-mini-2024-07-18", &usage).unwrap_or_default();
        assert!((cost - 0.75).abs() < 1e-9, "{cost}");
        assert!(catalog.cost("claude-sonnet-5-5", &usage).unwrap_or_default() > 0.0);
        assert!(catalog.cost("gemini-2.5-flash", &usage).unwrap_or_default() > 0.0);
    }
}
