//! Tracing spans, events and metrics for tool executions, named after the
//! OpenTelemetry GenAI semantic conventions.
//!
//! Every call through [`ToolBox`](crate::ToolBox) records:
//!
//! - a span named `execute_tool` (with `otel.name = "execute_tool {tool}"`,
//!   which `tracing-opentelemetry` exports as the span name) carrying
//!   `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.type`,
//!   `gen_ai.tool.call.id` (from [`ToolContext::call_id`](agent_core::ToolContext),
//!   set by the runner), `gen_ai.tool.description`, `agentry.tool.provider` and, on failure,
//!   `error.type` and `otel.status_code = "ERROR"`;
//! - a `tool execution started` event (target `agentry::tool`) with the
//!   provider's span attributes, and a `tool execution completed` event with
//!   `duration_ms`, `is_error`, `error.type` and the hooks' attributes;
//! - the counter [`TOOL_EXECUTIONS`] (labels `tool`, `provider`, `outcome` =
//!   `ok`|`error`) and the histogram [`TOOL_DURATION`] in seconds (label
//!   `tool`).
//!
//! Unknown tool names are labelled [`UNKNOWN_TOOL_LABEL`] in metrics, so a
//! model inventing names cannot grow the number of series without bound.

use std::fmt;
use std::time::Duration;

use agent_core::{ToolError, ToolOutput};
use metrics::{Key, Label, Level, Metadata};
use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

/// Counter of tool executions; labels `tool`, `provider`, `outcome`.
pub const TOOL_EXECUTIONS: &str = "agentry.tool.executions";

/// Histogram of tool execution durations in seconds; label `tool`.
pub const TOOL_DURATION: &str = "agentry.tool.duration";

/// The `tool` metric label used for names no provider defines.
pub const UNKNOWN_TOOL_LABEL: &str = "_unknown";

/// The `provider` metric label used when no enabled provider was found.
pub const NO_PROVIDER_LABEL: &str = "_none";

/// The target of the started and completed events.
pub const EVENT_TARGET: &str = "agentry::tool";

/// Registers descriptions and units of the tool metrics with the installed
/// `metrics` recorder. Call once after installing the recorder; recording
/// works without it.
pub fn describe_metrics() {
    metrics::describe_counter!(
        TOOL_EXECUTIONS,
        metrics::Unit::Count,
        "Tool executions, by tool, provider and outcome"
    );
    metrics::describe_histogram!(
        TOOL_DURATION,
        metrics::Unit::Seconds,
        "Duration of tool executions, by tool"
    );
}

/// A short, stable name for the kind of a [`ToolError`], used as the
/// `error.type` attribute (`unknown_tool`, `disabled`, `invalid_arguments`,
/// `permission_denied`, `failed`, `panicked`, `timed_out`, `cancelled`).
pub fn error_type(error: &ToolError) -> &'static str {
    match error {
        ToolError::UnknownTool { .. } => "unknown_tool",
        ToolError::Disabled { .. } => "disabled",
        ToolError::InvalidArguments { .. } => "invalid_arguments",
        ToolError::PermissionDenied { .. } => "permission_denied",
        ToolError::Failed { .. } => "failed",
        ToolError::Panicked { .. } => "panicked",
        ToolError::TimedOut { .. } => "timed_out",
        ToolError::Cancelled => "cancelled",
    }
}

/// The span of one execution. Provider-dependent fields start empty and are
/// filled by [`record_resolved`].
pub(crate) fn tool_span(tool: &str, call_id: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: EVENT_TARGET,
        "execute_tool",
        otel.name = %format_args!("execute_tool {tool}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.id = Empty,
        gen_ai.tool.description = Empty,
        agentry.tool.provider = Empty,
        error.type = Empty,
    );
    if let Some(call_id) = call_id {
        span.record("gen_ai.tool.call.id", call_id);
    }
    span
}

/// Records which provider serves the call.
pub(crate) fn record_resolved(span: &Span, provider: &str, description: &str) {
    span.record("agentry.tool.provider", provider);
    span.record("gen_ai.tool.description", description);
}

/// The event emitted just before the provider's code runs.
pub(crate) fn started(tool: &str, provider: &str, attributes: &[(String, Value)]) {
    tracing::debug!(
        target: EVENT_TARGET,
        attributes = %Attributes(attributes),
        gen_ai.tool.name = %tool,
        agentry.tool.provider = %provider,
        "tool execution started"
    );
}

/// Records the outcome on the span, emits the completed event and updates
/// the metrics.
pub(crate) fn completed(
    span: &Span,
    tool: &str,
    outcome: &Result<ToolOutput, ToolError>,
    duration: Duration,
    attributes: &[(String, Value)],
    keys: &ToolMetricKeys,
) {
    let error = outcome.as_ref().err().map(error_type);
    let duration_ms = duration.as_secs_f64() * 1000.0;
    match outcome {
        Ok(_) => tracing::info!(
            target: EVENT_TARGET,
            duration_ms,
            gen_ai.tool.name = %tool,
            is_error = false,
            attributes = %Attributes(attributes),
            "tool execution completed"
        ),
        Err(failure) => {
            let kind = error_type(failure);
            span.record("error.type", kind);
            span.record("otel.status_code", "ERROR");
            if matches!(failure, ToolError::Panicked { .. }) {
                tracing::error!(
                    target: EVENT_TARGET,
                    duration_ms,
                    gen_ai.tool.name = %tool,
                    is_error = true,
                    error.type = kind,
                    error = %failure,
                    attributes = %Attributes(attributes),
                    "tool execution completed"
                );
            } else {
                tracing::info!(
                    target: EVENT_TARGET,
                    duration_ms,
                    gen_ai.tool.name = %tool,
                    is_error = true,
                    error.type = kind,
                    error = %failure,
                    attributes = %Attributes(attributes),
                    "tool execution completed"
                );
            }
        }
    }

    keys.record(error.is_some(), duration);
}

/// The keys of one tool's metrics: made when the tool is registered, so a
/// call records without building labels, and allocates nothing for them
/// when no recorder is installed.
#[derive(Debug)]
pub(crate) struct ToolMetricKeys {
    ok: Key,
    error: Key,
    duration: Key,
}

/// What the `counter!` and `histogram!` macros would give a metric
/// registered here.
static METRIC_METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

impl ToolMetricKeys {
    /// The keys of `tool` of `provider` (their labels).
    pub(crate) fn new(tool: &str, provider: &str) -> Self {
        let executions = |outcome: &'static str| {
            Key::from_parts(
                TOOL_EXECUTIONS,
                vec![
                    Label::new("tool", tool.to_owned()),
                    Label::new("provider", provider.to_owned()),
                    Label::new("outcome", outcome),
                ],
            )
        };
        Self {
            ok: executions("ok"),
            error: executions("error"),
            duration: Key::from_parts(TOOL_DURATION, vec![Label::new("tool", tool.to_owned())]),
        }
    }

    /// The keys of a call no enabled provider answered: labelled with no
    /// provider, and with [`UNKNOWN_TOOL_LABEL`] unless a disabled provider
    /// has the tool (`known`), so that made-up names cannot grow the label set.
    pub(crate) fn unregistered(tool: &str, known: bool) -> Self {
        Self::new(if known { tool } else { UNKNOWN_TOOL_LABEL }, NO_PROVIDER_LABEL)
    }

    /// Counts one execution and records its duration, in the recorder in
    /// use (the local one, else the global one, else none).
    fn record(&self, failed: bool, duration: Duration) {
        metrics::with_recorder(|recorder| {
            let executions = if failed { &self.error } else { &self.ok };
            recorder.register_counter(executions, &METRIC_METADATA).increment(1);
            recorder
                .register_histogram(&self.duration, &METRIC_METADATA)
                .record(duration.as_secs_f64());
        });
    }
}

/// Hook attributes rendered as one compact JSON object (`{"key":value}`),
/// in the order the hooks returned them.
pub(crate) struct Attributes<'a>(pub(crate) &'a [(String, Value)]);

impl fmt::Display for Attributes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (index, (key, value)) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{value}", Value::from(key.as_str()))?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn attributes_render_as_a_json_object() {
        let attributes = vec![("db.rows".to_owned(), json!(3)), ("q".to_owned(), json!("a\"b"))];
        assert_eq!(Attributes(&attributes).to_string(), r#"{"db.rows":3,"q":"a\"b"}"#);
        assert_eq!(Attributes(&[]).to_string(), "{}");
    }

    #[test]
    fn error_types_are_stable() {
        assert_eq!(error_type(&ToolError::Cancelled), "cancelled");
        assert_eq!(error_type(&ToolError::failed("x")), "failed");
        assert_eq!(error_type(&ToolError::Disabled { name: "t".into() }), "disabled");
    }
}
