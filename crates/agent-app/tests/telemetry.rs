//! End to end: `[telemetry] otlp_endpoint` exports the GenAI spans and
//! metrics of a run over OTLP/HTTP (protobuf). The real `agentry` binary
//! runs against a local OpenAI mock (one calculator call, then the answer)
//! and a local OTLP receiver (wiremock) whose request bodies are decoded
//! with `opentelemetry-proto`. Nothing touches the internet.
#![cfg(feature = "openai")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use cli_support::{agentry, mount_calls_then_answer, run_cmd, stderr, write_trusted_config};

/// An OpenAI mock that asks for the calculator, then answers.
async fn calculator_server() -> MockServer {
    let server = MockServer::start().await;
    mount_calls_then_answer(
        &server,
        json!([{"id": "call_1", "type": "function",
                "function": {"name": "calculator", "arguments": "{\"expression\":\"17*23\"}"}}]),
        (100, 20),
        "17 × 23 = 391.",
        (150, 10),
    )
    .await;
    server
}

/// An OTLP/HTTP receiver accepting traces and metrics.
async fn otlp_receiver() -> MockServer {
    let server = MockServer::start().await;
    for signal in ["/v1/traces", "/v1/metrics"] {
        Mock::given(method("POST"))
            .and(path(signal))
            .respond_with(ResponseTemplate::new(200).insert_header("content-type", "application/x-protobuf"))
            .mount(&server)
            .await;
    }
    server
}

/// The attributes of a span (or resource) by key.
fn attributes(list: &[KeyValue]) -> BTreeMap<String, any_value::Value> {
    list.iter()
        .filter_map(|kv| {
            let value = kv.value.clone().and_then(|AnyValue { value }| value)?;
            Some((kv.key.clone(), value))
        })
        .collect()
}

fn string(value: &str) -> any_value::Value {
    any_value::Value::StringValue(value.to_owned())
}

fn strings(values: &[&str]) -> any_value::Value {
    any_value::Value::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
        values: values
            .iter()
            .map(|value| AnyValue {
                value: Some(string(value)),
            })
            .collect(),
    })
}

#[tokio::test]
async fn a_run_exports_agent_chat_and_tool_spans_and_genai_metrics_over_otlp() {
    let llm = calculator_server().await;
    let otlp = otlp_receiver().await;
    let dir = tempfile::tempdir().unwrap();
    write_trusted_config(
        dir.path(),
        &format!(
            "[telemetry]\notlp_endpoint = \"{}\"\nservice_name = \"agentry-test\"\n\n[telemetry.headers]\nx-api-key = \"secret\"\n",
            otlp.uri()
        ),
    );
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .args([
            "run",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--tools",
            "math",
            "--json",
        ])
        .args(["--base-url", &format!("{}/v1", llm.uri()), "What is 17 * 23?"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));

    let requests = otlp.received_requests().await.unwrap();
    let mut spans: Vec<Span> = Vec::new();
    let mut metric_names: Vec<String> = Vec::new();
    for request in &requests {
        assert_eq!(
            request.headers.get("x-api-key").map(|v| v.to_str().unwrap()),
            Some("secret"),
            "the configured headers go with every export"
        );
        match request.url.path() {
            "/v1/traces" => {
                let export = ExportTraceServiceRequest::decode(request.body.as_slice()).expect("an OTLP trace export");
                for resource_spans in export.resource_spans {
                    let resource = attributes(&resource_spans.resource.map(|r| r.attributes).unwrap_or_default());
                    assert_eq!(resource.get("service.name"), Some(&string("agentry-test")));
                    for scope in resource_spans.scope_spans {
                        spans.extend(scope.spans);
                    }
                }
            }
            "/v1/metrics" => {
                let export =
                    ExportMetricsServiceRequest::decode(request.body.as_slice()).expect("an OTLP metrics export");
                for resource_metrics in export.resource_metrics {
                    for scope in resource_metrics.scope_metrics {
                        metric_names.extend(scope.metrics.into_iter().map(|metric| metric.name));
                    }
                }
            }
            other => panic!("unexpected export to {other}"),
        }
    }
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    let span = |name: &str| -> Vec<&Span> { spans.iter().filter(|span| span.name == name).collect() };

    // invoke_agent agentry
    let agent = span("invoke_agent agentry");
    assert_eq!(agent.len(), 1, "{names:?}");
    let agent_attributes = attributes(&agent[0].attributes);
    assert_eq!(
        agent_attributes.get("gen_ai.operation.name"),
        Some(&string("invoke_agent"))
    );
    assert_eq!(agent_attributes.get("gen_ai.provider.name"), Some(&string("openai")));
    assert_eq!(
        agent_attributes.get("gen_ai.request.model"),
        Some(&string("gpt-4o-mini"))
    );
    assert_eq!(
        agent_attributes.get("gen_ai.usage.input_tokens"),
        Some(&any_value::Value::IntValue(250))
    );

    // chat gpt-4o-mini, twice, kind client, children of the agent span.
    let chats = span("chat gpt-4o-mini");
    assert_eq!(chats.len(), 2, "{names:?}");
    let mut finish_reasons = Vec::new();
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32, "chat spans are of kind client");
        assert_eq!(chat.trace_id, agent[0].trace_id);
        assert_eq!(chat.parent_span_id, agent[0].span_id);
        let chat_attributes = attributes(&chat.attributes);
        assert_eq!(chat_attributes.get("gen_ai.operation.name"), Some(&string("chat")));
        assert_eq!(chat_attributes.get("gen_ai.provider.name"), Some(&string("openai")));
        assert_eq!(
            chat_attributes.get("gen_ai.request.model"),
            Some(&string("gpt-4o-mini"))
        );
        for key in [
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
        ] {
            assert!(
                matches!(chat_attributes.get(key), Some(any_value::Value::IntValue(_))),
                "{key}: {chat_attributes:?}"
            );
        }
        assert!(
            !chat_attributes.contains_key("gen_ai.usage.cache_read_tokens"),
            "{chat_attributes:?}"
        );
        finish_reasons.push(chat_attributes.get("gen_ai.response.finish_reasons").cloned());
    }
    let first = chats
        .iter()
        .find(|chat| {
            attributes(&chat.attributes).get("gen_ai.usage.input_tokens") == Some(&any_value::Value::IntValue(100))
        })
        .expect("the first call");
    let first_attributes = attributes(&first.attributes);
    assert_eq!(
        first_attributes.get("gen_ai.usage.output_tokens"),
        Some(&any_value::Value::IntValue(20))
    );
    assert_eq!(
        first_attributes.get("gen_ai.usage.cache_read.input_tokens"),
        Some(&any_value::Value::IntValue(10))
    );
    // finish_reasons is an array of strings.
    assert!(
        finish_reasons.contains(&Some(strings(&["tool_calls"]))),
        "{finish_reasons:?}"
    );
    assert!(finish_reasons.contains(&Some(strings(&["stop"]))), "{finish_reasons:?}");

    // execute_tool calculator, with the call id, inside the run.
    let tools = span("execute_tool calculator");
    assert_eq!(tools.len(), 1, "{names:?}");
    assert_eq!(tools[0].trace_id, agent[0].trace_id);
    let tool_attributes = attributes(&tools[0].attributes);
    assert_eq!(
        tool_attributes.get("gen_ai.operation.name"),
        Some(&string("execute_tool"))
    );
    assert_eq!(tool_attributes.get("gen_ai.tool.name"), Some(&string("calculator")));
    assert_eq!(tool_attributes.get("gen_ai.tool.call.id"), Some(&string("call_1")));

    // The metrics recorded through the `metrics` crate are exported too.
    for metric in ["gen_ai.client.token.usage", "gen_ai.client.operation.duration"] {
        assert!(
            metric_names.iter().any(|name| name == metric),
            "{metric}: {metric_names:?}"
        );
    }
}

#[tokio::test]
async fn a_bad_telemetry_protocol_is_a_configuration_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("agentry.toml"),
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:9\"\nprotocol = \"grpc\"\n",
    )
    .unwrap();
    let mut command = agentry(dir.path());
    command.env("OPENAI_API_KEY", "sk-test-key").args([
        "run",
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "hello",
    ]);
    let output = run_cmd(command).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("telemetry.protocol"), "{message}");
    assert!(message.contains("http/protobuf"), "{message}");
}

/// The collector answers 307 to another origin: the export is not sent
/// there, so its key headers stay with the configured collector.
#[tokio::test]
async fn an_export_redirected_to_another_origin_is_not_followed() {
    let llm = calculator_server().await;
    let elsewhere = otlp_receiver().await;
    let redirector = MockServer::start().await;
    for signal in ["/v1/traces", "/v1/metrics"] {
        Mock::given(method("POST"))
            .and(path(signal))
            .respond_with(
                ResponseTemplate::new(307).insert_header("location", format!("{}{signal}", elsewhere.uri()).as_str()),
            )
            .mount(&redirector)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    write_trusted_config(
        dir.path(),
        &format!(
            "[telemetry]\notlp_endpoint = \"{}\"\n\n[telemetry.headers]\nx-api-key = \"collector-secret\"\n",
            redirector.uri()
        ),
    );
    let mut command = agentry(dir.path());
    command
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer env-secret")
        .args([
            "run",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--tools",
            "math",
            "--json",
        ])
        .args(["--base-url", &format!("{}/v1", llm.uri()), "What is 17 * 23?"]);
    let output = run_cmd(command).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let asked = redirector.received_requests().await.unwrap();
    assert!(!asked.is_empty(), "the export went to the configured collector first");
    let followed = elsewhere.received_requests().await.unwrap();
    assert!(
        followed.is_empty(),
        "the redirect was followed to another origin with {:?}",
        followed.iter().map(|r| r.headers.clone()).collect::<Vec<_>>()
    );
}
