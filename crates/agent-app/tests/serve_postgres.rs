//! Two `agentry serve` processes on one PostgreSQL database (a throwaway
//! cluster): a conversation continued turn by turn on alternate instances,
//! turns sent to both at once stored whole, and sessions owned by their key
//! on every instance. Skipped without PostgreSQL unless
//! `AGENTRY_REQUIRE_POSTGRES` is set (CI sets it).

mod cli_support;

use agent_store_postgres::testing::TempCluster;
use cli_support::{completion, sse, start_serve, stop_serving};
use reqwest::StatusCode;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "two-instances-key";
const OTHER_KEY: &str = "another-tenant-key";

/// A model that answers with what it was sent: how many user messages, and
/// the last one. An instance that lost the history would say so.
struct Echo;

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let users: Vec<&str> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|message| message["role"] == "user")
            .filter_map(|message| message["content"].as_str())
            .collect();
        let answer = format!("{} user messages; last: {}", users.len(), users.last().unwrap_or(&""));
        if body["stream"] == json!(true) {
            sse(&json!({"content": answer}), "stop", (10, 5))
        } else {
            completion(&json!({"role": "assistant", "content": answer}), "stop", (10, 5))
        }
    }
}

async fn run(http: &reqwest::Client, base: &str, key: &str, session: &str, prompt: &str) -> (StatusCode, Value) {
    let response = http
        .post(format!("{base}/v1/runs"))
        .bearer_auth(key)
        .json(&json!({"prompt": prompt, "session": session}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn session(http: &reqwest::Client, base: &str, key: &str, id: &str) -> (StatusCode, Value) {
    let response = http
        .get(format!("{base}/v1/sessions/{id}"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_on_one_database_continue_each_others_sessions_and_lose_no_message() {
    let cluster = match TempCluster::start() {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return,
        Err(error) => panic!("{error}"),
    };
    let url = cluster
        .create_database("agentry")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let model = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Echo)
        .mount(&model)
        .await;
    let config = format!(
        "[tools]\nenabled = []\n[serve]\napi_keys = [\"{}\", \"{}\"]\n[store]\nurl = \"{url}\"\n",
        agent_server::hash_key(KEY),
        agent_server::hash_key(OTHER_KEY)
    );
    let (dir_a, dir_b) = (
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}")),
    );
    // Both start (and migrate the empty database) at the same time.
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| start_serve(dir_a.path(), &config, &model.uri()));
        let b = scope.spawn(|| start_serve(dir_b.path(), &config, &model.uri()));
        (
            a.join().unwrap_or_else(|_| panic!("instance a")),
            b.join().unwrap_or_else(|_| panic!("instance b")),
        )
    });
    let ((serving_a, base_a), (serving_b, base_b)) = (a, b);
    let http = reqwest::Client::new();

    let created: Value = http
        .post(format!("{base_a}/v1/sessions"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let id = created["id"].as_str().unwrap_or_default().to_owned();

    // Six turns, alternating instances: each sees every earlier turn.
    for turn in 1..=6 {
        let base = if turn % 2 == 1 { &base_a } else { &base_b };
        let (status, record) = run(&http, base, KEY, &id, &format!("turn {turn}")).await;
        assert_eq!(status, StatusCode::OK, "{record}");
        assert_eq!(
            record["response"],
            json!(format!("{turn} user messages; last: turn {turn}")),
            "turn {turn} on {base} continued the conversation"
        );
    }

    // Two turns at once, one on each instance: both stored, each whole.
    let (first, second) = tokio::join!(
        run(&http, &base_a, KEY, &id, "together A"),
        run(&http, &base_b, KEY, &id, "together B")
    );
    assert_eq!(
        (first.0, second.0),
        (StatusCode::OK, StatusCode::OK),
        "{first:?} {second:?}"
    );
    let (status, shown) = session(&http, &base_b, KEY, &id).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    let messages = shown["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(messages.len(), 16, "eight turns of two messages: {shown}");
    assert_eq!(shown["message_count"], 16);
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        &users[..6],
        ["turn 1", "turn 2", "turn 3", "turn 4", "turn 5", "turn 6"]
    );
    let mut together = users[6..].to_vec();
    together.sort_unstable();
    assert_eq!(together, ["together A", "together B"], "each once");
    for pair in messages.chunks(2) {
        assert_eq!(
            (pair[0]["role"].as_str(), pair[1]["role"].as_str()),
            (Some("user"), Some("assistant")),
            "turns are not interleaved: {pair:?}"
        );
        let prompt = pair[0]["content"].as_str().unwrap_or_default();
        let answer = pair[1]["content"].as_str().unwrap_or_default();
        assert!(answer.ends_with(&format!("last: {prompt}")), "{prompt} -> {answer}");
    }

    // The other key finds nothing, on either instance.
    for base in [&base_a, &base_b] {
        let (status, _) = session(&http, base, OTHER_KEY, &id).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = run(&http, base, OTHER_KEY, &id, "intrude").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    stop_serving(serving_a);
    stop_serving(serving_b);
}
