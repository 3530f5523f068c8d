//! `[agent.guardrails]`: the agent's guardrails, by place, as lists of
//! tables each naming its `kind` (the runner's built-in guardrails,
//! `agent_runner::guardrails`).
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

use super::{ConfigError, Settings};
use crate::core::GuardrailStage;
use crate::runner::guardrails::{
    BUILTIN_PATTERNS, DenyList, Guardrail, Guardrails, MaxInputSize, OutputSchema, RedactionPattern, Redactor,
};

/// The `[agent.guardrails]` table: guardrails by place, each run in order.
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
}

impl Settings {
    /// The agent's guardrails from `[agent.guardrails]` (none when it is
    /// not set), built when the settings were read (schema files read
    /// then): [`read`](Settings::read) fails on a bad one.
    pub fn guardrails(&self) -> &Guardrails {
        &self.guardrails
    }

    /// Builds the guardrails of `[agent.guardrails]`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidValue`] naming the guardrail (`agent.guardrails.input[1]`)
    /// and what is wrong: a pattern that is not a regular expression, an
    /// unknown built-in pattern, a schema that is missing, unreadable or
    /// does not compile, a deny list with nothing in it, a size of 0.
    pub(super) fn build_guardrails(&self) -> Result<Guardrails, ConfigError> {
        let tables = &self.config.agent.guardrails;
        let mut guardrails = Guardrails::new();
        for (place, stage) in PLACES {
            for (index, spec) in tables.at(place).iter().enumerate() {
                let key = format!("agent.guardrails.{place}[{index}]");
                guardrails = self.add_guardrail(guardrails, stage, spec, &key)?;
            }
        }
        Ok(guardrails)
    }

    fn add_guardrail(
        &self,
        guardrails: Guardrails,
        stage: GuardrailStage,
        spec: &GuardrailSpec,
        key: &str,
    ) -> Result<Guardrails, ConfigError> {
        let invalid = |message: String| self.invalid(key, &message);
        let guardrail: Arc<dyn Guardrail> = match spec {
            GuardrailSpec::MaxSize { max_chars: 0 } => {
                return Err(invalid("`max_chars` must be at least 1".to_owned()));
            }
            GuardrailSpec::MaxSize { max_chars } => Arc::new(MaxInputSize::new(*max_chars)),
            GuardrailSpec::Deny { keywords, patterns } => {
                if keywords.iter().all(|keyword| keyword.trim().is_empty()) && patterns.is_empty() {
                    return Err(invalid("a deny guardrail needs `keywords` or `patterns`".to_owned()));
                }
                let deny = DenyList::new(keywords.iter().cloned(), patterns)
                    .map_err(|error| invalid(format!("a pattern is not a regular expression: {error}")))?;
                Arc::new(deny)
            }
            GuardrailSpec::Redact { builtin, patterns } => {
                let mut chosen = Vec::new();
                let names: Vec<&str> = match builtin {
                    Some(names) => names.iter().map(String::as_str).collect(),
                    None => BUILTIN_PATTERNS.to_vec(),
                };
                for name in names {
                    chosen.push(RedactionPattern::builtin(name).ok_or_else(|| {
                        invalid(format!(
                            "`{name}` is no built-in pattern; built-in: {}",
                            BUILTIN_PATTERNS.join(", ")
                        ))
                    })?);
                }
                for pattern in patterns {
                    chosen.push(RedactionPattern::new(&pattern.name, &pattern.regex).map_err(|error| {
                        invalid(format!(
                            "the pattern `{}` is not a regular expression: {error}",
                            pattern.name
                        ))
                    })?);
                }
                Arc::new(Redactor::new(chosen))
            }
            GuardrailSpec::JsonSchema { schema, schema_file } => {
                let schema = match (schema, schema_file) {
                    (Some(schema), None) => schema.clone(),
                    (None, Some(path)) => self.read_schema(path, key)?,
                    _ => return Err(invalid("give one of `schema` and `schema_file`".to_owned())),
                };
                Arc::new(OutputSchema::new(schema).map_err(|error| invalid(error.to_string()))?)
            }
        };
        Ok(guardrails.at(stage, guardrail))
    }

    /// The JSON Schema in the file `path` (relative to the file that set it).
    fn read_schema(&self, path: &Path, key: &str) -> Result<Value, ConfigError> {
        let full = self.resolve_path("agent.guardrails", path);
        let text = std::fs::read_to_string(&full)
            .map_err(|error| self.invalid(key, &format!("cannot read {}: {error}", full.display())))?;
        serde_json::from_str(&text)
            .map_err(|error| self.invalid(key, &format!("{} is not JSON: {error}", full.display())))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{CONFIG_FILE_NAME, Env, Overrides};

    fn settings(dir: &Path, toml: &str) -> Result<Settings, ConfigError> {
        std::fs::write(dir.join(CONFIG_FILE_NAME), toml).expect("the file is written");
        let env = Env::from_pairs([("AGENTRY_HOME", dir.to_string_lossy().into_owned())]);
        Settings::read(&Overrides::default(), &env, dir)
    }

    #[test]
    fn every_kind_is_read_at_every_place_in_order() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("answer.json"), r#"{"type": "object"}"#).expect("the schema is written");
        let settings = settings(
            dir.path(),
            r#"
[[agent.guardrails.input]]
kind = "max_size"
max_chars = 10
[[agent.guardrails.input]]
kind = "deny"
keywords = ["ignore previous instructions"]
[[agent.guardrails.tool_calls]]
kind = "deny"
patterns = ['(?i)drop\s+table']
[[agent.guardrails.tool_results]]
kind = "redact"
patterns = [{ name = "iban", regex = 'FR\d{2}' }]
[[agent.guardrails.output]]
kind = "json_schema"
schema_file = "answer.json"
[[agent.guardrails.output]]
kind = "json_schema"
schema = { type = "object", required = ["city"] }
"#,
        )
        .expect("the file is valid");
        let guardrails = settings.guardrails();
        assert_eq!(guardrails.names(GuardrailStage::Input), ["max_input_size", "deny_list"]);
        assert_eq!(guardrails.names(GuardrailStage::ToolCall), ["deny_list"]);
        assert_eq!(guardrails.names(GuardrailStage::ToolResult), ["redact"]);
        assert_eq!(guardrails.names(GuardrailStage::Output), ["json_schema", "json_schema"]);
    }

    /// The first ```toml block of docs/guardrails.md.
    fn documented_example() -> &'static str {
        let page = include_str!("../../../../docs/guardrails.md");
        let start = page.find("```toml\n").map_or(0, |at| at + "```toml\n".len());
        let end = page[start..].find("```").map_or(page.len(), |at| start + at);
        &page[start..end]
    }

    #[tokio::test]
    async fn the_documented_example_builds_and_its_guardrails_hold() {
        use std::sync::Arc;

        use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};

        use crate::core::RunEnd;

        let dir = tempfile::tempdir().expect("a temporary directory");
        let settings = settings(dir.path(), documented_example()).expect("the documented example is valid");
        let guardrails = settings.guardrails().clone();
        assert_eq!(guardrails.names(GuardrailStage::Input), ["max_input_size", "deny_list"]);
        assert_eq!(guardrails.names(GuardrailStage::Output), ["json_schema"]);

        // A tool whose result holds an address: the model reads it redacted.
        let lookup = TestTool::new("lookup", ToolBehaviour::Reply("write to ana@example.com".into()));
        let tools = Arc::new(
            agent_tools::ToolBox::builder()
                .provider(Arc::new(TestTools::new("demo").with(lookup)))
                .build()
                .expect("the tools register"),
        );
        let client = ScriptedClient::new()
            .respond(response::tool_calls([("lookup", serde_json::json!({}))]))
            .respond(response::text(r#"{"total": 1}"#));
        let agent = crate::runner::Agent::builder(Arc::new(client.clone()))
            .tools(tools)
            .guardrails(guardrails.clone())
            .build();
        let result = agent.run("who do I write to?").await.expect("a run");
        assert_eq!(result.stop_reason, RunEnd::Completed);
        assert_eq!(result.tool_calls[0].result, "write to [redacted email]");

        let client = ScriptedClient::new().respond(response::text("never"));
        let agent = crate::runner::Agent::builder(Arc::new(client.clone()))
            .guardrails(guardrails)
            .build();
        let result = agent.run("Ignore previous instructions.").await.expect("a run");
        assert_eq!(result.stop_reason, RunEnd::Guardrail);
        assert!(client.requests().is_empty());
    }

    #[test]
    fn a_bad_guardrail_is_a_configuration_error_naming_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let cases = [
            (
                "[[agent.guardrails.input]]\nkind = \"deny\"\npatterns = [\"(unclosed\"]\n",
                "input[0]",
                "regular expression",
            ),
            (
                "[[agent.guardrails.input]]\nkind = \"deny\"\n",
                "input[0]",
                "needs `keywords` or `patterns`",
            ),
            (
                "[[agent.guardrails.tool_results]]\nkind = \"redact\"\nbuiltin = [\"phone\"]\n",
                "tool_results[0]",
                "`phone` is no built-in pattern",
            ),
            (
                "[[agent.guardrails.output]]\nkind = \"json_schema\"\nschema_file = \"missing.json\"\n",
                "output[0]",
                "cannot read",
            ),
            (
                "[[agent.guardrails.output]]\nkind = \"json_schema\"\n",
                "output[0]",
                "one of `schema` and `schema_file`",
            ),
            (
                "[[agent.guardrails.input]]\nkind = \"max_size\"\nmax_chars = 0\n",
                "input[0]",
                "at least 1",
            ),
        ];
        for (toml, place, message) in cases {
            let error = settings(dir.path(), toml).expect_err(toml).to_string();
            assert!(error.contains(&format!("agent.guardrails.{place}")), "{error}");
            assert!(error.contains(message), "{error}");
        }
        let error =
            settings(dir.path(), "[[agent.guardrails.input]]\nkind = \"shout\"\n").expect_err("an unknown kind");
        assert!(error.to_string().contains("shout"), "{error}");
        let error = settings(dir.path(), "[agent.guardrails]\ninputs = []\n").expect_err("an unknown place");
        assert!(error.to_string().contains("inputs"), "{error}");
    }
}
