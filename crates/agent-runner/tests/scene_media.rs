//! Scenes with attachments: the routing call reads what is attached in
//! words (names and types, never the bytes, also for earlier turns), the
//! chosen scene's agent gets the media, and a request no scene takes keeps
//! it in its record.

use std::sync::Arc;

use agent_core::{AgentEvent, Attachment, Message, RunEnd, ToolContext};
use agent_runner::scenes::{Scene, SceneRouter};
use agent_testing::{ScriptedClient, response};
use futures::StreamExt;
use serde_json::json;

fn image(name: &str) -> Attachment {
    Attachment::from_bytes(
        agent_testing::media::PNG.to_vec(),
        Some("image/png"),
        Some(name.to_owned()),
    )
    .expect("a PNG")
}

fn router(client: &ScriptedClient) -> SceneRouter {
    SceneRouter::builder(Arc::new(client.clone()))
        .scene(Scene::new("Vision", "Describes pictures.").system_prompt("You describe images."))
        .scene(Scene::new("Chat", "Small talk.").system_prompt("You chat."))
        .build()
        .expect("the router builds")
}

fn last_user(request: &agent_core::ChatRequest) -> &Message {
    request
        .messages
        .iter()
        .rev()
        .find(|message| matches!(message, Message::User { .. }))
        .expect("a user message")
}

#[tokio::test]
async fn the_router_reads_attachments_by_name_and_the_scene_gets_them() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Vision", json!({}))]))
        .respond(response::text("A single pixel."));
    let earlier = vec![
        Message::user_with("Look at this", vec![image("earlier.png")]),
        Message::assistant("A cat."),
    ];
    let result = router(&client)
        .run_attached(
            earlier.clone(),
            "And this one?",
            vec![image("dot.png")],
            &ToolContext::new(),
        )
        .await
        .expect("the scene runs");
    assert_eq!(result.scene.as_deref(), Some("Vision"));
    assert_eq!(result.response, "A single pixel.");

    let requests = client.requests();
    assert_eq!(requests.len(), 2);
    let routing = &requests[0];
    assert!(
        routing.messages.iter().all(|message| message.attachments().is_empty()),
        "no media goes to the router: {:?}",
        routing.messages
    );
    assert_eq!(
        last_user(routing),
        &Message::user("And this one?\n[attached: `dot.png` an image (image/png)]")
    );
    assert_eq!(
        routing.messages[0],
        Message::user("Look at this\n[attached: `earlier.png` an image (image/png)]")
    );
    let scene = &requests[1];
    assert_eq!(last_user(scene).attachments(), [image("dot.png")]);
    assert_eq!(scene.messages[0].attachments(), [image("earlier.png")]);
    assert!(
        result
            .messages
            .contains(&Message::user_with("And this one?", vec![image("dot.png")]))
    );
}

#[tokio::test]
async fn a_streamed_request_no_scene_takes_keeps_its_attachment_in_the_record() {
    let client = ScriptedClient::new().respond(response::tool_calls([("Astrology", json!({}))]));
    let events: Vec<AgentEvent> = router(&client)
        .run_stream_attached(Vec::new(), "Read my palm", vec![image("palm.png")], ToolContext::new())
        .collect()
        .await;
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(result.stop_reason, RunEnd::Error);
    assert_eq!(
        result.messages,
        [Message::user_with("Read my palm", vec![image("palm.png")])]
    );
}
