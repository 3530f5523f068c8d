//! Agentry's cross-crate end-to-end tests, and what they share.
//!
//! The test targets (`e2e/*.rs`, listed in this package's `Cargo.toml`)
//! assemble a provider adapter, the runner (`agent-runner`) and tool crates
//! together, the way a program built on Agentry does. Tests of one crate
//! stay in that crate; test doubles every crate uses live in
//! `agent-testing`. This library holds what only these tests share: a mock
//! model server that answers from a script, and the weather tool the
//! provider tests ask for. Run them with `cargo test -p agentry-tests`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::ToolContext;
use agent_tools::{Json, ToolBox, ToolSet, TypedTool};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Answers with the scripted responses in order (the last one repeats).
struct Script {
    responses: Vec<ResponseTemplate>,
    next: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let turn = self.next.fetch_add(1, Ordering::SeqCst);
        match self.responses.get(turn).or_else(|| self.responses.last()) {
            Some(response) => response.clone(),
            None => ResponseTemplate::new(500).set_body_string("the script is empty"),
        }
    }
}

/// A mock server answering every POST with `responses`, in order.
pub async fn scripted_server(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Script {
            responses,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

/// The JSON bodies of the requests `server` received, in order.
///
/// # Panics
///
/// When the server does not record requests or a body is not JSON: a
/// failed test.
pub async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap_or_else(|e| panic!("a request body: {e}")))
        .collect()
}

/// Arguments of `get_weather`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// City name.
    city: String,
}

/// A registry with one tool, `get_weather` (18 °C and cloudy anywhere), and
/// how many times it ran.
///
/// # Panics
///
/// Never: one tool cannot clash.
pub fn weather_tools() -> (Arc<ToolBox>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let weather = TypedTool::new(
        "get_weather",
        "Current weather for a city.",
        move |args: WeatherArgs, _: ToolContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, agent_core::ToolError>(Json(json!({"city": args.city, "temp_c": 18, "sky": "cloudy"}))) }
        },
    );
    let registry = ToolBox::new();
    if let Err(error) = registry.register(Arc::new(ToolSet::new("weather", "Weather tools").tool(weather)), true) {
        panic!("the weather tool: {error}");
    }
    (Arc::new(registry), runs)
}
