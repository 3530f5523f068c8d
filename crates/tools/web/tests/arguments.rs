//! Arguments the schema does not declare are refused by validation, before
//! either tool touches the network.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::ToolRegistry;
use agent_tools::ToolBox;
use agent_tools_web::{SearchConfig, WebConfig, WebTools};
use serde_json::json;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn invented_arguments_are_refused_before_the_tool_runs() {
    let server = MockServer::start().await;
    // Any request at all would mean a tool ran; the server checks on drop.
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let config = WebConfig {
        allow_private_addresses: true,
        search: SearchConfig::Searxng {
            base_url: format!("{}/searx", server.uri()),
        },
        ..WebConfig::default()
    };
    let registry = ToolBox::new();
    registry
        .register(Arc::new(WebTools::new(&config).unwrap().tool_set()), true)
        .unwrap();
    let definitions = registry.definitions();
    assert_eq!(definitions.len(), 2);
    let cases = [
        ("web_search", json!({"query": "ferris", "language": "en"}), "language"),
        (
            "fetch_url",
            json!({"url": format!("{}/page", server.uri()), "method": "GET"}),
            "method",
        ),
    ];
    agent_testing::assert_invented_arguments_refused(&registry, &cases).await;
    server.verify().await;
}
