//! The model catalog: prices and context windows, shipped in
//! `data/models.toml` and overridden by `[catalog."model-name"]` tables.

use std::collections::BTreeMap;

use figment::Figment;
use figment::providers::{Format, Toml};
use serde::{Deserialize, Serialize};

use crate::core::{ModelCatalog, ModelInfo, Pricing};

/// The model catalog shipped with Agentry, as TOML: model name -> [`CatalogEntry`].
pub const SHIPPED_CATALOG: &str = include_str!("../../data/models.toml");

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
    /// The media the model reads besides text (`image`, `document`,
    /// `audio`); `[]`: text only; unset: not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<crate::core::MediaKind>>,
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
            inputs: self.inputs.clone(),
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
    parse_catalog(SHIPPED_CATALOG).unwrap_or_default()
}

/// Catalog entries from TOML text; the error names the entry and key at fault.
pub fn parse_catalog(text: &str) -> Result<BTreeMap<String, CatalogEntry>, String> {
    Figment::from(Toml::string(text))
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
