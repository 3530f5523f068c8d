//! Typed output: a run whose final answer must be JSON matching a schema.
//!
//! [`Agent::run_typed`] derives the JSON Schema of `T` (schemars),
//! [`Agent::run_json`] takes one as a value. Either way the schema is sent
//! as the request's [`response_format`](agent_core::ChatRequest::response_format)
//! with the model calls that must give the final answer, those that cannot
//! call tools: every call of an agent without tools, a forced final answer,
//! and the correction call below. While tools are offered it is not sent
//! (strict OpenAI-compatible servers such as vLLM stop calling tools when
//! it is), and the schema is written into the user message instead, as it
//! is for a client that cannot enforce a format
//! ([`Capabilities::json_schema`](agent_core::Capabilities)). A client
//! whose format leaves tool calls possible (`format_with_tools`: the local
//! model's grammar) gets it with every call. The answer is then extracted (a bare JSON
//! value, or JSON inside prose or a code fence, see [`agent_parse`]) and
//! validated with the `jsonschema` crate. When it does not match, the
//! conversation goes on once with a user message listing every violation
//! (instance path and message), in a call that offers no tool and carries
//! the format, and the new answer is validated again; a
//! second failure is [`TypedError::Invalid`], which keeps the record and the
//! violations.
//!
//! The returned record ([`TypedRun::result`]) covers both attempts when
//! there were two: usage, cost, iterations, model calls and tool calls are
//! summed or concatenated, the messages are the whole conversation (the
//! correction request included), and the response is the final answer.

use agent_core::{AgentRunResult, Capabilities, Message, ResponseFormat, RunEnd, ToolContext};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Agent, RunError};

/// How many answers a typed run validates at most: the first and one retry.
pub const TYPED_ATTEMPTS: u32 = 2;

/// A typed run that produced a valid answer.
#[derive(Debug, Clone)]
pub struct TypedRun<T> {
    /// The answer, deserialised.
    pub value: T,
    /// The answer as the JSON value that passed validation.
    pub json: Value,
    /// The record of the run, both attempts merged when the answer was
    /// retried (usage and cost summed, calls concatenated, the whole
    /// conversation in `messages`).
    pub result: AgentRunResult,
    /// Answers validated: 1, or 2 when the first did not match the schema.
    pub attempts: u32,
    /// What was wrong with the first answer when it was retried; empty otherwise.
    pub first_violations: Vec<SchemaViolation>,
}

/// One way an answer breaks the schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SchemaViolation {
    /// Where in the answer, as a JSON pointer (`""` is the whole answer,
    /// `/address/city` a nested field).
    pub instance_path: String,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.instance_path.is_empty() {
            write!(f, "at the root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.instance_path, self.message)
        }
    }
}

/// Why a typed run produced no valid answer.
#[derive(Debug, thiserror::Error)]
pub enum TypedError {
    /// The schema itself is not a usable JSON Schema (nothing was sent).
    #[error("invalid output schema: {0}")]
    Schema(String),
    /// The run failed (model error, repeated tool failures); the partial
    /// record is in the [`RunError`].
    #[error(transparent)]
    Run(#[from] RunError),
    /// The run ended without an answer to validate (cancelled, or a budget
    /// ran out); it was not retried.
    #[error("the run stopped ({}) before a typed answer", stop.as_str())]
    Stopped {
        /// Why it stopped.
        stop: RunEnd,
        /// Everything the run produced.
        result: Box<AgentRunResult>,
    },
    /// The answer did not match the schema, twice.
    #[error(
        "the answer does not match the schema after {attempts} attempts: {}",
        join(violations)
    )]
    Invalid {
        /// The violations of the last answer.
        violations: Vec<SchemaViolation>,
        /// Answers validated.
        attempts: u32,
        /// The record of both attempts, merged as in [`TypedRun::result`].
        result: Box<AgentRunResult>,
    },
    /// The answer matched the schema but did not deserialise into the type
    /// (a schema and a type that disagree, say a hand-written schema).
    #[error("the answer matches the schema but not the type: {reason}")]
    Deserialize {
        /// The serde error.
        reason: String,
        /// The validated answer.
        json: Value,
        /// The record of the run.
        result: Box<AgentRunResult>,
    },
}

impl TypedError {
    /// The record of the run, when one was made.
    pub fn result(&self) -> Option<&AgentRunResult> {
        match self {
            Self::Schema(_) => None,
            Self::Run(error) => Some(&error.result),
            Self::Stopped { result, .. } | Self::Invalid { result, .. } | Self::Deserialize { result, .. } => {
                Some(result)
            }
        }
    }
}

fn join(violations: &[SchemaViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The JSON Schema of `T` as a value, for a response format.
pub fn schema_of<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// Checks that `schema` is a JSON Schema a typed run can use (it compiles),
/// before anything is sent: [`TypedError::Schema`] says what is wrong.
pub fn check_schema(schema: &Value) -> Result<(), TypedError> {
    CompiledSchema::new(schema.clone()).map(|_| ())
}

/// A compiled output schema.
pub(crate) struct CompiledSchema {
    schema: Value,
    name: String,
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    pub(crate) fn new(schema: Value) -> Result<Self, TypedError> {
        let validator = jsonschema::validator_for(&schema).map_err(|error| TypedError::Schema(error.to_string()))?;
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .map(format_name)
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "output".to_owned());
        Ok(Self {
            schema,
            name,
            validator,
        })
    }

    fn format(&self) -> ResponseFormat {
        ResponseFormat {
            name: self.name.clone(),
            schema: self.schema.clone(),
            // Strict mode (OpenAI) rejects schemas that leave properties
            // optional or objects open, which derived schemas often do; the
            // answer is validated here anyway.
            strict: false,
        }
    }

    /// The answer in `text` as a valid JSON value, or what is wrong with it.
    pub(crate) fn check(&self, text: &str) -> Result<Value, Vec<SchemaViolation>> {
        let value = answer_json(text).map_err(|message| {
            vec![SchemaViolation {
                instance_path: String::new(),
                message,
            }]
        })?;
        let violations: Vec<SchemaViolation> = self
            .validator
            .iter_errors(&value)
            .map(|error| SchemaViolation {
                instance_path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        if violations.is_empty() {
            Ok(value)
        } else {
            Err(violations)
        }
    }
}

/// A response-format name: letters, digits, `_` and `-` (what OpenAI accepts).
fn format_name(title: &str) -> String {
    title
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect()
}

/// The JSON value of an answer: the whole text when it is JSON, else the
/// first JSON value in it (in prose or a code fence), repaired if need be.
fn answer_json(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the answer is empty; expected a JSON value".to_owned());
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    agent_parse::extract_json(trimmed)
        .or_else(|_| agent_parse::extract_json_lenient(trimmed))
        .map(|found| found.value)
        .map_err(|error| format!("the answer is not JSON: {error}"))
}

/// The user message of a typed run for a client that cannot enforce the
/// schema itself: the request, then the schema to answer in.
fn with_schema_instruction(user_message: &str, schema: &Value) -> String {
    format!(
        "{user_message}\n\nAnswer with only a JSON value (no prose, no code fence) that matches this JSON Schema:\n{schema}"
    )
}

/// The correction request after an answer that did not match: every
/// violation, then the schema itself.
fn retry_message(violations: &[SchemaViolation], schema: &Value) -> String {
    let list: Vec<String> = violations.iter().map(|v| format!("- {v}")).collect();
    format!(
        "Your answer does not match the required JSON schema:\n{}\nReply again with only the corrected JSON value \
         (no prose, no code fence), matching this JSON Schema:\n{schema}",
        list.join("\n")
    )
}

/// `first` followed by `second` (a continuation of it) as one record.
fn merge(first: AgentRunResult, second: AgentRunResult) -> AgentRunResult {
    let mut merged = second;
    merged.iterations += first.iterations;
    merged.usage = first.usage + merged.usage;
    merged.cost_usd = match (first.cost_usd, merged.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
    let mut tool_calls = first.tool_calls;
    tool_calls.append(&mut merged.tool_calls);
    merged.tool_calls = tool_calls;
    let mut model_calls = first.model_calls;
    model_calls.append(&mut merged.model_calls);
    merged.model_calls = model_calls;
    let mut compactions = first.compactions;
    compactions.append(&mut merged.compactions);
    merged.compactions = compactions;
    merged
}

/// Whether a run's answer is worth validating (and retrying).
fn answered(stop: RunEnd) -> bool {
    matches!(stop, RunEnd::Completed | RunEnd::MaxIterations | RunEnd::LoopDetected)
}

impl Agent {
    /// Runs one user turn whose answer must be JSON of type `T`: the schema
    /// (derived with schemars) is sent as the requests' response format,
    /// the answer is validated against it and retried once with the
    /// violations, then deserialised. See the [module docs](crate::typed)
    /// for what is sent and what the record holds.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_core::ToolContext;
    /// use agent_runner::Agent;
    /// use agent_testing::{ScriptedClient, response};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct City { name: String, population: u64 }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = ScriptedClient::new().respond(response::text(r#"{"name": "Oslo", "population": 709000}"#));
    /// let agent = Agent::builder(Arc::new(client)).build();
    /// let run = agent.run_typed::<City>(Vec::new(), "The capital of Norway?", &ToolContext::new()).await.unwrap();
    /// assert_eq!(run.value.name, "Oslo");
    /// assert_eq!(run.attempts, 1);
    /// # }
    /// ```
    pub async fn run_typed<T: DeserializeOwned + JsonSchema>(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        context: &ToolContext,
    ) -> Result<TypedRun<T>, TypedError> {
        let run = self.run_json(history, user_message, schema_of::<T>(), context).await?;
        match serde_json::from_value::<T>(run.json.clone()) {
            Ok(value) => Ok(TypedRun {
                value,
                json: run.json,
                result: run.result,
                attempts: run.attempts,
                first_violations: run.first_violations,
            }),
            Err(error) => Err(TypedError::Deserialize {
                reason: error.to_string(),
                json: run.json,
                result: Box::new(run.result),
            }),
        }
    }

    /// Runs one user turn whose answer must be JSON matching `schema` (a
    /// JSON Schema value): sent as the response format, validated, retried
    /// once with the violations. The [`TypedRun::value`] is the validated
    /// JSON. See [`run_typed`](Self::run_typed).
    pub async fn run_json(
        &self,
        history: Vec<Message>,
        user_message: impl Into<String>,
        schema: Value,
        context: &ToolContext,
    ) -> Result<TypedRun<Value>, TypedError> {
        self.run_json_message(history, Message::user(user_message), schema, context)
            .await
    }

    /// [`run_json`](Self::run_json) with a user message of its own: one
    /// with images, documents or audio ([`Message::user_with`]), whose
    /// answer about them must match `schema`.
    pub async fn run_json_message(
        &self,
        history: Vec<Message>,
        mut user_message: Message,
        schema: Value,
        context: &ToolContext,
    ) -> Result<TypedRun<Value>, TypedError> {
        let schema = CompiledSchema::new(schema)?;
        let capabilities: Capabilities = self.client().capabilities();
        // The format goes only with calls that cannot call tools: while
        // tools are offered the model reads the schema here.
        let offers_tools = !capabilities.format_with_tools && !self.registry().shared_definitions().is_empty();
        if (!capabilities.json_schema || offers_tools)
            && let Message::User { content, .. } = &mut user_message
        {
            *content = with_schema_instruction(content, &schema.schema);
        }
        let format = Some(schema.format());

        let state = self
            .start_message(history, user_message)
            .with_response_format(format.clone());
        let first = self.resume(state).context(context.clone()).await?;
        if !answered(first.stop_reason) {
            return Err(TypedError::Stopped {
                stop: first.stop_reason,
                result: Box::new(first),
            });
        }
        let violations = match schema.check(&first.response) {
            Ok(json) => {
                return Ok(TypedRun {
                    value: json.clone(),
                    json,
                    result: first,
                    attempts: 1,
                    first_violations: Vec::new(),
                });
            }
            Err(violations) => violations,
        };
        tracing::debug!(
            violations = %join(&violations),
            "the typed answer does not match its schema; asking once more"
        );

        let state = self
            .start(first.messages.clone(), retry_message(&violations, &schema.schema))
            .with_response_format(format)
            .answer_only();
        let second = match self.resume(state).context(context.clone()).await {
            Ok(second) => second,
            Err(mut error) => {
                let partial = (*error.result).clone();
                *error.result = merge(first, partial);
                return Err(TypedError::Run(error));
            }
        };
        let stop = second.stop_reason;
        let merged = merge(first, second);
        if !answered(stop) {
            return Err(TypedError::Stopped {
                stop,
                result: Box::new(merged),
            });
        }
        match schema.check(&merged.response) {
            Ok(json) => Ok(TypedRun {
                value: json.clone(),
                json,
                result: merged,
                attempts: TYPED_ATTEMPTS,
                first_violations: violations,
            }),
            Err(last) => Err(TypedError::Invalid {
                violations: last,
                attempts: TYPED_ATTEMPTS,
                result: Box::new(merged),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> CompiledSchema {
        CompiledSchema::new(json!({
            "title": "City report",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "size": {"enum": ["small", "large"]},
                "location": {
                    "type": "object",
                    "properties": {"country": {"type": "string"}},
                    "required": ["country"]
                }
            },
            "required": ["name", "size", "location"]
        }))
        .expect("a valid schema")
    }

    #[test]
    fn a_valid_answer_is_found_in_a_fence_or_bare() {
        let valid = json!({"name": "Oslo", "size": "small", "location": {"country": "Norway"}});
        assert_eq!(schema().check(&valid.to_string()), Ok(valid.clone()));
        let fenced = format!("Here it is:\n```json\n{valid}\n```");
        assert_eq!(schema().check(&fenced), Ok(valid));
    }

    #[test]
    fn violations_name_the_instance_path() {
        let answer = r#"{"name": "Oslo", "size": "medium", "location": {}}"#;
        let violations = schema().check(answer).expect_err("invalid");
        let paths: Vec<&str> = violations.iter().map(|v| v.instance_path.as_str()).collect();
        assert!(
            paths.contains(&"/size") && paths.contains(&"/location"),
            "{violations:?}"
        );
        assert!(
            violations.iter().any(|v| v.message.contains("country")),
            "{violations:?}"
        );
    }

    #[test]
    fn prose_is_a_root_violation() {
        let violations = schema().check("I cannot do that.").expect_err("not JSON");
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].instance_path, "");
        assert!(
            violations[0]
                .to_string()
                .starts_with("at the root: the answer is not JSON")
        );
    }

    #[test]
    fn the_format_name_is_made_acceptable() {
        assert_eq!(schema().format().name, "City_report");
        let untitled = CompiledSchema::new(json!({"type": "object"})).expect("schema");
        assert_eq!(untitled.format().name, "output");
    }

    #[test]
    fn a_broken_schema_is_a_schema_error() {
        let error = CompiledSchema::new(json!({"type": "no-such-type"}))
            .err()
            .expect("invalid");
        assert!(matches!(error, TypedError::Schema(_)), "{error}");
    }
}
