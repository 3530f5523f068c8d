//! Prompt caching end to end: two identical requests against a local mock
//! server, the first answered with cache writes, the second with cache
//! reads, priced with the model catalog's `claude-sonnet-4-5` prices.
#![allow(clippy::unwrap_used)]

use agent_core::{CancellationToken, ChatRequest, LlmClient, ModelCatalog, ModelInfo, Pricing, Usage};
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The catalog's `claude-sonnet-4-5` prices, read from the app's model
/// catalog (crates/agentry/data/models.toml) so the test follows it.
fn catalog_pricing() -> Pricing {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../agentry/data/models.toml")).unwrap();
    let section = text.split("[\"claude-sonnet-4-5\"]").nth(1).unwrap();
    let entry = section.split("\n\n").next().unwrap();
    let price = |key: &str| -> f64 {
        entry
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once('=')?;
                (name.trim() == key).then(|| value.trim().parse().unwrap())
            })
            .unwrap_or_else(|| panic!("no {key} in {entry}"))
    };
    Pricing {
        input_per_million: price("input"),
        output_per_million: price("output"),
        cached_input_per_million: Some(price("cached_input")),
        cache_write_per_million: Some(price("cache_write")),
    }
}

fn cached_reply(written: u64, read: u64) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_cache", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Book the 10:05 flight."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 40, "cache_creation_input_tokens": written, "cache_read_input_tokens": read,
                  "output_tokens": 20}
    }))
}

#[tokio::test]
async fn a_second_identical_request_read_from_the_cache_costs_less() {
    let pricing = catalog_pricing();
    assert_eq!(
        pricing,
        Pricing {
            input_per_million: 3.0,
            output_per_million: 15.0,
            cached_input_per_million: Some(0.3),
            cache_write_per_million: Some(3.75),
        }
    );
    let mut catalog = ModelCatalog::new();
    catalog.insert(
        "claude-sonnet-4-5",
        ModelInfo {
            provider: "anthropic".into(),
            context_window: Some(200_000),
            pricing,
            inputs: None,
        },
    );

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(cached_reply(5000, 0))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(cached_reply(0, 5000))
        .mount(&server)
        .await;
    let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key("sk-ant-test");
    config.base_url = server.uri();
    let client = AnthropicClient::new(config).unwrap();
    let request = ChatRequest {
        prompt_caching: true,
        ..agent_testing::canonical::prompt_caching_request()
    };
    let first = client.complete(&request, &CancellationToken::new()).await.unwrap();
    let second = client.complete(&request, &CancellationToken::new()).await.unwrap();

    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 5040,
            output_tokens: 20,
            cache_write_tokens: 5000,
            ..Usage::default()
        }
    );
    assert_eq!(
        second.usage,
        Usage {
            input_tokens: 5040,
            output_tokens: 20,
            cache_read_tokens: 5000,
            ..Usage::default()
        }
    );
    let cost = |usage: &Usage| catalog.cost(&second.model, usage).unwrap();
    let (first_cost, second_cost) = (cost(&first.usage), cost(&second.usage));
    // 5000 written at 3.75 + 40 at 3.0 + 20 out at 15; then 5000 read at 0.3.
    assert!(
        (first_cost - (5000.0 * 3.75 + 40.0 * 3.0 + 20.0 * 15.0) / 1e6).abs() < 1e-12,
        "{first_cost}"
    );
    assert!(
        (second_cost - (5000.0 * 0.3 + 40.0 * 3.0 + 20.0 * 15.0) / 1e6).abs() < 1e-12,
        "{second_cost}"
    );
    assert!(second_cost < first_cost / 5.0, "{second_cost} vs {first_cost}");

    // Both requests were identical and carried the breakpoints.
    let bodies = server.received_requests().await.unwrap();
    assert_eq!(bodies[0].body, bodies[1].body);
    let body: Value = serde_json::from_slice(&bodies[0].body).unwrap();
    assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
}
