//! The routing call: the request that asks the model to choose a scene,
//! and the name read back from its reply.

use std::fmt::Write as _;
use std::sync::Arc;

use agent_core::{Attachment, ChatRequest, ChatResponse, Message, ToolChoice, ToolDefinition};
use agent_parse::{CallFormat, ToolCallParser};
use serde_json::{Value, json};

use super::Scene;

/// How many of the latest conversation messages (text only) the routing
/// call sees besides the new message: enough for a follow-up ("and in
/// Paris?") to go to the scene of the turn before.
pub(super) const ROUTING_HISTORY: usize = 8;

/// What the routing call sends besides the scenes and the conversation.
#[derive(Debug, Clone, Default)]
pub(super) struct RoutingSettings {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

/// The function name of a scene: letters, digits, `_` and `-` only, at most
/// 64 characters (what every provider accepts).
pub(super) fn function_name(scene: &str) -> String {
    let name: String = scene
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() { "scene".to_owned() } else { name }
}

/// The routing request. With native tools: one function per scene and
/// `tool_choice = required`. Without: the scenes listed in the system
/// prompt and the model asked to answer with a name.
pub(super) fn routing_request(
    scenes: &[Scene],
    history: &[Message],
    user_message: &str,
    attachments: &[Attachment],
    native: bool,
    settings: &RoutingSettings,
) -> ChatRequest {
    let mut messages = text_history(history);
    messages.push(Message::user(routing_text(user_message, attachments)));
    let (system, tools, tool_choice): (String, Arc<[ToolDefinition]>, ToolChoice) = if native {
        let tools = scenes
            .iter()
            .map(|scene| {
                ToolDefinition::new(
                    function_name(scene.name()),
                    scene.description(),
                    json!({"type": "object", "properties": {}}),
                )
            })
            .collect();
        let system = "You route each request to the scene best suited to handle it. Call exactly one \
                      function: the scene for the user's latest message."
            .to_owned();
        (system, tools, ToolChoice::Required)
    } else {
        let list: Vec<String> = scenes
            .iter()
            .map(|scene| format!("- {}: {}", scene.name(), scene.description()))
            .collect();
        let system = format!(
            "You route each request to the scene best suited to handle it. The scenes:\n{}\n\
             Reply with only the name of the scene for the user's latest message, nothing else.",
            list.join("\n")
        );
        (system, Arc::default(), ToolChoice::Auto)
    };
    ChatRequest {
        model: None,
        system: Some(system),
        messages,
        tools,
        tool_choice,
        parallel_tool_calls: None,
        max_tool_calls: None,
        max_tokens: settings.max_tokens,
        temperature: settings.temperature,
        stop: Vec::new(),
        response_format: None,
        prompt_caching: false,
    }
}

/// The conversation as the routing call sees it: user and system messages
/// and the assistant's text (tool calls and results are left out, as the
/// scene functions are the only tools of the call), the latest
/// [`ROUTING_HISTORY`] of them.
fn text_history(history: &[Message]) -> Vec<Message> {
    let texts: Vec<Message> = history
        .iter()
        .filter_map(|message| match message {
            Message::User { content, attachments } => Some(Message::user(routing_text(content, attachments))),
            Message::System { .. } => Some(message.clone()),
            Message::Assistant(assistant) if !assistant.content.trim().is_empty() => {
                Some(Message::assistant(assistant.content.clone()))
            }
            Message::Assistant(_) | Message::Tool(_) => None,
        })
        .collect();
    let skip = texts.len().saturating_sub(ROUTING_HISTORY);
    let mut kept: Vec<Message> = texts.into_iter().skip(skip).collect();
    // A conversation sent to a model starts with the user.
    while matches!(kept.first(), Some(Message::Assistant(_))) {
        kept.remove(0);
    }
    kept
}

/// A user message as the routing call reads it: its text, with each
/// attachment named rather than sent (the scene is chosen by words; the
/// scene's agent gets the media), so that "what is in this picture?" can
/// still go to the scene that reads images.
pub(super) fn routing_text(content: &str, attachments: &[Attachment]) -> String {
    let mut text = content.to_owned();
    for attachment in attachments {
        let name = attachment
            .name
            .as_deref()
            .map(|name| format!(" `{name}`"))
            .unwrap_or_default();
        let _ = write!(text, "\n[attached:{name} {}]", attachment.describe());
    }
    text
}

/// The scene name the reply asks for: its first function call, else a
/// call or a `{"scene": ...}` object written in its text, else its text
/// (trimmed of quotes and markup). `None` when the reply names nothing.
pub(super) fn requested_name(response: &ChatResponse) -> Option<String> {
    if let Some(call) = response.message.tool_calls.first() {
        return Some(call.name.clone());
    }
    let text = response.message.content.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text)
        && let Some(name) = ["scene", "name"]
            .iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str))
    {
        return Some(name.to_owned());
    }
    let parsed = ToolCallParser::new()
        .formats([CallFormat::Tagged, CallFormat::Json])
        .parse(text);
    if let Some(call) = parsed.calls.into_iter().next() {
        return Some(call.name);
    }
    let line = text.lines().find(|line| !line.trim().is_empty()).unwrap_or(text);
    let name = line
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '.' | ':' | '<' | '>'))
        .trim();
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use agent_core::{AssistantMessage, StopReason, ToolCall, ToolResult, Usage};

    use super::*;

    fn reply(message: AssistantMessage) -> ChatResponse {
        ChatResponse {
            message,
            stop_reason: StopReason::EndTurn,
            usage: Usage::new(1, 1),
            model: "m".into(),
            id: None,
            route: None,
        }
    }

    fn text(content: &str) -> Option<String> {
        requested_name(&reply(AssistantMessage::text(content)))
    }

    #[test]
    fn the_name_comes_from_a_call_or_from_the_text() {
        let call = AssistantMessage::with_tool_calls("", vec![ToolCall::new("1", "Weather", json!({}))]);
        assert_eq!(requested_name(&reply(call)).as_deref(), Some("Weather"));
        assert_eq!(text("Calculator").as_deref(), Some("Calculator"));
        assert_eq!(text("  `calculator`.\n").as_deref(), Some("calculator"));
        assert_eq!(text("**Weather**").as_deref(), Some("Weather"));
        assert_eq!(text(r#"{"scene": "Weather"}"#).as_deref(), Some("Weather"));
        assert_eq!(
            text(r#"<tool_call>{"name": "Calculator", "arguments": {}}</tool_call>"#).as_deref(),
            Some("Calculator")
        );
        assert_eq!(text("   "), None);
    }

    #[test]
    fn function_names_are_what_providers_accept() {
        assert_eq!(function_name("Currency Exchange"), "Currency_Exchange");
        assert_eq!(function_name("math-2"), "math-2");
        assert_eq!(function_name(""), "scene");
        assert_eq!(function_name(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn the_routing_history_keeps_recent_text_only() {
        let mut history = vec![Message::user("hello"), Message::assistant("hi")];
        history.push(Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("c", "t", json!({}))],
        )));
        history.push(Message::tool(ToolResult::success("c", "t", "ok")));
        history.push(Message::assistant("done"));
        let kept = text_history(&history);
        assert_eq!(
            kept,
            [
                Message::user("hello"),
                Message::assistant("hi"),
                Message::assistant("done")
            ]
        );
        let long: Vec<Message> = (0..20)
            .flat_map(|i| [Message::user(format!("q{i}")), Message::assistant(format!("a{i}"))])
            .collect();
        let kept = text_history(&long);
        assert_eq!(kept.first(), Some(&Message::user("q16")));
        assert_eq!(kept.len(), ROUTING_HISTORY);
    }
}
