//! Shared by the integration tests: the recorded Gemini exchanges in
//! ../shared/wire/gemini (read in place, never copied; each test that reads
//! them gets them from `agent_testing::require_wire!("gemini")`), SSE bodies
//! rebuilt from them, and the canonical conversations.
//!
//! The js-genai recordings keep each streamed SSE event as one parsed JSON
//! object in `bodySegments`; the raw framing is not recorded. The tests
//! rebuild it as Google sends it, `data: <json>\r\n\r\n` per event, so the
//! real SSE decoder and the `StreamMapper` run over a realistic body.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

use agent_core::{
    AssistantMessage, ChatRequest, ChatResponse, LlmError, Message, ReasoningBlock, StreamAccumulator, StreamEvent,
    ToolCall, ToolResult,
};
use agent_provider_gemini::BodyOptions;
use agent_provider_gemini::mapper::{EventMapper, StreamMapper, build_request_json};
use agent_testing::wire::Wire;
use serde_json::{Value, json};

pub use agent_testing::wire::stem;

/// One recorded HTTP exchange of a js-genai recording.
#[derive(Debug, Clone)]
pub struct Interaction {
    /// `{file stem without "js-genai_"}_{n}`: the snapshot name part.
    pub name: String,
    pub url: String,
    pub request: Value,
    pub status: u16,
    pub segments: Vec<Value>,
}

impl Interaction {
    pub fn is_stream(&self) -> bool {
        self.url.contains(":streamGenerateContent")
    }

    /// The non-streamed response body.
    pub fn body(&self) -> Vec<u8> {
        assert_eq!(self.segments.len(), 1, "{}: one body segment", self.name);
        serde_json::to_vec(&self.segments[0]).unwrap()
    }

    /// The streamed response, its SSE framing rebuilt (see the module docs).
    pub fn sse(&self) -> Vec<u8> {
        sse_from(&self.segments)
    }
}

/// `data: <json>\r\n\r\n` per event.
pub fn sse_from(segments: &[Value]) -> Vec<u8> {
    let mut body = String::new();
    for segment in segments {
        body.push_str("data: ");
        body.push_str(&serde_json::to_string(segment).unwrap());
        body.push_str("\r\n\r\n");
    }
    body.into_bytes()
}

/// Every interaction of every js-genai recording in `gemini` (the Gemini
/// wire examples), in file order.
pub fn interactions(gemini: &Wire) -> Vec<Interaction> {
    let mut all = Vec::new();
    for path in gemini.files("sdk_recorded", ".json") {
        let stem = stem(&path, ".json");
        let short = stem.strip_prefix("js-genai_").unwrap_or(&stem).to_owned();
        let recording: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for (n, interaction) in recording["interactions"].as_array().unwrap().iter().enumerate() {
            all.push(Interaction {
                name: format!("{short}_{n}"),
                url: interaction["request"]["url"].as_str().unwrap().to_owned(),
                request: interaction["request"]["bodySegments"][0].clone(),
                status: u16::try_from(interaction["response"]["statusCode"].as_u64().unwrap()).unwrap(),
                segments: interaction["response"]["bodySegments"].as_array().unwrap().clone(),
            });
        }
    }
    all
}

/// The interaction called `name` (see [`Interaction::name`]).
pub fn interaction(gemini: &Wire, name: &str) -> Interaction {
    interactions(gemini)
        .into_iter()
        .find(|interaction| interaction.name == name)
        .unwrap_or_else(|| panic!("no recorded interaction {name}"))
}

/// Decodes a whole SSE body, fed in the given pieces, through the SSE
/// framing and the [`StreamMapper`].
pub fn decode_sse(pieces: &[&[u8]]) -> Result<Vec<StreamEvent>, LlmError> {
    let (events, error) = decode_sse_partial(pieces);
    match error {
        Some(error) => Err(error),
        None => Ok(events),
    }
}

/// Like [`decode_sse`], but keeps the events mapped before an error.
pub fn decode_sse_partial(pieces: &[&[u8]]) -> (Vec<StreamEvent>, Option<LlmError>) {
    let mut decoder = agent_http::sse::SseDecoder::new();
    let mut mapper = StreamMapper::new();
    let mut frames = Vec::new();
    let mut events = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut frames);
        for frame in frames.drain(..) {
            if let Err(error) = mapper.push(&frame.data, &mut events) {
                return (events, Some(error));
            }
        }
    }
    decoder.finish(&mut frames);
    for frame in frames.drain(..) {
        if let Err(error) = mapper.push(&frame.data, &mut events) {
            return (events, Some(error));
        }
    }
    match mapper.finish(&mut events) {
        Ok(()) => (events, None),
        Err(error) => (events, Some(error)),
    }
}

/// Assembles events into a response.
pub fn assemble(events: &[StreamEvent]) -> Result<ChatResponse, LlmError> {
    let mut accumulator = StreamAccumulator::new();
    for event in events {
        accumulator.push(event.clone())?;
    }
    accumulator.finish()
}

pub use agent_testing::canonical::{multi_turn_request, parallel_calls_request, weather_tool};

/// The shared canonical conversations with the options Gemini sends them
/// with, plus Gemini-only variants: snapshot name, request, options.
pub fn canonical_requests() -> Vec<(&'static str, ChatRequest, BodyOptions)> {
    let options = BodyOptions::new("gemini-2.5-flash");
    let mut requests: Vec<(&'static str, ChatRequest, BodyOptions)> = agent_testing::canonical::conversations()
        .into_iter()
        .map(|(name, request)| (name, request, options.clone()))
        .collect();
    requests.push((
        "thinking_options",
        ChatRequest {
            max_tokens: Some(2048),
            ..ChatRequest::new(vec![Message::user("Prove that there are infinitely many primes.")])
        },
        BodyOptions {
            thinking_budget: Some(1024),
            include_thoughts: Some(true),
            ..BodyOptions::new("gemini-2.5-pro")
        },
    ));
    requests.push((
        "history_from_another_provider",
        history_from_another_provider(),
        BodyOptions::new("gemini-3-pro-preview"),
    ));
    requests
}

/// A tool round of another provider (its own signed thinking, parallel
/// calls with its ids) continued on Gemini 3: the calls carry no Gemini
/// signature, so the first goes out with the placeholder.
pub fn history_from_another_provider() -> ChatRequest {
    let turn = AssistantMessage {
        reasoning: vec![ReasoningBlock {
            text: "Look up both cities.".into(),
            signature: Some("EqQBCkYIBxgCKkB...".into()),
            data: None,
            provider: Some("anthropic".into()),
        }],
        ..AssistantMessage::with_tool_calls(
            "Checking both cities.",
            vec![
                ToolCall::new("toolu_01", "get_weather", json!({"city": "Paris"})),
                ToolCall::new("toolu_02", "get_weather", json!({"city": "Tokyo"})),
            ],
        )
    };
    ChatRequest::new(vec![
        Message::user("Weather in Paris and Tokyo?"),
        Message::Assistant(turn),
        Message::tool(ToolResult::success("toolu_01", "get_weather", r#"{"temp_c":18}"#)),
        Message::tool(ToolResult::success("toolu_02", "get_weather", r#"{"temp_c":24}"#)),
    ])
    .with_tools(vec![weather_tool()])
}

/// The body as JSON (keys in wire order).
pub fn body_json(request: &ChatRequest, options: &BodyOptions) -> Value {
    build_request_json(request, options).unwrap()
}
