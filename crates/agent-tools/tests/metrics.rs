//! Metrics recorded for every execution.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools::telemetry::{NO_PROVIDER_LABEL, TOOL_DURATION, TOOL_EXECUTIONS, UNKNOWN_TOOL_LABEL};
use common::{Behaviour, Scripted};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use serde_json::json;

fn registry() -> ToolBox {
    ToolBox::builder()
        .provider(
            Scripted::new("travel")
                .tool("get_weather", Behaviour::Answer)
                .tool("explode", Behaviour::Panic("boom"))
                .shared(),
        )
        .disabled_provider(Scripted::new("admin").tool("drop", Behaviour::Answer).shared())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn executions_are_counted_and_timed() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let registry = registry();
    let context = ToolContext::new();

    registry.execute("get_weather", &json!({}), &context).await;
    registry.execute("get_weather", &json!({}), &context).await;
    registry.execute("explode", &json!({}), &context).await;
    registry.execute("invented_by_the_model", &json!({}), &context).await;
    registry.execute("drop", &json!({}), &context).await;

    let mut counters = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        match value {
            DebugValue::Counter(count) if key.name() == TOOL_EXECUTIONS => {
                counters.insert(labels.join(","), count);
            }
            DebugValue::Histogram(samples) if key.name() == TOOL_DURATION => {
                assert!(samples.iter().all(|s| s.into_inner() >= 0.0));
                histograms.insert(labels.join(","), samples.len());
            }
            other => panic!("unexpected metric {key:?}: {other:?}"),
        }
    }
    assert_eq!(
        counters,
        BTreeMap::from([
            ("tool=get_weather,provider=travel,outcome=ok".to_owned(), 2),
            ("tool=explode,provider=travel,outcome=error".to_owned(), 1),
            (
                format!("tool={UNKNOWN_TOOL_LABEL},provider={NO_PROVIDER_LABEL},outcome=error"),
                1
            ),
            (format!("tool=drop,provider={NO_PROVIDER_LABEL},outcome=error"), 1),
        ])
    );
    assert_eq!(
        histograms,
        BTreeMap::from([
            ("tool=get_weather".to_owned(), 2),
            ("tool=explode".to_owned(), 1),
            (format!("tool={UNKNOWN_TOOL_LABEL}"), 1),
            ("tool=drop".to_owned(), 1),
        ])
    );
}
