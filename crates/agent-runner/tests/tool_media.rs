//! A tool that returns media with its text: the media go into the tool
//! result of the history, so the next model call sends them.

use std::sync::Arc;

use agent_core::{Message, RunEnd, ToolOutput};
use agent_runner::Agent;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, media, response};
use serde_json::json;

#[tokio::test]
async fn a_tools_image_reaches_the_next_model_call_in_its_result() {
    let chart = TestTool::new(
        "render_chart",
        ToolBehaviour::Reply(ToolOutput::Media {
            text: "Rendered the sales chart.".into(),
            attachments: vec![media::png()],
        }),
    );
    let registry = agent_tools::ToolBox::builder()
        .provider(Arc::new(TestTools::new("charts").with(chart)))
        .build()
        .expect("the tools register");
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("render_chart", json!({"metric": "sales"}))]))
        .respond(response::text("Sales doubled in May."));
    let agent = Agent::builder(Arc::new(client.clone()))
        .tools(Arc::new(registry))
        .build();
    let result = agent.run("Show me the sales chart.").await.expect("a run");

    assert_eq!(result.stop_reason, RunEnd::Completed);
    assert_eq!(result.tool_calls[0].result, "Rendered the sales chart.");
    let sent = &client.requests()[1];
    let Some(Message::Tool(tool_result)) = sent.messages.iter().find(|message| matches!(message, Message::Tool(_)))
    else {
        panic!("the second call has no tool result");
    };
    assert_eq!(tool_result.content, "Rendered the sales chart.");
    assert_eq!(tool_result.attachments, [media::png()]);
    // The history the run returns keeps them too.
    assert!(
        result
            .messages
            .iter()
            .any(|message| message.attachments() == [media::png()])
    );
}

fn catalog(inputs: Option<Vec<agent_core::MediaKind>>) -> Arc<agent_core::ModelCatalog> {
    let mut catalog = agent_core::ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        agent_core::ModelInfo {
            provider: "scripted".into(),
            context_window: None,
            pricing: agent_core::Pricing::default(),
            inputs,
        },
    );
    Arc::new(catalog)
}

#[tokio::test]
async fn an_attachment_the_model_cannot_read_is_refused_before_any_request() {
    let client = ScriptedClient::new().respond(response::text("never"));
    let agent = Agent::builder(Arc::new(client.clone()))
        .catalog(catalog(Some(Vec::new())))
        .build();
    let error = agent
        .run("What is in this picture?")
        .attach([media::png()])
        .await
        .expect_err("a text-only model cannot read an image");
    assert!(client.requests().is_empty(), "nothing was sent");
    let result = &error.result;
    assert_eq!(result.stop_reason, RunEnd::Error);
    let detail = result.stop_detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("the model `scripted-model` does not read an image (image/png)")
            && detail.contains("text only"),
        "{detail}"
    );
    // The user's message and its image are kept in the record.
    assert_eq!(result.messages[0].attachments(), [media::png()]);
}

#[tokio::test]
async fn an_attachment_the_catalog_allows_or_does_not_know_about_is_sent() {
    for inputs in [Some(vec![agent_core::MediaKind::Image]), None] {
        let client = ScriptedClient::new().respond(response::text("A tiny transparent square."));
        let agent = Agent::builder(Arc::new(client.clone()))
            .catalog(catalog(inputs))
            .build();
        let result = agent
            .run("What is in this picture?")
            .attach([media::png()])
            .await
            .expect("the model reads images");
        assert_eq!(result.stop_reason, RunEnd::Completed);
        let sent = &client.requests()[0];
        assert_eq!(sent.messages[0].attachments(), [media::png()]);
    }
}
