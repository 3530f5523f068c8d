//! Fault injection, one table over the four HTTP providers: each fault of
//! [`FAULTS`] hits the second model call of a turn (after a tool call and
//! its result), from `agent_testing::faults::FaultServer`, with the
//! conversation kept in a SQLite session store. For every provider and
//! fault:
//!
//! - the turn ends completed (a retried fault) or with a typed model error,
//!   as the fault's row says;
//! - the store holds the turn's complete messages (the question, the tool
//!   call and its result), and its history is sendable: every tool call
//!   has its result;
//! - the next turn, on the same session, completes.
//!
//! `cargo test -p agentry-tests --test provider_faults -- --nocapture`
//! prints the table of outcomes.
#![allow(clippy::unwrap_used)]
#![allow(clippy::format_collect)]

use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentEvent, ConversationStore, LlmClient, LlmErrorKind, Message, RunEnd};
use agent_http::HttpConfig;
use agent_provider_anthropic::{AnthropicClient, AnthropicConfig};
use agent_provider_gemini::{GeminiClient, GeminiConfig};
use agent_provider_ollama::{OllamaClient, OllamaConfig};
use agent_provider_openai::{OpenAiClient, OpenAiConfig};
use agent_runner::{Agent, Session};
use agent_store_sqlite::SqliteStore;
use agent_testing::faults::{Answer, FaultServer};
use agentry_tests::weather_tools;
use futures::StreamExt;

/// How a provider writes its replies and errors.
struct Dialect {
    name: &'static str,
    /// The content type of its streamed replies.
    stream_type: &'static str,
    /// A streamed reply calling `get_weather` for Paris.
    tool_call: fn() -> String,
    /// A streamed reply with this final text.
    answer: fn(&str) -> String,
    /// A streamed reply that is valid JSON of the wrong shape.
    wrong_shape: &'static str,
    /// A whole (not streamed) reply calling `get_weather` for Paris.
    whole_tool_call: &'static str,
    /// A whole reply with this final text.
    whole_answer: fn(&str) -> String,
    /// A whole reply that is valid JSON of the wrong shape.
    whole_wrong_shape: &'static str,
    /// The body of an error with this status and message.
    error: fn(u16, &str) -> String,
    /// Whether the API answers 529 when overloaded (Anthropic).
    overloaded_529: bool,
    /// A client of this provider for `base` (the fault server's root).
    client: fn(&str, HttpConfig) -> Arc<dyn LlmClient>,
}

fn sse(events: &[String]) -> String {
    events.iter().map(|event| format!("data: {event}\n\n")).collect()
}

const OPENAI: Dialect = Dialect {
    name: "openai",
    stream_type: "text/event-stream",
    tool_call: || {
        sse(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#.into(),
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}"#.into(),
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}"#.into(),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.into(),
            "[DONE]".into(),
        ])
    },
    answer: |text| {
        sse(&[
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"role":"assistant","content":{}}}}}]}}"#,
                serde_json::json!(text)
            ),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.into(),
            "[DONE]".into(),
        ])
    },
    wrong_shape: "data: {\"choices\":\"none\",\"data\":[1,2,3]}\n\ndata: [DONE]\n\n",
    error: |status, message| {
        serde_json::json!({"error": {"message": message, "type": if status == 429 {"rate_limit_exceeded"} else {"server_error"}, "code": null}}).to_string()
    },
    whole_tool_call: r#"{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}"#,
    whole_answer: |text| {
        serde_json::json!({"id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49}})
        .to_string()
    },
    whole_wrong_shape: r#"{"choices":"none","data":[1,2,3]}"#,
    overloaded_529: false,
    client: |base, http| {
        let mut config = OpenAiConfig::openai("gpt-4o-mini").with_api_key("sk-fault-test");
        config.base_url = Some(format!("{base}/v1"));
        config.http = http;
        Arc::new(OpenAiClient::new(config).unwrap())
    },
};

const ANTHROPIC: Dialect = Dialect {
    name: "anthropic",
    stream_type: "text/event-stream",
    tool_call: || {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect()
    },
    answer: |text| {
        let text = serde_json::json!(text);
        [
            ("message_start", r#"{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":40,"output_tokens":1}}}"#.to_owned()),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.to_owned()),
            ("content_block_delta", format!(r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{text}}}}}"#)),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.to_owned()),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#.to_owned()),
            ("message_stop", r#"{"type":"message_stop"}"#.to_owned()),
        ]
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
    },
    wrong_shape: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":[1,2]}\n\n",
    error: |status, message| {
        let kind = match status {
            429 => "rate_limit_error",
            529 => "overloaded_error",
            _ => "api_error",
        };
        serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
    },
    whole_tool_call: r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}],"stop_reason":"tool_use","usage":{"input_tokens":20,"output_tokens":5}}"#,
    whole_answer: |text| {
        serde_json::json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 40, "output_tokens": 9}})
        .to_string()
    },
    whole_wrong_shape: r#"{"type":"message","content":"text","usage":[]}"#,
    overloaded_529: true,
    client: |base, http| {
        let mut config = AnthropicConfig::new("claude-sonnet-4-5").with_api_key("sk-ant-fault-test");
        config.base_url = format!("{base}/");
        config.http = http;
        Arc::new(AnthropicClient::new(config).unwrap())
    },
};

const GEMINI: Dialect = Dialect {
    name: "gemini",
    stream_type: "text/event-stream",
    tool_call: || {
        sse(&[r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":5}}"#.into()])
    },
    answer: |text| {
        sse(&[format!(
            r#"{{"candidates":[{{"content":{{"role":"model","parts":[{{"text":{}}}]}},"finishReason":"STOP"}}],"usageMetadata":{{"promptTokenCount":40,"candidatesTokenCount":9}}}}"#,
            serde_json::json!(text)
        )])
    },
    wrong_shape: "data: {\"candidates\":{\"content\":7}}\n\n",
    error: |status, message| {
        let code = match status {
            429 => "RESOURCE_EXHAUSTED",
            503 => "UNAVAILABLE",
            _ => "INTERNAL",
        };
        serde_json::json!({"error": {"code": status, "message": message, "status": code}}).to_string()
    },
    whole_tool_call: r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":5}}"#,
    whole_answer: |text| {
        serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 9}})
        .to_string()
    },
    whole_wrong_shape: r#"{"candidates":{"content":7}}"#,
    overloaded_529: false,
    client: |base, http| {
        let mut config = GeminiConfig::new("gemini-2.5-flash")
            .with_api_key("AIza-fault-test")
            .with_base_url(base);
        config.http = http;
        Arc::new(GeminiClient::new(config).unwrap())
    },
};

const OLLAMA: Dialect = Dialect {
    name: "ollama",
    stream_type: "application/x-ndjson",
    tool_call: || {
        concat!(
            r#"{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":false}"#,
            "\n",
            r#"{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":20,"eval_count":5}"#,
            "\n"
        )
        .to_owned()
    },
    answer: |text| {
        format!(
            "{}\n{}\n",
            serde_json::json!({"model": "llama3.2", "message": {"role": "assistant", "content": text}, "done": false}),
            r#"{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":9}"#
        )
    },
    wrong_shape: "{\"model\":[1],\"message\":\"text\",\"done\":\"yes\"}\n",
    error: |_, message| serde_json::json!({"error": message}).to_string(),
    whole_tool_call: r#"{"model":"llama3.2","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},"done":true,"done_reason":"stop","prompt_eval_count":20,"eval_count":5}"#,
    whole_answer: |text| {
        serde_json::json!({"model": "llama3.2", "message": {"role": "assistant", "content": text}, "done": true,
            "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 9})
        .to_string()
    },
    whole_wrong_shape: r#"{"model":[1],"message":"text","done":"yes"}"#,
    overloaded_529: false,
    client: |base, http| {
        let mut config = OllamaConfig::new("llama3.2").with_base_url(base);
        config.http = http;
        Arc::new(OllamaClient::new(config).unwrap())
    },
};

/// How the agent asks for replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `agent.run(..).await`: whole replies.
    Whole,
    /// `agent.run(..).stream()`: streamed replies.
    Streamed,
}

/// A provider's replies in one mode.
struct Bodies {
    content_type: &'static str,
    tool_call: String,
    answer: fn(&str) -> String,
    wrong_shape: String,
}

impl Dialect {
    fn bodies(&self, mode: Mode) -> Bodies {
        match mode {
            Mode::Whole => Bodies {
                content_type: "application/json",
                tool_call: self.whole_tool_call.to_owned(),
                answer: self.whole_answer,
                wrong_shape: self.whole_wrong_shape.to_owned(),
            },
            Mode::Streamed => Bodies {
                content_type: self.stream_type,
                tool_call: (self.tool_call)(),
                answer: self.answer,
                wrong_shape: self.wrong_shape.to_owned(),
            },
        }
    }
}

/// How a turn hit by a fault must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Retried, then completed.
    Completes,
    /// Ended with a model error of one of these kinds.
    Fails(&'static [LlmErrorKind]),
}

/// A fault: its name, the answer it sends in place of the turn's final
/// reply, and how the turn ends. A failing fault is answered to every
/// attempt of the call (the first and each retry).
struct Fault {
    name: &'static str,
    answer: fn(&Dialect, &Bodies) -> Answer,
    expect: Expect,
}

const BROKEN: &[LlmErrorKind] = &[LlmErrorKind::Transport, LlmErrorKind::Decode, LlmErrorKind::Timeout];

/// Retries after the first attempt, in every client of the table.
const RETRIES: u32 = 1;

/// The bytes of a tool-call reply that end inside the call.
fn cut_in_call(bodies: &Bodies) -> Vec<u8> {
    let at = bodies.tool_call.find("Paris").unwrap_or(bodies.tool_call.len() / 2);
    bodies.tool_call.as_bytes()[..at].to_vec()
}

const FAULTS: &[Fault] = &[
    Fault {
        name: "reset before the headers",
        answer: |_, _| Answer::ResetBeforeHeaders,
        // The request may have reached the model: not sent twice (billed twice).
        expect: Expect::Fails(&[LlmErrorKind::Transport]),
    },
    Fault {
        name: "reset in the middle of the body",
        answer: |_, b| Answer::ResetAfter {
            content_type: b.content_type.to_owned(),
            sent: cut_in_call(b),
        },
        expect: Expect::Fails(BROKEN),
    },
    Fault {
        name: "body stops inside a tool call",
        answer: |_, b| Answer::EndAfter {
            content_type: b.content_type.to_owned(),
            sent: cut_in_call(b),
        },
        expect: Expect::Fails(BROKEN),
    },
    Fault {
        name: "429 with Retry-After",
        answer: |d, _| Answer::json(429, (d.error)(429, "Rate limit reached")).with_header("retry-after", "1"),
        expect: Expect::Completes,
    },
    Fault {
        name: "429 without Retry-After",
        answer: |d, _| Answer::json(429, (d.error)(429, "Rate limit reached")),
        expect: Expect::Completes,
    },
    Fault {
        name: "500",
        answer: |d, _| Answer::json(500, (d.error)(500, "Internal error")),
        expect: Expect::Completes,
    },
    Fault {
        name: "503",
        answer: |d, _| Answer::json(503, (d.error)(503, "Service unavailable")),
        expect: Expect::Completes,
    },
    Fault {
        name: "529 (Anthropic overloaded)",
        answer: |d, _| Answer::json(529, (d.error)(529, "Overloaded")),
        expect: Expect::Completes,
    },
    Fault {
        name: "slow drip, a byte every 100 ms",
        answer: |_, b| Answer::Drip {
            content_type: b.content_type.to_owned(),
            body: (b.answer)("Too slow to arrive.").into_bytes(),
            every: Duration::from_millis(100),
        },
        expect: Expect::Fails(&[LlmErrorKind::Timeout]),
    },
    Fault {
        name: "body larger than the cap",
        answer: |_, b| Answer::reply(200, b.content_type, (b.answer)(&"many words ".repeat(4000))),
        expect: Expect::Fails(&[LlmErrorKind::Decode]),
    },
    Fault {
        name: "invalid UTF-8",
        answer: |_, b| {
            let mut body = (b.answer)("caf\u{e9}").into_bytes();
            if let Some(at) = body.windows(2).position(|pair| pair == "\u{e9}".as_bytes()) {
                body[at] = 0xff;
            }
            Answer::reply(200, b.content_type, body)
        },
        expect: Expect::Fails(&[LlmErrorKind::Decode]),
    },
    Fault {
        name: "valid JSON of the wrong shape",
        answer: |_, b| Answer::reply(200, b.content_type, b.wrong_shape.clone()),
        expect: Expect::Fails(&[LlmErrorKind::Decode]),
    },
];

/// Short timeouts and backoff, so that every fault ends within seconds.
fn http() -> HttpConfig {
    HttpConfig {
        max_retries: RETRIES,
        initial_backoff_ms: 10,
        max_backoff_ms: 50,
        timeout_secs: 1.5,
        read_timeout_secs: 1.0,
        stream_timeout_secs: 1.0,
        max_response_bytes: 16 * 1024,
        max_stream_bytes: 16 * 1024,
        ..HttpConfig::default()
    }
}

/// Every tool call of `messages` has its result after it.
fn sendable(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(at, message)| match message {
        Message::Assistant(reply) => reply.tool_calls.iter().all(|call| {
            messages[at + 1..]
                .iter()
                .any(|later| matches!(later, Message::Tool(result) if result.call_id == call.id))
        }),
        _ => true,
    })
}

/// How a turn ended: its answer, or its error's kind (known when the run
/// was awaited; a streamed run reports the error as text) and message.
type Ended = Result<String, (Option<LlmErrorKind>, String)>;

async fn turn(agent: &Agent, session: Session, prompt: &str, mode: Mode) -> Ended {
    match mode {
        Mode::Whole => match agent.run(prompt).session(session).await {
            Ok(result) => Ok(result.response),
            Err(error) => {
                assert!(error.store_error.is_none(), "the turn was not stored: {error}");
                Err((error.source_error.as_ref().map(|source| source.kind), error.to_string()))
            }
        },
        Mode::Streamed => {
            let events: Vec<AgentEvent> = agent.run(prompt).session(session).stream().collect().await;
            let Some(AgentEvent::RunFinished { result }) = events.last() else {
                panic!("a streamed run did not end with RunFinished: {events:?}");
            };
            match result.stop_reason {
                RunEnd::Completed => Ok(result.response.clone()),
                _ => Err((None, result.stop_detail.clone().unwrap_or_default())),
            }
        }
    }
}

/// Runs every fault against `dialect` in both modes; returns the rows.
async fn run_faults(dialect: &Dialect) -> Vec<String> {
    let mut rows = Vec::new();
    for mode in [Mode::Whole, Mode::Streamed] {
        for fault in FAULTS {
            if fault.name.starts_with("529") && !dialect.overloaded_529 {
                continue;
            }
            let row = run_fault(dialect, fault, mode).await;
            rows.push(format!("| {} | {mode:?} | {} | {row} |", dialect.name, fault.name));
        }
    }
    rows
}

async fn run_fault(dialect: &Dialect, fault: &Fault, mode: Mode) -> String {
    let case = format!("{} / {mode:?} / {}", dialect.name, fault.name);
    let bodies = dialect.bodies(mode);
    let reply = |body: String| Answer::reply(200, bodies.content_type, body);
    let mut script = vec![reply(bodies.tool_call.clone())];
    match fault.expect {
        Expect::Completes => {
            script.push((fault.answer)(dialect, &bodies));
            script.push(reply((bodies.answer)("It is 18 °C in Paris.")));
        }
        Expect::Fails(_) => script.extend((0..=RETRIES).map(|_| (fault.answer)(dialect, &bodies))),
    }
    let server = FaultServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ConversationStore> = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let (tools, _) = weather_tools();
    let agent = Agent::builder((dialect.client)(&server.url(""), http()))
        .system_prompt("You are a travel assistant.")
        .tools(tools)
        .build();
    let session = || Session::new(Arc::clone(&store), "trip");

    let first = turn(&agent, session(), "What's the weather in Paris?", mode).await;
    let attempts = server.requests().len() - 1;
    let outcome = match (&first, fault.expect) {
        (Ok(response), Expect::Completes) => {
            assert_eq!(response, "It is 18 °C in Paris.", "{case}");
            format!("completed after {attempts} attempts")
        }
        (Err((kind, message)), Expect::Fails(kinds)) => {
            if mode == Mode::Whole {
                assert!(
                    kind.is_some_and(|kind| kinds.contains(&kind)),
                    "{case}: ended with {kind:?} ({message}), want one of {kinds:?}"
                );
            }
            assert!(
                message.contains(dialect.name),
                "{case}: the error does not name the provider: {message}"
            );
            let kind = kind.map_or_else(|| "error".to_owned(), |kind| format!("{kind:?}"));
            format!(
                "{kind} after {attempts} attempt(s): {}",
                message.chars().take(110).collect::<String>()
            )
        }
        (outcome, expect) => panic!("{case}: want {expect:?}, got {outcome:?}"),
    };

    // The store holds the turn's complete messages, and they can be sent.
    let stored = store.load("trip").await.unwrap().unwrap().messages;
    assert!(
        matches!(stored.first(), Some(Message::User { content, .. }) if content == "What's the weather in Paris?"),
        "{case}: the question is not stored first: {stored:?}"
    );
    let calls: Vec<&str> = stored
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(reply) => Some(reply.tool_calls.iter().map(|call| call.name.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        calls,
        ["get_weather"],
        "{case}: the tool call is not stored: {stored:?}"
    );
    assert!(
        stored
            .iter()
            .any(|message| matches!(message, Message::Tool(result) if result.content.contains("cloudy"))),
        "{case}: the tool result is not stored: {stored:?}"
    );
    assert!(
        sendable(&stored),
        "{case}: the stored history is not sendable: {stored:?}"
    );

    // The next turn, on the same session, completes.
    server.clear();
    server.then([reply((bodies.answer)("You are welcome."))]);
    match turn(&agent, session(), "Thanks!", mode).await {
        Ok(response) => assert_eq!(response, "You are welcome.", "{case}"),
        Err(error) => panic!("{case}: the next turn failed: {error:?}"),
    }
    let stored = store.load("trip").await.unwrap().unwrap().messages;
    assert!(
        sendable(&stored),
        "{case}: the history after the next turn is not sendable: {stored:?}"
    );
    assert!(
        matches!(stored.last(), Some(Message::Assistant(reply)) if reply.content == "You are welcome."),
        "{case}: the next turn is not stored: {stored:?}"
    );
    outcome
}

async fn table(dialect: &Dialect) {
    let rows = run_faults(dialect).await;
    println!(
        "| provider | mode | fault | outcome |\n|---|---|---|---|\n{}",
        rows.join("\n")
    );
}

#[tokio::test]
async fn openai_survives_every_fault() {
    table(&OPENAI).await;
}

#[tokio::test]
async fn anthropic_survives_every_fault() {
    table(&ANTHROPIC).await;
}

#[tokio::test]
async fn gemini_survives_every_fault() {
    table(&GEMINI).await;
}

#[tokio::test]
async fn ollama_survives_every_fault() {
    table(&OLLAMA).await;
}
