//! [`GuardrailTables`]: guardrails by place, as lists of tables each
//! naming its `kind` (the runner's built-in guardrails,
//! `agent_runner::guardrails`), as `[agent.guardrails]` and
//! `[scenes.NAME.guardrails]` of `agentry.toml` write them.
//!
//! ```toml
//! [[agent.guardrails.input]]
//! kind = "max_size"
//! max_chars = 4000
//!
//! [[agent.guardrails.input]]
//! kind = "deny"
//! keywords = ["ignore previous instructions"]
//! patterns = ['(?i)\bsocial security number\b']
//!
//! [[agent.guardrails.tool_calls]]
//! kind = "deny"
//! keywords = ["drop table"]
//!
//! [[agent.guardrails.tool_results]]
//! kind = "redact"                       # every built-in pattern unless `builtin` names some
//! builtin = ["api_key", "email", "card_number"]
//! patterns = [{ name = "iban", regex = 'FR\d{2}[0-9A-Z]{23}' }]
//!
//! [[agent.guardrails.output]]
//! kind = "json_schema"
//! schema_file = "answer.schema.json"    # relative to this file; or `schema = { ... }`
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use crate::core::GuardrailStage;
use crate::runner::guardrails::{
    BUILTIN_PATTERNS, DenyList, Guardrail, Guardrails, MaxInputSize, OutputSchema, RedactionPattern, Redactor,
};

/// Guardrails by place, each run in order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardrailTables {
    /// On the user's message, before the first model call.
    pub input: Vec<GuardrailSpec>,
    /// On the final answer.
    pub output: Vec<GuardrailSpec>,
    /// On every tool call's arguments, before it runs.
    pub tool_calls: Vec<GuardrailSpec>,
    /// On every tool result, before the model sees it.
    pub tool_results: Vec<GuardrailSpec>,
}

/// One guardrail: its `kind` and settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GuardrailSpec {
    /// Trips on a text longer than `max_chars` characters.
    MaxSize {
        /// The most characters allowed (at least 1).
        max_chars: usize,
    },
    /// Trips on a text holding one of `keywords` (any case and spacing) or
    /// matching one of `patterns` (regular expressions).
    Deny {
        /// Phrases denied.
        #[serde(default)]
        keywords: Vec<String>,
        /// Regular expressions denied.
        #[serde(default)]
        patterns: Vec<String>,
    },
    /// Replaces secrets and personal data with `[redacted NAME]`.
    Redact {
        /// Built-in patterns (`api_key`, `email`, `card_number`); unset: all.
        #[serde(default)]
        builtin: Option<Vec<String>>,
        /// Patterns of your own.
        #[serde(default)]
        patterns: Vec<PatternSpec>,
    },
    /// Trips on an answer that is not JSON matching a JSON Schema.
    JsonSchema {
        /// The schema, inline.
        #[serde(default)]
        schema: Option<Value>,
        /// A file holding the schema (relative to the configuration file).
        #[serde(default)]
        schema_file: Option<PathBuf>,
    },
}

/// A redaction pattern of your own: its name (in `[redacted NAME]`) and
/// regular expression (a group named `secret` limits what is replaced).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternSpec {
    /// The name.
    pub name: String,
    /// The regular expression.
    pub regex: String,
}

const PLACES: [(&str, GuardrailStage); 4] = [
    ("input", GuardrailStage::Input),
    ("output", GuardrailStage::Output),
    ("tool_calls", GuardrailStage::ToolCall),
    ("tool_results", GuardrailStage::ToolResult),
];

impl GuardrailTables {
    fn at(&self, place: &str) -> &[GuardrailSpec] {
        match place {
            "input" => &self.input,
            "output" => &self.output,
            "tool_calls" => &self.tool_calls,
            _ => &self.tool_results,
        }
    }

    /// Builds the guardrails; `resolve` makes a `schema_file` path absolute
    /// (relative to the file that set it).
    ///
    /// # Errors
    ///
    /// What is wrong, and where under the table (`input[1]`): a pattern
    /// that is not a regular expression, an unknown built-in pattern, a
    /// schema that is missing, unreadable or does not compile, a deny list
    /// with nothing in it, a size of 0.
    pub fn build(&self, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Guardrails, GuardrailError> {
        let mut guardrails = Guardrails::new();
        for (place, stage) in PLACES {
            for (index, spec) in self.at(place).iter().enumerate() {
                let at = format!("{place}[{index}]");
                let guardrail = spec.build(resolve).map_err(|message| GuardrailError { at, message })?;
                guardrails = guardrails.at(stage, guardrail);
            }
        }
        Ok(guardrails)
    }
}

/// A guardrail of a [`GuardrailTables`] that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct GuardrailError {
    /// Which one: its place and index (`input[1]`).
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl GuardrailSpec {
    /// The runner's guardrail.
    fn build(&self, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Arc<dyn Guardrail>, String> {
        Ok(match self {
            Self::MaxSize { max_chars: 0 } => return Err("`max_chars` must be at least 1".to_owned()),
            Self::MaxSize { max_chars } => Arc::new(MaxInputSize::new(*max_chars)),
            Self::Deny { keywords, patterns } => {
                if keywords.iter().all(|keyword| keyword.trim().is_empty()) && patterns.is_empty() {
                    return Err("a deny guardrail needs `keywords` or `patterns`".to_owned());
                }
                Arc::new(
                    DenyList::new(keywords.iter().cloned(), patterns)
                        .map_err(|error| format!("a pattern is not a regular expression: {error}"))?,
                )
            }
            Self::Redact { builtin, patterns } => {
                let names: Vec<&str> = match builtin {
                    Some(names) => names.iter().map(String::as_str).collect(),
                    None => BUILTIN_PATTERNS.to_vec(),
                };
                let mut chosen = Vec::new();
                for name in names {
                    chosen.push(RedactionPattern::builtin(name).ok_or_else(|| {
                        format!(
                            "`{name}` is no built-in pattern; built-in: {}",
                            BUILTIN_PATTERNS.join(", ")
                        )
                    })?);
                }
                for pattern in patterns {
                    chosen.push(RedactionPattern::new(&pattern.name, &pattern.regex).map_err(|error| {
                        format!("the pattern `{}` is not a regular expression: {error}", pattern.name)
                    })?);
                }
                Arc::new(Redactor::new(chosen))
            }
            Self::JsonSchema { schema, schema_file } => {
                let schema = match (schema, schema_file) {
                    (Some(schema), None) => schema.clone(),
                    (None, Some(path)) => read_schema(&resolve(path))?,
                    _ => return Err("give one of `schema` and `schema_file`".to_owned()),
                };
                Arc::new(OutputSchema::new(schema).map_err(|error| error.to_string())?)
            }
        })
    }
}

/// The JSON Schema in the file at `path`.
fn read_schema(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{} is not JSON: {error}", path.display()))
}
