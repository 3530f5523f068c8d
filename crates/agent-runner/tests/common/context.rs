//! Fixtures for the context-window tests: a client that answers summary
//! requests apart, long histories, and checks on what was sent.

use std::sync::{Arc, Mutex};

use agent_core::{
    AgentEvent, AgentRunResult, AssistantMessage, CancellationToken, Capabilities, ChatRequest, ChatResponse,
    CompactionRecord, EventStream, LlmClient, LlmError, Message, ToolCall, ToolChoice, ToolOutput, ToolResult, Usage,
};
use agent_prompts::builtin;
use agent_runner::AgentBuilder;
use agent_runner::context::estimate_tokens;
use agent_runner::history::is_sendable;
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::json;

/// The bytes of every `lookup` result.
pub const RESULT_BYTES: usize = 3000;

/// Sends summary requests (those without a system prompt: every chat
/// request here has one) to one scripted client and every other request to
/// another; keeps every request in order.
#[derive(Clone, Default)]
pub struct Router {
    /// Answers the chat requests.
    pub chat: ScriptedClient,
    /// Answers the summary requests.
    pub summaries: ScriptedClient,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl Router {
    /// A router over these two clients.
    pub fn new(chat: ScriptedClient, summaries: ScriptedClient) -> Self {
        Self {
            chat,
            summaries,
            requests: Arc::default(),
        }
    }

    fn route(&self, request: &ChatRequest) -> &ScriptedClient {
        self.requests.lock().expect("not poisoned").push(request.clone());
        if is_summary_request(request) {
            &self.summaries
        } else {
            &self.chat
        }
    }

    /// Every request, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

#[async_trait]
impl LlmClient for Router {
    fn provider(&self) -> &str {
        self.chat.provider()
    }

    fn model(&self) -> &str {
        self.chat.model()
    }

    fn capabilities(&self) -> Capabilities {
        self.chat.capabilities()
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        self.route(request).complete(request, cancel).await
    }

    async fn stream(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<EventStream, LlmError> {
        self.route(request).stream(request, cancel).await
    }
}

/// Whether `request` is a summary request.
pub fn is_summary_request(request: &ChatRequest) -> bool {
    request.system.is_none()
}

/// A `lookup` tool whose every result is [`RESULT_BYTES`] long.
pub fn lookup_tools() -> TestTools {
    TestTools::new("kb").with(TestTool::new(
        "lookup",
        ToolBehaviour::Reply(ToolOutput::Text("p".repeat(RESULT_BYTES))),
    ))
}

/// The test agent over `router`, with the `lookup` tool.
pub fn agent(router: &Router) -> AgentBuilder {
    agent_runner::Agent::builder(Arc::new(router.clone()))
        .name("tester")
        .system_prompt("You are a test agent.")
        .tools(super::registry(lookup_tools()))
}

/// `turns` turns of: a question, a `lookup` call, its result of
/// `result_bytes`, an answer.
pub fn history(turns: usize, result_bytes: usize) -> Vec<Message> {
    (1..=turns)
        .flat_map(|turn| {
            let id = format!("h{turn}");
            [
                Message::user(format!("Question {turn}: how many people live in city {turn}?")),
                Message::Assistant(AssistantMessage::with_tool_calls(
                    "",
                    vec![ToolCall::new(id.clone(), "lookup", json!({ "city": turn }))],
                )),
                Message::tool(ToolResult::success(id, "lookup", "d".repeat(result_bytes))),
                Message::assistant(format!("City {turn} has {} people.", turn * 1000)),
            ]
        })
        .collect()
}

/// A reply calling `lookup` for `city`.
pub fn lookup(id: &str, city: u32) -> ChatResponse {
    response::with_calls("", vec![ToolCall::new(id, "lookup", json!({ "city": city }))])
}

/// Summaries of `chars` characters, reported as `usage`.
pub fn summaries(count: usize, chars: usize, usage: Usage) -> ScriptedClient {
    (0..count).fold(ScriptedClient::new(), |client, _| {
        client.respond(response::with_usage(
            response::text(format!("The user asked about city populations.{}", ".".repeat(chars))),
            usage,
        ))
    })
}

/// The characters of a request, as the estimate counts them.
pub fn chars(request: &ChatRequest) -> usize {
    let messages: usize = request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } | Message::User { content, .. } => content.chars().count(),
            Message::Assistant(reply) => {
                reply.content.chars().count()
                    + reply
                        .tool_calls
                        .iter()
                        .map(|call| call.name.len() + call.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool(result) => result.content.chars().count(),
        })
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.input_schema.to_string().len())
        .sum();
    request.system.as_ref().map_or(0, String::len) + tools + messages
}

/// Asserts that `request` fits in `window` with its `max_tokens`, and that
/// every tool call in it has its result.
pub fn assert_fits(request: &ChatRequest, window: u64) {
    let max_tokens = u64::from(request.max_tokens.unwrap_or(0));
    assert!(
        estimate_tokens(request) + max_tokens <= window,
        "estimated at {} + {max_tokens} tokens",
        estimate_tokens(request)
    );
    assert_eq!(estimate_tokens(request), chars(request) as u64 / 4);
    assert!(is_sendable(&request.messages), "{:#?}", request.messages);
    let mut closed = request.messages.clone();
    assert_eq!(agent_store::close_tool_calls(&mut closed, "lost"), 0);
}

/// The parts of the summary template around `{{conversation}}`.
pub fn template_parts() -> (String, String) {
    let source = builtin::source(builtin::SUMMARISE_CONVERSATION).expect("a built-in");
    let (head, tail) = source.split_once("{{conversation}}").expect("a conversation variable");
    (head.to_owned(), tail.to_owned())
}

/// The written-out conversation of a summary request made from the template.
pub fn summarised_text(request: &ChatRequest) -> String {
    assert_eq!(request.system, None);
    assert!(request.tools.is_empty());
    assert_eq!(request.tool_choice, ToolChoice::None);
    let [Message::User { content, .. }] = request.messages.as_slice() else {
        panic!("one user message: {:?}", request.messages);
    };
    let (head, tail) = template_parts();
    let conversation = content
        .strip_prefix(head.as_str())
        .and_then(|rest| rest.strip_suffix(tail.as_str()));
    conversation
        .unwrap_or_else(|| panic!("not the template: {content}"))
        .to_owned()
}

/// The events of a streamed run, and its result.
pub async fn collect(stream: impl futures::Stream<Item = AgentEvent>) -> (Vec<AgentEvent>, AgentRunResult) {
    let events: Vec<AgentEvent> = stream.collect().await;
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("the stream ends with the result");
    };
    let result = (**result).clone();
    (events, result)
}

/// The event of a compaction.
pub fn compaction_event(record: &CompactionRecord) -> AgentEvent {
    AgentEvent::ContextCompacted {
        iteration: record.iteration,
        trigger: record.trigger,
        estimated_tokens_before: record.estimated_tokens_before,
        estimated_tokens_after: record.estimated_tokens_after,
        elided_results: record.elided_results,
        elided_bytes: record.elided_bytes,
        replaced_messages: record.replaced_messages,
        summary_calls: record.summary_calls,
        summary_usage: record.summary_usage,
    }
}
