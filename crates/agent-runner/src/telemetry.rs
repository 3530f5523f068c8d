//! Spans and metrics named after the OpenTelemetry GenAI semantic conventions.
//!
//! Attribute names follow the conventions exactly (`gen_ai.usage.input_tokens`,
//! `gen_ai.usage.cache_read.input_tokens`,
//! `gen_ai.usage.cache_creation.input_tokens`, ...); chat spans have the span
//! kind client (`otel.kind = "client"`). Tracing fields are scalars, so
//! `gen_ai.response.finish_reasons` is recorded as the reasons joined with
//! `,` (one reason per call today); an OpenTelemetry exporter turns it into
//! the string array the conventions ask for (see `FINISH_REASONS`).

use std::time::Duration;

use agent_core::{ChatRequest, ChatResponse, LlmError, StopReason, Usage};
use metrics::{Histogram, Key, Label, Level, Metadata};
use tracing::Span;
use tracing::field::Empty;

/// The span field holding the finish reasons of a chat call, joined with
/// `,`. Exporters that can (the `agentry` CLI's OTLP export) split it into
/// an array attribute.
pub(crate) const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";

/// Which run a span belongs to: its id (`agentry.run.id`) and the
/// conversation it is a turn of (`gen_ai.conversation.id`, when known).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunIds<'a> {
    pub run: Option<&'a str>,
    pub conversation: Option<&'a str>,
}

impl RunIds<'_> {
    /// A call of no run (a scene router's routing call).
    pub(crate) const NONE: RunIds<'static> = RunIds {
        run: None,
        conversation: None,
    };
}

/// The span of a whole run: `invoke_agent {agent}`.
pub(crate) fn run_span(agent: &str, provider: &str, model: &str, ids: RunIds<'_>) -> Span {
    tracing::info_span!(
        "invoke_agent",
        otel.name = %format_args!("invoke_agent {agent}"),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = agent,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.conversation.id = ids.conversation,
        agentry.run.id = ids.run,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        agentry.iterations = Empty,
        agentry.stop_reason = Empty,
    )
}

/// Records a finished run's totals on its span.
pub(crate) fn record_run(span: &Span, usage: &Usage, iterations: u32, stop_reason: Option<&str>) {
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record("agentry.iterations", i64::from(iterations));
    if let Some(stop_reason) = stop_reason {
        span.record("agentry.stop_reason", stop_reason);
    }
}

/// A count as a signed integer: `tracing-opentelemetry` exports `i64`
/// fields as integers but `u64` ones as strings.
fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The span of one model call: `chat {model}`.
pub(crate) fn chat_span(provider: &str, model: &str, request: &ChatRequest, iteration: u32, ids: RunIds<'_>) -> Span {
    tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.conversation.id = ids.conversation,
        agentry.run.id = ids.run,
        gen_ai.request.max_tokens = request.max_tokens.map(i64::from),
        gen_ai.request.temperature = request.temperature,
        agentry.iteration = i64::from(iteration),
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        error.type = Empty,
    )
}

/// The metric handles of one run's model calls, registered once per run so
/// that each call records without building label sets again.
pub(crate) struct ChatMetrics {
    input_tokens: Histogram,
    output_tokens: Histogram,
    duration: Histogram,
    cost: Histogram,
}

/// The keys of a client's chat metrics, made once per agent, so that a run
/// registers its histograms without building labels: nothing is allocated
/// when no recorder is installed.
#[derive(Debug)]
pub(crate) struct ChatMetricKeys {
    input_tokens: Key,
    output_tokens: Key,
    duration: Key,
    cost: Key,
}

/// The metric of each model call's cost in US dollars, labelled like the
/// token usage (no GenAI convention names one).
pub(crate) const COST_METRIC: &str = "agentry.client.cost";

/// What the `histogram!` macro would give a metric registered here.
static METRIC_METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

impl ChatMetricKeys {
    pub(crate) fn new(provider: &str, model: &str) -> Self {
        let labels = |token_type: Option<&'static str>| {
            let mut labels = vec![
                Label::new("gen_ai.operation.name", "chat"),
                Label::new("gen_ai.provider.name", provider.to_owned()),
                Label::new("gen_ai.request.model", model.to_owned()),
            ];
            labels.extend(token_type.map(|token_type| Label::new("gen_ai.token.type", token_type)));
            labels
        };
        Self {
            input_tokens: Key::from_parts("gen_ai.client.token.usage", labels(Some("input"))),
            output_tokens: Key::from_parts("gen_ai.client.token.usage", labels(Some("output"))),
            duration: Key::from_parts("gen_ai.client.operation.duration", labels(None)),
            cost: Key::from_parts(COST_METRIC, labels(None)),
        }
    }
}

impl ChatMetrics {
    /// The histograms of `keys` in the recorder in use (the local one, else
    /// the global one, else none).
    pub(crate) fn new(keys: &ChatMetricKeys) -> Self {
        metrics::with_recorder(|recorder| Self {
            input_tokens: recorder.register_histogram(&keys.input_tokens, &METRIC_METADATA),
            output_tokens: recorder.register_histogram(&keys.output_tokens, &METRIC_METADATA),
            duration: recorder.register_histogram(&keys.duration, &METRIC_METADATA),
            cost: recorder.register_histogram(&keys.cost, &METRIC_METADATA),
        })
    }
}

impl ChatMetrics {
    /// Records a model call's cost in US dollars (`agentry.client.cost`),
    /// when the model's price is known.
    pub(crate) fn record_cost(&self, cost_usd: Option<f64>) {
        if let Some(cost) = cost_usd {
            self.cost.record(cost);
        }
    }
}

/// Records a model call's outcome on its span and in the metrics
/// `gen_ai.client.token.usage` and `gen_ai.client.operation.duration`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_chat(
    span: &Span,
    metrics: &ChatMetrics,
    provider: &str,
    model: &str,
    outcome: Result<&ChatResponse, &LlmError>,
    duration: Duration,
    capture_content: bool,
    request: &ChatRequest,
) {
    let error_type = match outcome {
        Ok(response) => {
            span.record("gen_ai.response.model", response.model.as_str());
            if let Some(id) = &response.id {
                span.record("gen_ai.response.id", id.as_str());
            }
            span.record(FINISH_REASONS, finish_reason(response.stop_reason));
            span.record("gen_ai.usage.input_tokens", int(response.usage.input_tokens));
            span.record("gen_ai.usage.output_tokens", int(response.usage.output_tokens));
            span.record(
                "gen_ai.usage.cache_read.input_tokens",
                int(response.usage.cache_read_tokens),
            );
            span.record(
                "gen_ai.usage.cache_creation.input_tokens",
                int(response.usage.cache_write_tokens),
            );
            metrics.input_tokens.record(response.usage.input_tokens as f64);
            metrics.output_tokens.record(response.usage.output_tokens as f64);
            if capture_content {
                let _entered = span.enter();
                tracing::info!(
                    gen_ai.input.messages = %serde_json::to_string(&request.messages).unwrap_or_default(),
                    gen_ai.output.messages = %serde_json::to_string(&response.message).unwrap_or_default(),
                    "gen_ai.content"
                );
            }
            None
        }
        Err(error) => {
            let kind = serde_json::to_value(error.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            span.record("error.type", kind.as_str());
            span.record("otel.status_code", "ERROR");
            Some(kind)
        }
    };
    if let Some(error_type) = error_type {
        metrics::histogram!(
            "gen_ai.client.operation.duration",
            "gen_ai.operation.name" => "chat",
            "gen_ai.provider.name" => provider.to_owned(),
            "gen_ai.request.model" => model.to_owned(),
            "error.type" => error_type,
        )
        .record(duration.as_secs_f64());
    } else {
        metrics.duration.record(duration.as_secs_f64());
    }
}

fn finish_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
        StopReason::ContentFilter => "content_filter",
    }
}
