//! A cost budget that cannot be enforced is logged once per run. A binary
//! of its own, as `telemetry.rs` is: tracing caches callsite interest
//! process-wide, so events of tests running at the same time without a
//! subscriber would race with the scoped subscriber used here.

mod common;

use std::future::IntoFuture;
use std::sync::{Arc, Mutex, PoisonError};

use agent_core::{ModelCatalog, ModelInfo, Pricing, RunEnd, Usage};
use agent_runner::Budget;
use agent_testing::{ScriptedClient, response};
use serde_json::json;

/// The messages of WARN events.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut visitor = Message::default();
        event.record(&mut visitor);
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(visitor.0);
    }
}

#[derive(Default)]
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }
}

fn run(client: &ScriptedClient, catalog: Option<ModelCatalog>) -> agent_core::AgentRunResult {
    let mut builder = common::agent(client).budget(Budget {
        max_cost_usd: Some(0.25),
        ..Budget::default()
    });
    if let Some(catalog) = catalog {
        builder = builder.catalog(Arc::new(catalog));
    }
    let agent = builder.build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(agent.run("go").into_future()).expect("run")
}

fn script() -> ScriptedClient {
    ScriptedClient::new()
        .respond(response::tool_calls([("echo", json!({"n": 1}))]))
        .respond(response::tool_calls([("echo", json!({"n": 2}))]))
        .respond(response::with_usage(response::text("done"), Usage::new(1, 1)))
}

#[test]
fn an_unenforceable_cost_budget_is_warned_about_once_per_run_and_an_enforceable_one_not_at_all() {
    use tracing_subscriber::layer::SubscriberExt;
    let warnings = Warnings::default();
    let subscriber = tracing_subscriber::registry().with(warnings.clone());
    tracing::subscriber::with_default(subscriber, || {
        let client = script();
        let result = run(&client, None);
        assert_eq!(result.stop_reason, RunEnd::Completed);
        assert_eq!(client.requests().len(), 3, "three model calls");
        let logged = warnings.take();
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert!(
            logged[0].contains("the cost budget cannot be enforced: no price is known for the model"),
            "{logged:?}"
        );
        assert!(logged[0].contains("scripted-model"), "{logged:?}");

        let mut catalog = ModelCatalog::new();
        catalog.insert(
            "scripted-model",
            ModelInfo {
                provider: "scripted".into(),
                context_window: None,
                pricing: Pricing {
                    input_per_million: 1.0,
                    output_per_million: 1.0,
                    ..Pricing::default()
                },
                inputs: None,
            },
        );
        let result = run(&script(), Some(catalog));
        assert_eq!(result.stop_reason, RunEnd::Completed);
        assert_eq!(warnings.take(), Vec::<String>::new());
    });
}
