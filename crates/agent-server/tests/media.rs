//! Images, audio and files in requests: `image_url`, `input_audio` and
//! `file` parts, as OpenAI's API writes them, in `/v1/chat/completions`
//! and in `/v1/runs`; the agent's model receives them as attachments.

mod common;

use std::sync::Arc;

use agent_core::{MediaKind, Message, encode_base64};
use agent_runner::Agent;
use agent_testing::{ScriptedClient, media, response};
use common::{KEY, json_of, start};
use reqwest::StatusCode;
use serde_json::json;

fn png_data_url() -> String {
    format!("data:image/png;base64,{}", encode_base64(media::PNG))
}

fn agent(client: &ScriptedClient) -> Agent {
    Agent::builder(Arc::new(client.clone())).build()
}

/// The attachments of the last user message the model received.
fn received(client: &ScriptedClient) -> Vec<agent_core::Attachment> {
    let requests = client.requests();
    let last = requests.last().expect("a model call");
    last.messages
        .iter()
        .rev()
        .find(|message| matches!(message, Message::User { .. }))
        .map(|message| message.attachments().to_vec())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_chat_completion_with_an_image_url_part_reaches_the_model_as_an_image() {
    let client = ScriptedClient::new().respond(response::text("A transparent pixel."));
    let server = start(agent(&client), |server| server).await;
    let body = json!({"model": "agentry", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": png_data_url(), "detail": "high"}},
    ]}]});
    let (status, reply) = json_of(server.post("/v1/chat/completions", Some(KEY), &body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], "A transparent pixel.");
    let attachments = received(&client);
    assert_eq!(attachments, [media::png().with_detail(agent_core::ImageDetail::High)]);
}

#[tokio::test]
async fn a_run_whose_prompt_has_audio_and_a_file_reaches_the_model_with_both() {
    let client = ScriptedClient::new().respond(response::text("Heard and read."));
    let server = start(agent(&client), |server| server).await;
    let pdf = format!("data:application/pdf;base64,{}", encode_base64(media::PDF));
    let body = json!({"prompt": [
        {"type": "text", "text": "Compare the recording with the report."},
        {"type": "input_audio", "input_audio": {"data": encode_base64(media::WAV), "format": "wav"}},
        {"type": "file", "file": {"file_data": pdf, "filename": "report.pdf"}},
    ]});
    let (status, record) = json_of(server.post("/v1/runs", Some(KEY), &body)).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    let kinds: Vec<MediaKind> = received(&client).iter().map(|attachment| attachment.kind).collect();
    assert_eq!(kinds, [MediaKind::Audio, MediaKind::Document]);
    assert_eq!(received(&client)[1].name.as_deref(), Some("report.pdf"));
}

#[tokio::test]
async fn a_part_whose_bytes_are_not_what_it_says_is_a_400_and_nothing_runs() {
    let client = ScriptedClient::new().respond(response::text("never"));
    let server = start(agent(&client), |server| server).await;
    let lying = format!("data:image/jpeg;base64,{}", encode_base64(media::PNG));
    let body = json!({"model": "agentry", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": lying}},
    ]}]});
    let (status, error) = json_of(server.post("/v1/chat/completions", Some(KEY), &body)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = error["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("messages[0].content[0]") && message.contains("declared as image/jpeg"),
        "{error}"
    );
    let (status, error) =
        json_of(server.post("/v1/runs", Some(KEY), &json!({"prompt": [{"type": "video_url"}]}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert!(client.requests().is_empty());
}

#[tokio::test]
async fn a_server_with_scenes_routes_an_image_prompt_and_the_scene_gets_the_image() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Vision", serde_json::json!({}))]))
        .respond(response::text("A transparent pixel."));
    let router = agent_runner::SceneRouter::builder(Arc::new(client.clone()))
        .scene(agent_runner::Scene::new("Vision", "Describes pictures."))
        .scene(agent_runner::Scene::new("Calculator", "Arithmetic."))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let server = start(agent(&client), |server| server.scenes(router)).await;
    let body = json!({"model": "agentry", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": png_data_url()}},
    ]}]});
    let (status, reply) = json_of(server.post("/v1/chat/completions", Some(KEY), &body)).await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], "A transparent pixel.");
    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0]
            .messages
            .iter()
            .all(|message| message.attachments().is_empty()),
        "the routing call gets no bytes"
    );
    assert_eq!(received(&client), [media::png()]);
}
