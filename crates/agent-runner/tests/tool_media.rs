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
