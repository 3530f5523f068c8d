//! Both search backends against a local mock server, with fixtures in the
//! shape of each API's documented JSON response.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools_web::{ApiKey, SearchConfig, SearchResult, WebConfig, WebTools};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn registry(tools: &WebTools) -> ToolBox {
    let registry = ToolBox::new();
    registry.register(Arc::new(tools.tool_set()), true).unwrap();
    registry
}

async fn search(registry: &ToolBox, arguments: Value) -> Result<Value, String> {
    let run = registry.execute("web_search", &arguments, &ToolContext::new()).await;
    match run.outcome {
        Ok(output) => Ok(serde_json::from_str(&output.to_content()).unwrap()),
        Err(error) => Err(error.to_string()),
    }
}

fn expected_results() -> Vec<SearchResult> {
    vec![
        SearchResult {
            title: "Ferris the crab".into(),
            url: "https://rustacean.example/ferris".into(),
            snippet: "Ferris is the unofficial mascot of the Rust community & a friendly crab.".into(),
        },
        SearchResult {
            title: "Crab species".into(),
            url: "https://crabs.example/species".into(),
            snippet: "A field guide to crabs.".into(),
        },
    ]
}

#[tokio::test]
async fn searxng_results_are_mapped() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/searx/search"))
        .and(query_param("q", "ferris crab"))
        .and(query_param("format", "json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("searxng.json")))
        .expect(2)
        .mount(&server)
        .await;
    let config = WebConfig {
        search: SearchConfig::Searxng {
            base_url: format!("{}/searx", server.uri()),
        },
        ..WebConfig::default()
    };
    let tools = WebTools::new(&config).unwrap();
    assert_eq!(tools.search_backend().unwrap().name(), "searxng");

    let results = tools.search("ferris crab", 2).await.unwrap();
    assert_eq!(results.query, "ferris crab");
    assert_eq!(results.results, expected_results());
    assert_eq!(results.count, 2);

    let registry = registry(&tools);
    let all = search(&registry, json!({"query": "  ferris crab "})).await.unwrap();
    assert_eq!(all["count"], 3);
    assert_eq!(
        all["results"][2],
        json!({"title": "No snippet here", "url": "https://empty.example/", "snippet": ""})
    );
}

#[tokio::test]
async fn brave_results_are_mapped_and_the_key_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/res/v1/web/search"))
        .and(query_param("q", "ferris crab"))
        .and(query_param("count", "2"))
        .and(header("X-Subscription-Token", "brave-test-key"))
        .and(header("Accept", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("brave.json")))
        .expect(1)
        .mount(&server)
        .await;
    let config = WebConfig {
        search: SearchConfig::Brave {
            api_key: Some(ApiKey::new("brave-test-key")),
            api_key_env: "BRAVE_UNUSED".into(),
            base_url: Some(server.uri()),
        },
        ..WebConfig::default()
    };
    let tools = WebTools::new(&config).unwrap();
    assert!(!format!("{tools:?}").contains("brave-test-key"));
    let registry = registry(&tools);
    let results = search(&registry, json!({"query": "ferris crab", "max_results": 2}))
        .await
        .unwrap();
    assert_eq!(results["results"], serde_json::to_value(expected_results()).unwrap());
}

#[tokio::test]
async fn brave_key_comes_from_the_environment_and_never_shows_in_errors() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/res/v1/web/search"))
        .respond_with(ResponseTemplate::new(401).set_body_string("invalid token env-secret-key"))
        .mount(&server)
        .await;
    let config = WebConfig {
        search: SearchConfig::Brave {
            api_key: None,
            api_key_env: "BRAVE_API_KEY".into(),
            base_url: Some(server.uri()),
        },
        ..WebConfig::default()
    };
    let tools = WebTools::with_env(&config, |name| {
        (name == "BRAVE_API_KEY").then(|| "env-secret-key".into())
    })
    .unwrap();
    let error = tools.search("anything", 5).await.unwrap_err().to_string();
    assert!(error.contains("HTTP 401"), "{error}");
    assert!(error.contains("rejected the API key"), "{error}");
    assert!(!error.contains("env-secret-key"), "{error}");
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(request.headers["x-subscription-token"], "env-secret-key");

    let error = WebTools::with_env(&config, |_| None).unwrap_err().to_string();
    assert!(error.contains("Brave Search needs an API key"), "{error}");
    assert!(error.contains("BRAVE_API_KEY"), "{error}");
}

#[tokio::test]
async fn the_brave_key_variable_must_be_braves_own_and_no_other_secret_is_read() {
    let server = MockServer::start().await;
    let config = WebConfig {
        search: SearchConfig::Brave {
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            base_url: Some(server.uri()),
        },
        ..WebConfig::default()
    };
    let read = std::sync::Mutex::new(Vec::new());
    let error = WebTools::with_env(&config, |name| {
        read.lock().unwrap().push(name.to_owned());
        Some("sk-openai-secret".into())
    })
    .unwrap_err()
    .to_string();
    assert!(error.contains("search.api_key_env"), "{error}");
    assert!(error.contains("OPENAI_API_KEY") && error.contains("BRAVE_"), "{error}");
    assert!(!error.contains("sk-openai-secret"), "{error}");
    assert!(read.lock().unwrap().is_empty(), "no variable was read");
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing was sent");
    for name in ["BRAVE_", "brave_api_key", "BRAVE_KEY-2"] {
        let config = WebConfig {
            search: SearchConfig::Brave {
                api_key: None,
                api_key_env: name.into(),
                base_url: None,
            },
            ..WebConfig::default()
        };
        assert!(WebTools::with_env(&config, |_| Some("k".into())).is_err(), "{name}");
    }
    let own = WebConfig {
        search: SearchConfig::Brave {
            api_key: None,
            api_key_env: "BRAVE_SEARCH_KEY_2".into(),
            base_url: None,
        },
        ..WebConfig::default()
    };
    assert!(WebTools::with_env(&own, |_| Some("k".into())).is_ok());
}

#[tokio::test]
async fn a_search_answer_over_the_byte_cap_is_refused_not_buffered() {
    let server = MockServer::start().await;
    let huge = format!("{{\"results\": [], \"padding\": \"{}\"}}", "x".repeat(8 * 1024));
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_string(huge))
        .mount(&server)
        .await;
    let config = |max_bytes| WebConfig {
        search: SearchConfig::Searxng { base_url: server.uri() },
        max_bytes,
        ..WebConfig::default()
    };
    let tools = WebTools::new(&config(4 * 1024)).unwrap();
    let error = tools.search("crabs", 5).await.unwrap_err().to_string();
    assert!(error.contains("larger than the 4096-byte limit (max_bytes)"), "{error}");
    let roomy = WebTools::new(&config(64 * 1024)).unwrap();
    assert!(
        roomy.search("crabs", 5).await.is_ok(),
        "an answer under the cap is read"
    );
}

#[tokio::test]
async fn search_failures_are_tool_errors() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>not json</html>"))
        .mount(&server)
        .await;
    let config = WebConfig {
        search: SearchConfig::Searxng { base_url: server.uri() },
        ..WebConfig::default()
    };
    let registry = registry(&WebTools::new(&config).unwrap());
    let error = search(&registry, json!({"query": "x"})).await.unwrap_err();
    assert!(
        error.starts_with("the search service's answer could not be read"),
        "{error}"
    );
    let error = search(&registry, json!({"query": "   "})).await.unwrap_err();
    assert!(error.starts_with("query must not be empty"), "{error}");
    let error = search(&registry, json!({"query": "x", "max_results": 50}))
        .await
        .unwrap_err();
    assert!(error.contains("max_results"), "{error}");
}

#[test]
fn web_search_is_offered_only_with_a_backend() {
    let without = WebTools::new(&WebConfig::default()).unwrap();
    let names: Vec<String> = registry(&without).definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["fetch_url"]);

    let config = WebConfig {
        search: SearchConfig::Searxng {
            base_url: "http://localhost:8888".into(),
        },
        ..WebConfig::default()
    };
    let with = registry(&WebTools::new(&config).unwrap());
    let definitions = with.definitions();
    assert_eq!(definitions[0].name, "web_search");
    assert_eq!(definitions[1].name, "fetch_url");
    let max_results = &definitions[0].input_schema["properties"]["max_results"];
    assert_eq!(
        (max_results["minimum"].clone(), max_results["maximum"].clone()),
        (json!(1), json!(20))
    );
    assert_eq!(max_results["default"], json!(5));
    let url = &definitions[1].input_schema["properties"]["url"]["description"];
    assert!(
        url.as_str().unwrap().contains("https://www.rust-lang.org/learn"),
        "{url}"
    );
    assert!(with.invalid_schemas().is_empty());
}

/// A mock server on 127.0.0.2: another host than wiremock's 127.0.0.1.
async fn server_on_127_0_0_2() -> MockServer {
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    MockServer::builder().listener(listener).start().await
}

#[tokio::test]
async fn brave_never_sends_its_key_along_a_redirect_to_another_host() {
    let other = server_on_127_0_0_2().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("brave.json")))
        .mount(&other)
        .await;
    let server = MockServer::start().await;
    for (status, route) in [(302u16, "/a"), (307, "/b")] {
        Mock::given(method("GET"))
            .and(path(format!("{route}/res/v1/web/search")))
            .respond_with(
                ResponseTemplate::new(status).insert_header("Location", format!("{}/collect", other.uri()).as_str()),
            )
            .mount(&server)
            .await;
    }
    let mut errors = Vec::new();
    for route in ["/a", "/b"] {
        let config = WebConfig {
            search: SearchConfig::Brave {
                api_key: Some(ApiKey::new("brave-redirect-secret")),
                api_key_env: "BRAVE_UNUSED".into(),
                base_url: Some(format!("{}{route}", server.uri())),
            },
            ..WebConfig::default()
        };
        errors.push(WebTools::new(&config).unwrap().search("ferris", 3).await);
    }
    let leaked = other.received_requests().await.unwrap();
    assert!(
        leaked
            .iter()
            .all(|request| !request.headers.contains_key("x-subscription-token")),
        "the other host received the subscription token"
    );
    assert!(leaked.is_empty(), "the other host received {} requests", leaked.len());
    for error in errors {
        let error = error.unwrap_err().to_string();
        assert!(error.contains("redirect"), "{error}");
        assert!(
            error.contains(&other.address().to_string()),
            "names the target: {error}"
        );
        assert!(!error.contains("brave-redirect-secret"), "{error}");
    }
}

#[tokio::test]
async fn a_search_redirect_within_the_same_host_is_followed() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/old/search"))
        .respond_with(ResponseTemplate::new(301).insert_header("Location", "/new/search?q=ferris&format=json"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/new/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture("searxng.json")))
        .mount(&server)
        .await;
    let config = WebConfig {
        search: SearchConfig::Searxng {
            base_url: format!("{}/old", server.uri()),
        },
        ..WebConfig::default()
    };
    let results = WebTools::new(&config).unwrap().search("ferris", 2).await.unwrap();
    assert_eq!(results.results, expected_results());
}
