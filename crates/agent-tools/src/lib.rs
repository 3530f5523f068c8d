//! # agent-tools
//!
//! The tool side of Agentry: [`ToolBox`], the implementation of
//! [`agent_core::ToolRegistry`]; typed tools ([`TypedTool`], [`Tool`])
//! whose input schema is generated from a Rust type with `schemars`; the
//! [`ToolSet`] provider that tool-domain crates build on; argument
//! validation against JSON Schema with messages a model can act on
//! ([`ArgumentValidator`]); and [`UserWords`], for tools that check that an
//! argument came from what the user wrote.
//!
//! Every call through [`ToolBox`] takes the same path, which providers
//! cannot bypass: resolve the tool among enabled providers, check the
//! caller's roles, validate the arguments, run the tool (panics caught,
//! cancellation and an optional timeout honoured), and record a tracing span,
//! events and metrics ([`telemetry`]). Every failure comes back as a
//! [`ToolError`] in [`ToolExecution::outcome`], ready to be shown to the
//! model.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::{ToolContext, ToolError, ToolRegistry};
//! use agent_tools::{Json, ToolBox, ToolSet, TypedTool};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(rename_all = "lowercase")]
//! enum Unit {
//!     Celsius,
//!     Fahrenheit,
//! }
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WeatherArgs {
//!     /// City name, e.g. "Paris".
//!     location: String,
//!     /// Temperature unit.
//!     unit: Unit,
//! }
//!
//! #[derive(Serialize)]
//! struct Weather {
//!     location: String,
//!     temperature: f64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let get_weather = TypedTool::new(
//!     "get_weather",
//!     "Current weather for a city",
//!     |args: WeatherArgs, _context: ToolContext| async move {
//!         let temperature = match args.unit {
//!             Unit::Celsius => 21.0,
//!             Unit::Fahrenheit => 69.8,
//!         };
//!         Ok::<_, ToolError>(Json(Weather { location: args.location, temperature }))
//!     },
//! );
//!
//! let registry = ToolBox::new();
//! registry.register(Arc::new(ToolSet::new("travel", "Travel tools").tool(get_weather)), true)?;
//!
//! // The model sees the generated schema, doc comments included.
//! let definitions = registry.definitions();
//! assert_eq!(definitions[0].input_schema["properties"]["location"]["description"], "City name, e.g. \"Paris\".");
//!
//! let context = ToolContext::new();
//! let run = registry.execute("get_weather", &json!({"location": "Paris", "unit": "celsius"}), &context).await;
//! assert_eq!(run.outcome?.to_content(), r#"{"location":"Paris","temperature":21.0}"#);
//!
//! // Invalid arguments never reach the tool; the message says what to fix.
//! let run = registry.execute("get_weather", &json!({"location": "Paris", "unit": "kelvin"}), &context).await;
//! let error = run.outcome.unwrap_err().to_string();
//! assert!(error.contains(r#""unit": expected one of ["celsius","fahrenheit"], got "kelvin""#), "{error}");
//! # Ok(())
//! # }
//! ```

mod approval;
mod execution;
mod listing;
mod registry;
pub mod telemetry;
mod toolset;
mod typed;
mod user_words;
mod validate;

pub use approval::{ApprovalCondition, ApprovalPredicate, ConditionError};
pub use listing::ToolListing;
pub use registry::{ToolBox, ToolBoxBuilder};

/// The former name of [`ToolBox`].
#[deprecated(
    since = "0.2.0",
    note = "renamed `ToolBox` (the facade's ToolBox and this registry are one type now)"
)]
pub type Registry = ToolBox;
/// The former name of [`ToolBoxBuilder`].
#[deprecated(since = "0.2.0", note = "renamed `ToolBoxBuilder`")]
pub type RegistryBuilder = ToolBoxBuilder;
pub use toolset::{CompletionAttributesFn, RequireRoles, SpanAttributesFn, ToolSet};
pub use typed::{IntoToolOutput, Json, NoArgs, Tool, TypedTool, tool_schema};
pub use user_words::UserWords;
pub use validate::{ArgumentValidator, SchemaError};

/// The tool types of `agent-core`, re-exported for tool crates.
pub use agent_core::{
    CachePolicy, RegistryError, ToolContext, ToolDefinition, ToolError, ToolExecution, ToolOutput, ToolProvider,
    ToolRegistry,
};

/// Re-exported so tool crates use the same `schemars` version as the
/// registry when deriving `JsonSchema`.
pub use schemars;
