//! The tracing span and events recorded around every execution.
//!
//! One test per binary: tracing caches callsite interest process-wide, so
//! thread-local subscribers in parallel tests would race.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use common::{Behaviour, Scripted};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Default)]
struct CapturedSpan {
    name: String,
    fields: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default)]
struct CapturedEvent {
    span: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<CapturedSpan>>>,
    events: Arc<Mutex<Vec<CapturedEvent>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// Index of the span in `spans`, stored in the span's extensions.
struct Slot(usize);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let mut captured = CapturedSpan {
            name: attributes.metadata().name().to_owned(),
            ..CapturedSpan::default()
        };
        attributes.record(&mut Fields(&mut captured.fields));
        let mut spans = self.spans.lock().unwrap();
        spans.push(captured);
        context.span(id).unwrap().extensions_mut().insert(Slot(spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, context: Context<'_, S>) {
        let span = context.span(id).unwrap();
        let extensions = span.extensions();
        let Slot(index) = extensions.get::<Slot>().unwrap();
        values.record(&mut Fields(&mut self.spans.lock().unwrap()[*index].fields));
    }

    fn on_event(&self, event: &Event<'_>, context: Context<'_, S>) {
        let mut captured = CapturedEvent {
            span: context.event_span(event).map(|span| span.name().to_owned()),
            ..CapturedEvent::default()
        };
        event.record(&mut Fields(&mut captured.fields));
        self.events.lock().unwrap().push(captured);
    }
}

fn registry() -> ToolBox {
    ToolBox::builder()
        .provider(
            Scripted::new("travel")
                .tool("get_weather", Behaviour::Answer)
                .tool("explode", Behaviour::Panic("boom"))
                .shared(),
        )
        .build()
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn each_execution_has_an_execute_tool_span_with_genai_attributes_and_events() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(capture.clone()));
    let registry = registry();

    let execution = registry
        .execute("get_weather", &json!({"city": "Oslo"}), &ToolContext::new())
        .await;
    assert!(execution.outcome.is_ok());
    let execution = registry.execute("explode", &json!({}), &ToolContext::new()).await;
    assert!(execution.outcome.is_err());

    let spans = capture.spans.lock().unwrap().clone();
    let tool_spans: Vec<&CapturedSpan> = spans.iter().filter(|s| s.name == "execute_tool").collect();
    assert_eq!(tool_spans.len(), 2, "{spans:?}");

    let ok = &tool_spans[0].fields;
    assert_eq!(ok["otel.name"], "execute_tool get_weather");
    assert_eq!(ok["gen_ai.operation.name"], "execute_tool");
    assert_eq!(ok["gen_ai.tool.name"], "get_weather");
    assert_eq!(ok["gen_ai.tool.type"], "function");
    assert_eq!(ok["gen_ai.tool.description"], "get_weather tool");
    assert_eq!(ok["agentry.tool.provider"], "travel");
    assert!(!ok.contains_key("error.type"), "{ok:?}");

    let failed = &tool_spans[1].fields;
    assert_eq!(failed["otel.name"], "execute_tool explode");
    assert_eq!(failed["error.type"], "panicked");
    assert_eq!(failed["otel.status_code"], "ERROR");

    let events = capture.events.lock().unwrap().clone();
    let in_span: Vec<&CapturedEvent> = events
        .iter()
        .filter(|e| e.span.as_deref() == Some("execute_tool"))
        .collect();
    let messages: Vec<&str> = in_span.iter().map(|e| e.fields["message"].as_str()).collect();
    assert_eq!(
        messages,
        [
            "tool execution started",
            "tool execution completed",
            "tool execution started",
            "tool execution completed"
        ]
    );
    assert_eq!(
        in_span[0].fields["attributes"],
        r#"{"test.tool":"get_weather","test.argument_count":1}"#
    );
    assert_eq!(in_span[1].fields["is_error"], "false");
    assert!(in_span[1].fields.contains_key("duration_ms"));
    assert_eq!(
        in_span[1].fields["attributes"],
        r#"{"test.tool":"get_weather","test.argument_count":1,"test.ok":true}"#
    );
    assert_eq!(in_span[3].fields["is_error"], "true");
    assert_eq!(in_span[3].fields["error.type"], "panicked");
    assert_eq!(in_span[3].fields["error"], "tool `explode` crashed: boom");

    // Unknown tools get a span too, without a provider.
    let execution = registry.execute("nope", &json!({}), &ToolContext::new()).await;
    assert!(execution.outcome.is_err());
    let spans = capture.spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[2].name, "execute_tool");
    assert_eq!(spans[2].fields["error.type"], "unknown_tool");
    assert!(!spans[2].fields.contains_key("agentry.tool.provider"));
}
