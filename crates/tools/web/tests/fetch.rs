//! `fetch_url` against local mock servers only. The mock servers listen
//! on loopback addresses, which the default policy refuses; tests that
//! fetch from them allow loopback explicitly, and separate tests show the
//! same URLs refused without that.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use agent_core::{ToolContext, ToolRegistry};
use agent_tools::ToolBox;
use agent_tools_web::{WebConfig, WebTools};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const PAGE: &str = r#"<!doctype html>
<html>
  <head>
    <title>Ferris &amp; friends</title>
    <style>body { font-family: serif }</style>
    <script>window.tracking = "do-not-show";</script>
  </head>
  <body>
    <h1>Meet Ferris</h1>
    <p>Ferris is a <em>crab</em>. Read <a href="/more">more</a>.</p>
    <script>document.write("also hidden")</script>
  </body>
</html>"#;

fn registry(config: &WebConfig) -> ToolBox {
    let registry = ToolBox::new();
    registry
        .register(Arc::new(WebTools::new(config).unwrap().tool_set()), true)
        .unwrap();
    registry
}

async fn fetch(registry: &ToolBox, url: &str) -> Result<Value, String> {
    let run = registry
        .execute("fetch_url", &json!({ "url": url }), &ToolContext::new())
        .await;
    match run.outcome {
        Ok(output) => Ok(serde_json::from_str(&output.to_content()).unwrap()),
        Err(error) => Err(error.to_string()),
    }
}

fn allow_loopback() -> WebConfig {
    WebConfig {
        allow_private_addresses: true,
        ..WebConfig::default()
    }
}

async fn page_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(PAGE, "text/html; charset=utf-8"))
        .mount(&server)
        .await;
    server
}

/// A mock server on 127.0.0.2, so that an allowlist entry for it does not
/// also cover 127.0.0.1.
async fn server_on_127_0_0_2() -> MockServer {
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    MockServer::builder().listener(listener).start().await
}

#[tokio::test]
async fn html_pages_become_text_with_a_title() {
    let server = page_server().await;
    let url = format!("{}/page", server.uri());
    let page = fetch(&registry(&allow_loopback()), &url).await.unwrap();
    assert_eq!(page["url"], url);
    assert_eq!(page["final_url"], url);
    assert_eq!(page["status"], 200);
    assert_eq!(page["content_type"], "text/html");
    assert_eq!(page["title"], "Ferris & friends");
    assert_eq!(page["truncated"], false);
    assert_eq!(page["bytes_read"], PAGE.len());
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("Meet Ferris"), "{text}");
    assert!(text.contains("Ferris is a *crab*."), "{text}");
    assert!(text.contains("/more"), "{text}");
    for hidden in ["do-not-show", "also hidden", "font-family"] {
        assert!(!text.contains(hidden), "{hidden} leaked into {text}");
    }
}

#[tokio::test]
async fn loopback_is_refused_by_default() {
    let server = page_server().await;
    let registry = registry(&WebConfig::default());
    let port = server.address().port();
    let refused = [
        format!("{}/page", server.uri()),
        format!("http://localhost:{port}/page"),
        format!("http://[::1]:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        format!("http://2130706433:{port}/page"),
        format!("http://0x7f.0.0.1:{port}/page"),
        format!("http://0.0.0.0:{port}/page"),
    ];
    for url in &refused {
        let error = fetch(&registry, url).await.unwrap_err();
        assert!(error.starts_with("refused: "), "{url}: {error}");
        assert!(
            error.contains("loopback") || error.contains("this network"),
            "{url}: {error}"
        );
    }
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_allowlisted_address_may_be_fetched_without_allowing_all_private_ranges() {
    let server = server_on_127_0_0_2().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("plain words", "text/plain"))
        .mount(&server)
        .await;
    let config = WebConfig {
        allowed_hosts: vec!["127.0.0.2".into()],
        ..WebConfig::default()
    };
    let registry = registry(&config);
    let page = fetch(&registry, &format!("{}/notes.txt", server.uri())).await.unwrap();
    assert_eq!(page["text"], "plain words");
    assert!(page.get("title").is_none());
    // Anything else is not on the allowlist.
    let error = fetch(&registry, "http://127.0.0.1/").await.unwrap_err();
    assert!(error.starts_with("refused: 127.0.0.1 is a loopback address"), "{error}");
    let error = fetch(&registry, &format!("http://localhost:{}/", server.address().port()))
        .await
        .unwrap_err();
    assert!(error.starts_with("refused: localhost resolves to"), "{error}");
    // A public address off the list is refused for that reason.
    let error = fetch(&registry, "http://8.8.8.8/").await.unwrap_err();
    assert_eq!(
        error,
        "refused: 8.8.8.8 is not on the allowlist of hosts this agent may fetch"
    );
}

#[tokio::test]
async fn redirects_to_private_addresses_are_refused() {
    let server = server_on_127_0_0_2().await;
    for (from, to) in [
        ("/to-loopback", "http://127.0.0.1/"),
        ("/to-metadata", "http://169.254.169.254/latest/meta-data/"),
        ("/to-ipv6-loopback", "http://[::1]/"),
        ("/to-file", "file:///etc/passwd"),
    ] {
        Mock::given(method("GET"))
            .and(path(from))
            .respond_with(ResponseTemplate::new(302).insert_header("Location", to))
            .mount(&server)
            .await;
    }
    let config = WebConfig {
        allowed_hosts: vec!["127.0.0.2".into()],
        ..WebConfig::default()
    };
    let allowlisted = registry(&config);
    for (from, reason) in [
        ("/to-loopback", "refused: 127.0.0.1 is a loopback address"),
        ("/to-metadata", "refused: 169.254.169.254 is a link-local address"),
        ("/to-ipv6-loopback", "refused: ::1 is a loopback address"),
        ("/to-file", "refused: only http and https URLs can be fetched"),
    ] {
        let error = fetch(&allowlisted, &format!("{}{from}", server.uri()))
            .await
            .unwrap_err();
        assert!(error.starts_with(reason), "{from}: {error}");
    }

    // Even with private addresses allowed, the metadata endpoint can be denied.
    let config = WebConfig {
        allow_private_addresses: true,
        denied_hosts: vec!["169.254.0.0/16".into()],
        ..WebConfig::default()
    };
    let error = fetch(&registry(&config), &format!("{}/to-metadata", server.uri()))
        .await
        .unwrap_err();
    assert_eq!(error, "refused: 169.254.169.254 is on the denylist");
}

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit() {
    let server = page_server().await;
    Mock::given(method("GET"))
        .and(path("/old"))
        .respond_with(ResponseTemplate::new(301).insert_header("Location", "/page"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/loop"))
        .respond_with(ResponseTemplate::new(302).insert_header("Location", "/loop"))
        .mount(&server)
        .await;
    let config = WebConfig {
        max_redirects: 3,
        ..allow_loopback()
    };
    let registry = registry(&config);
    let page = fetch(&registry, &format!("{}/old", server.uri())).await.unwrap();
    assert_eq!(page["final_url"], format!("{}/page", server.uri()));
    assert_eq!(page["title"], "Ferris & friends");
    let error = fetch(&registry, &format!("{}/loop", server.uri())).await.unwrap_err();
    assert!(error.contains("redirected more than 3 times"), "{error}");
    let loops = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|request| request.url.path() == "/loop")
        .count();
    assert_eq!(loops, 4);
}

#[tokio::test]
async fn the_byte_cap_holds() {
    let server = MockServer::start().await;
    let big = "All work and no play. ".repeat(10_000);
    Mock::given(method("GET"))
        .and(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(big.clone(), "text/plain"))
        .mount(&server)
        .await;
    let config = WebConfig {
        max_bytes: 1000,
        ..allow_loopback()
    };
    let page = fetch(&registry(&config), &format!("{}/big", server.uri()))
        .await
        .unwrap();
    assert_eq!(page["truncated"], true);
    assert_eq!(page["bytes_read"], 1000);
    assert_eq!(page["text"].as_str().unwrap(), &big[..1000]);

    let config = WebConfig {
        max_text_chars: 50,
        ..allow_loopback()
    };
    let page = fetch(&registry(&config), &format!("{}/big", server.uri()))
        .await
        .unwrap();
    assert_eq!(page["truncated"], true);
    assert_eq!(page["text"].as_str().unwrap().chars().count(), 50);
}

#[tokio::test]
async fn other_schemes_and_bad_urls_are_refused() {
    let registry = registry(&allow_loopback());
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/file.txt",
        "gopher://example.com/",
        "data:text/plain,hello",
        "javascript:alert(1)",
    ] {
        let error = fetch(&registry, url).await.unwrap_err();
        assert!(
            error.starts_with("refused: only http and https URLs can be fetched"),
            "{url}: {error}"
        );
    }
    let error = fetch(&registry, "example.com/page").await.unwrap_err();
    assert!(error.contains("give a full URL with its scheme"), "{error}");
}

#[tokio::test]
async fn error_statuses_and_binary_bodies_are_tool_errors() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/image.png"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![0x89, b'P', b'N', b'G'], "image/png"))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/data.json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"ok": true})))
        .mount(&server)
        .await;
    let registry = registry(&allow_loopback());
    let error = fetch(&registry, &format!("{}/missing", server.uri()))
        .await
        .unwrap_err();
    assert!(error.starts_with("the server answered HTTP 404 Not Found"), "{error}");
    let error = fetch(&registry, &format!("{}/image.png", server.uri()))
        .await
        .unwrap_err();
    assert!(error.contains("is image/png, which cannot be shown as text"), "{error}");
    let page = fetch(&registry, &format!("{}/data.json", server.uri())).await.unwrap();
    assert_eq!(page["text"], r#"{"ok":true}"#);
}

#[tokio::test]
async fn slow_servers_hit_the_time_limit() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(5)))
        .mount(&server)
        .await;
    let config = WebConfig {
        timeout_secs: 1,
        ..allow_loopback()
    };
    let started = std::time::Instant::now();
    let error = fetch(&registry(&config), &format!("{}/slow", server.uri()))
        .await
        .unwrap_err();
    assert!(error.contains("timed out") || error.contains("time limit"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}

#[test]
fn bad_list_entries_are_configuration_errors() {
    let config = WebConfig {
        denied_hosts: vec!["10.0.0.0/99".into()],
        ..WebConfig::default()
    };
    let error = WebTools::new(&config).unwrap_err().to_string();
    assert!(error.starts_with("invalid [tools.web] configuration"), "{error}");
}

#[tokio::test]
async fn fetched_pages_never_receive_the_search_key_even_across_redirects() {
    let other = server_on_127_0_0_2().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("landed", "text/plain"))
        .mount(&other)
        .await;
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/hop"))
        .respond_with(ResponseTemplate::new(302).insert_header("Location", format!("{}/landing", other.uri()).as_str()))
        .mount(&server)
        .await;
    let config = WebConfig {
        search: agent_tools_web::SearchConfig::Brave {
            api_key: Some(agent_tools_web::ApiKey::new("brave-fetch-secret")),
            api_key_env: "BRAVE_UNUSED".into(),
            base_url: Some(server.uri()),
        },
        ..allow_loopback()
    };
    let page = fetch(&registry(&config), &format!("{}/hop", server.uri()))
        .await
        .unwrap();
    assert_eq!(page["text"], "landed", "public-page redirects are still followed");
    let mut requests = server.received_requests().await.unwrap();
    requests.extend(other.received_requests().await.unwrap());
    for request in &requests {
        for (name, value) in &request.headers {
            assert!(
                !value.to_str().unwrap_or_default().contains("brave-fetch-secret"),
                "{name} carried the key to {}",
                request.url
            );
        }
        assert!(!request.headers.contains_key("authorization"));
    }
}
