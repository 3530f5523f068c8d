//! Behaviour 11, observability. This test has a binary of its own because
//! tracing caches callsite interest process-wide: spans created by tests
//! running at the same time without a subscriber would race with the scoped
//! subscriber used here.

mod common;

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};

use agent_testing::{ScriptedClient, response};
use serde_json::json;

// 11. Observability: spans named after the GenAI conventions.
#[derive(Clone, Default)]
struct SpanNames(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanNames {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut visitor = Visitor::default();
        attrs.record(&mut visitor);
        let name = visitor.name.unwrap_or_else(|| attrs.metadata().name().to_owned());
        let mut names = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for id in &visitor.ids {
            names.push(format!("{} {id}", attrs.metadata().name()));
        }
        if attrs.metadata().name() == "chat" {
            // The declared fields of a chat span, and its kind.
            for field in attrs.metadata().fields() {
                names.push(format!("chat field {}", field.name()));
            }
            if let Some(kind) = visitor.kind {
                names.push(format!("chat kind {kind}"));
            }
        }
        names.push(name);
    }

    fn on_record(
        &self,
        _id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut visitor = Visitor::default();
        values.record(&mut visitor);
        let mut names = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(call_id) = visitor.call_id {
            names.push(format!("gen_ai.tool.call.id={call_id}"));
        }
        if let Some(reasons) = visitor.finish_reasons {
            names.push(format!("gen_ai.response.finish_reasons={reasons}"));
        }
    }
}

/// The span fields this test looks at.
#[derive(Default)]
struct Visitor {
    name: Option<String>,
    call_id: Option<String>,
    kind: Option<String>,
    finish_reasons: Option<String>,
    ids: Vec<String>,
}

impl tracing::field::Visit for Visitor {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "otel.name" => self.name = Some(format!("{value:?}")),
            "gen_ai.tool.call.id" => self.call_id = Some(format!("{value:?}")),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "gen_ai.tool.call.id" => self.call_id = Some(value.to_owned()),
            "otel.kind" => self.kind = Some(value.to_owned()),
            "gen_ai.response.finish_reasons" => self.finish_reasons = Some(value.to_owned()),
            "gen_ai.conversation.id" | "agentry.run.id" => self.ids.push(format!("{}={value}", field.name())),
            _ => self.record_debug(field, &value),
        }
    }
}

#[test]
fn a_run_opens_agent_chat_and_tool_spans_and_records_genai_metrics() {
    use tracing_subscriber::layer::SubscriberExt;
    let names = SpanNames::default();
    let subscriber = tracing_subscriber::registry().with(names.clone());
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({}))]))
        .respond(response::text("done"));
    let mut catalog = agent_core::ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        agent_core::ModelInfo {
            provider: "scripted".into(),
            context_window: None,
            pricing: agent_core::Pricing {
                input_per_million: 1000.0,
                output_per_million: 2000.0,
                ..agent_core::Pricing::default()
            },
            inputs: None,
        },
    );
    let agent = common::agent(&client).name("travel").catalog(Arc::new(catalog)).build();
    let result = tracing::subscriber::with_default(subscriber, || {
        metrics::with_local_recorder(&recorder, || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            let run = agent.run("go").run_id("run_42").conversation_id("trip-planning");
            runtime.block_on(run.into_future()).expect("run")
        })
    });
    let names = names.0.lock().map(|n| n.clone()).unwrap_or_default();
    assert!(names.contains(&"invoke_agent travel".to_owned()), "{names:?}");
    assert_eq!(
        names.iter().filter(|n| *n == "chat scripted-model").count(),
        2,
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with("execute_tool")), "{names:?}");
    let call_id = client.requests()[1]
        .messages
        .iter()
        .find_map(|message| match message {
            agent_core::Message::Assistant(assistant) => assistant.tool_calls.first().map(|call| call.id.clone()),
            _ => None,
        })
        .expect("the second request holds the call");
    assert!(
        names.contains(&format!("gen_ai.tool.call.id={call_id}")),
        "the tool span carries the call id {call_id}: {names:?}"
    );

    // Attribute names of the GenAI semantic conventions, exactly.
    for field in [
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
    ] {
        assert!(names.contains(&format!("chat field {field}")), "{field}: {names:?}");
    }
    assert!(
        !names.iter().any(|n| n == "chat field gen_ai.usage.cache_read_tokens"),
        "{names:?}"
    );
    assert!(names.contains(&"chat kind client".to_owned()), "{names:?}");
    // The run's id and its conversation, on the run span and each chat span.
    for span in ["invoke_agent", "chat"] {
        for id in ["agentry.run.id=run_42", "gen_ai.conversation.id=trip-planning"] {
            let expected = if span == "chat" { 2 } else { 1 };
            let found = names.iter().filter(|n| **n == format!("{span} {id}")).count();
            assert_eq!(found, expected, "{span} {id}: {names:?}");
        }
    }
    assert!(
        names.contains(&"gen_ai.response.finish_reasons=tool_calls".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"gen_ai.response.finish_reasons=stop".to_owned()),
        "{names:?}"
    );

    let snapshot = snapshotter.snapshot().into_vec();
    let metrics: Vec<String> = snapshot
        .iter()
        .map(|(key, _, _, _)| key.key().name().to_owned())
        .collect();
    // Each call's cost, in US dollars, next to its tokens.
    let costs: Vec<f64> = snapshot
        .iter()
        .filter(|(key, _, _, _)| key.key().name() == "agentry.client.cost")
        .flat_map(|(_, _, _, value)| match value {
            metrics_util::debugging::DebugValue::Histogram(values) => values.iter().map(|v| v.into_inner()).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(costs.len(), 2, "{metrics:?}");
    let total = result.cost_usd.expect("the model's price is known");
    assert!(
        total > 0.0 && (costs.iter().sum::<f64>() - total).abs() < 1e-12,
        "{costs:?} vs {total}"
    );
    assert!(metrics.contains(&"gen_ai.client.token.usage".to_owned()), "{metrics:?}");
    assert!(
        metrics.contains(&"gen_ai.client.operation.duration".to_owned()),
        "{metrics:?}"
    );
}
