use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{ModelCatalog, ModelInfo, Pricing, Usage};
use agent_runner::Agent;
use agent_testing::{ScriptedClient, response};
use agent_tools::ToolBox;
use serde_json::json;

use super::*;
use crate::{NoInterrupts, PlainLines, SharedBuffer};
use futures::future::BoxFuture;

struct Script(VecDeque<Input>);

impl Script {
    fn lines(lines: &[&str]) -> Self {
        Self(lines.iter().map(|line| Input::Line((*line).to_owned())).collect())
    }
}

impl LineReader for Script {
    fn read_line(&mut self, _prompt: &str) -> io::Result<Input> {
        Ok(self.0.pop_front().unwrap_or(Input::Eof))
    }
}

/// Fires once, `after` the first wait starts; never again.
struct InterruptOnce {
    after: Duration,
    calls: AtomicUsize,
}

impl Interrupts for InterruptOnce {
    fn next(&self) -> BoxFuture<'static, ()> {
        let after = self.after;
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Box::pin(tokio::time::sleep(after))
        } else {
            Box::pin(std::future::pending())
        }
    }
}

fn agent(client: ScriptedClient) -> Agent {
    Agent::builder(Arc::new(client.with_model("gpt-4o-mini")))
        .tools_from(Arc::new(agent_tools_math::tool_set()))
        .catalog(Arc::new(catalog()))
        .build()
}

/// `gpt-4o-mini` at its price of 2026 (US dollars per million tokens).
fn catalog() -> ModelCatalog {
    let mut catalog = ModelCatalog::new();
    let pricing = Pricing {
        input_per_million: 0.15,
        output_per_million: 0.6,
        cached_input_per_million: Some(0.075),
        cache_write_per_million: None,
    };
    catalog.insert(
        "gpt-4o-mini",
        ModelInfo {
            provider: "openai".to_owned(),
            context_window: Some(128_000),
            pricing,
            inputs: None,
        },
    );
    catalog
}

struct CountSaves(usize);

#[test]
fn plain_lines_prompt_then_read_each_line_until_the_end() {
    let mut out = Vec::new();
    let mut reader = PlainLines::new(&b"hello\r\n/exit\n"[..], &mut out);
    assert_eq!(reader.read_line("you> ").ok(), Some(Input::Line("hello".to_owned())));
    assert_eq!(reader.read_line("you> ").ok(), Some(Input::Line("/exit".to_owned())));
    assert_eq!(reader.read_line("you> ").ok(), Some(Input::Eof));
    assert_eq!(out, b"you> you> you> ");
}

#[async_trait::async_trait]
impl ChatSink for CountSaves {
    async fn turn_finished(&mut self, _: &[Message], _: &AgentRunResult) -> Result<(), SinkError> {
        self.0 += 1;
        Ok(())
    }

    async fn reset(&mut self) -> Result<(), SinkError> {
        self.0 += 1;
        Ok(())
    }
}

async fn chat(
    agent: &Agent,
    reader: &mut dyn LineReader,
    interrupts: &dyn Interrupts,
) -> (String, ChatSession, ChatEnd, usize) {
    let buffer = SharedBuffer::new();
    let mut console = Console::new(buffer.clone());
    let mut conversation = ChatSession::default();
    let mut saves = CountSaves(0);
    let end = run_chat(agent, reader, &mut console, interrupts, &mut conversation, &mut saves)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (buffer.contents(), conversation, end, saves.0)
}

#[test]
fn slash_commands_parse_forgivingly() {
    assert_eq!(parse_command("/help"), Some(Command::Help));
    assert_eq!(parse_command("  /EXIT "), Some(Command::Exit));
    assert_eq!(parse_command("/quit now"), Some(Command::Exit));
    assert_eq!(parse_command("/cost"), Some(Command::Cost));
    assert_eq!(parse_command("/reset"), Some(Command::Reset));
    assert_eq!(parse_command("/tools"), Some(Command::Tools));
    assert_eq!(
        parse_command("/frobnicate"),
        Some(Command::Unknown("/frobnicate".into()))
    );
    assert_eq!(
        parse_command("/attach  my photo.png "),
        Some(Command::Attach("my photo.png".into()))
    );
    assert_eq!(
        parse_command("/attach \"my photo.png\""),
        Some(Command::Attach("my photo.png".into()))
    );
    assert_eq!(parse_command("/ attach a.png"), Some(Command::Attach("a.png".into())));
    assert_eq!(parse_command("/attach"), Some(Command::Attach(String::new())));
    assert_eq!(parse_command("/detach"), Some(Command::Detach));
    assert_eq!(parse_command("what is 2/3?"), None);
}

#[tokio::test]
async fn turns_keep_history_and_commands_report_tools_cost_and_reset() {
    let client = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("calculator", json!({"expression": "6*7"}))]),
            Usage::new(1_000, 10),
        ))
        .respond(response::with_usage(response::text("42."), Usage::new(1_100, 5)))
        .respond(response::with_usage(
            response::text("You asked 6*7."),
            Usage::new(1_200, 6),
        ));
    let agent = agent(client);
    let mut reader = Script::lines(&[
        "What is 6*7?",
        "/tools",
        "/cost",
        "What did I ask?",
        "/help",
        "/nope",
        "/reset",
        "/cost",
        "/exit",
    ]);
    let (out, conversation, end, saves) = chat(&agent, &mut reader, &NoInterrupts).await;
    assert_eq!(end, ChatEnd::Exit);
    assert!(out.contains("  → calculator {\"expression\":\"6*7\"}"), "{out}");
    assert!(out.contains("  ✓ calculator →"), "{out}");
    assert!(out.contains("42."), "{out}");
    assert!(out.contains("  calculator — "), "{out}");
    assert!(
        out.contains("1 run · 2100 tokens in (0 from cache) · 15 out · 2115 total"),
        "{out}"
    );
    assert!(out.contains("You asked 6*7."), "{out}");
    assert!(out.contains("/tools  the tools the assistant can use"), "{out}");
    assert!(out.contains("unknown command /nope"), "{out}");
    assert!(out.contains("(conversation cleared)"), "{out}");
    assert!(out.contains("0 runs · 0 tokens in"), "{out}");
    assert_eq!(conversation, ChatSession::default());
    // Two turns and one reset were saved.
    assert_eq!(saves, 3);
}

#[tokio::test]
async fn a_call_that_needs_approval_is_asked_about_and_runs_only_on_yes() {
    for (answer, ran) in [("y", true), ("n", false)] {
        let client = ScriptedClient::new()
            .respond(response::tool_calls([("calculator", json!({"expression": "6*7"}))]))
            .respond(response::text("Done."));
        let client = Arc::new(client.with_model("m"));
        let registry = ToolBox::builder()
            .provider(Arc::new(agent_tools_math::tool_set()))
            .require_approval(["calculator"])
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let agent = Agent::builder(client.clone()).tools(Arc::new(registry)).build();
        let mut reader = Script::lines(&["What is 6*7?", answer]);
        let (out, conversation, end, _) = chat(&agent, &mut reader, &NoInterrupts).await;
        assert_eq!(end, ChatEnd::Exit);
        assert!(
            out.contains("? calculator {\"expression\":\"6*7\"} needs your approval"),
            "{out}"
        );
        assert!(out.contains("Done."), "{out}");
        let result = conversation
            .messages
            .iter()
            .find_map(|message| match message {
                Message::Tool(result) => Some(result.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no tool result in {:?}", conversation.messages));
        if ran {
            assert!(out.contains("(approved)"), "{out}");
            assert!(!result.is_error && result.content.contains("42"), "{result:?}");
        } else {
            assert!(out.contains("(denied)"), "{out}");
            assert!(
                result.is_error && result.content.contains("did not approve"),
                "{result:?}"
            );
        }
    }
}

#[tokio::test]
async fn the_second_turn_sees_the_first() {
    let client = ScriptedClient::new()
        .respond(response::text("Hello Ada."))
        .respond(response::text("Your name is Ada."));
    let client = Arc::new(client.with_model("m"));
    let agent = Agent::builder(client.clone()).build();
    let mut reader = Script::lines(&["I am Ada", "Who am I?"]);
    let (_, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
    let requests = client.requests();
    assert_eq!(requests[1].messages.len(), 3, "{:?}", requests[1].messages);
    assert_eq!(conversation.messages.len(), 4);
}

#[tokio::test]
async fn ctrl_c_cancels_the_turn_and_keeps_the_session() {
    let client = ScriptedClient::new()
        .respond_after(Duration::from_secs(30), response::text("too late"))
        .respond(response::text("Still here."));
    let agent = agent(client);
    let mut reader = Script::lines(&["slow question", "are you there?"]);
    let interrupts = InterruptOnce {
        after: Duration::from_millis(50),
        calls: AtomicUsize::new(0),
    };
    let started = std::time::Instant::now();
    let (out, conversation, end, _) = chat(&agent, &mut reader, &interrupts).await;
    assert!(started.elapsed() < Duration::from_secs(10), "the cancel was not prompt");
    assert_eq!(end, ChatEnd::Exit);
    assert!(out.contains("(cancelling; Ctrl-C again to leave)"), "{out}");
    assert!(out.contains("[stop: cancelled"), "{out}");
    assert!(out.contains("Still here."), "{out}");
    assert_eq!(conversation.runs, 2);
    assert!(
        conversation
            .messages
            .iter()
            .any(|m| m == &Message::user("slow question")),
        "the cancelled turn is kept"
    );
}

#[tokio::test]
async fn ctrl_c_twice_at_the_prompt_leaves() {
    let agent = agent(ScriptedClient::new());
    let mut reader = Script(VecDeque::from([Input::Interrupted, Input::Interrupted]));
    let (out, _, end, _) = chat(&agent, &mut reader, &NoInterrupts).await;
    assert_eq!(end, ChatEnd::Interrupted);
    assert!(out.contains("Ctrl-C again or Ctrl-D to leave"), "{out}");
}

#[tokio::test]
async fn a_failed_turn_leaves_the_conversation_unchanged() {
    let client = ScriptedClient::new()
        .fail(agent_core::LlmError::auth("set OPENAI_API_KEY"))
        .respond(response::text("ok"));
    let agent = agent(client);
    let mut reader = Script::lines(&["first", "second"]);
    let (out, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
    assert!(out.contains("[stop: error"), "{out}");
    assert!(out.contains("OPENAI_API_KEY"), "{out}");
    assert_eq!(conversation.messages.first(), Some(&Message::user("second")));
}

#[tokio::test]
async fn attached_files_go_with_the_next_message_only_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let png = dir.path().join("dot.png");
    std::fs::write(&png, agent_testing::media::PNG).unwrap_or_else(|e| panic!("{e}"));
    let lying = dir.path().join("report.pdf");
    std::fs::write(&lying, agent_testing::media::PNG).unwrap_or_else(|e| panic!("{e}"));
    let client = ScriptedClient::new()
        .respond(response::text("A pixel."))
        .respond(response::text("No picture this time."));
    let client = Arc::new(client.with_model("m"));
    let agent = Agent::builder(client.clone()).build();
    let (png, lying) = (png.display().to_string(), lying.display().to_string());
    let lines = [
        "/attach",
        &format!("/attach {lying}"),
        "/attach /no/such/file.png",
        &format!("/attach {png}"),
        &format!("/attach {png}"),
        "/detach",
        &format!("/attach {png}"),
        "/attach",
        "What is this?",
        "And now?",
    ];
    let mut reader = Script::lines(&lines);
    let (out, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
    assert!(out.contains("nothing is attached"), "{out}");
    assert!(
        out.contains("report.pdf cannot be attached") && out.contains("image/png"),
        "{out}"
    );
    assert!(out.contains("cannot read /no/such/file.png"), "{out}");
    assert!(
        out.contains("(attached dot.png, an image (image/png), 0.1 KiB;"),
        "{out}"
    );
    assert!(out.contains("(2 attachments dropped)"), "{out}");
    assert!(
        out.contains("with your next message: dot.png, an image (image/png)"),
        "{out}"
    );

    let requests = client.requests();
    let sent: Vec<usize> = requests
        .iter()
        .map(|request| request.messages.last().map_or(0, |message| message.attachments().len()))
        .collect();
    // One image with the first message, none with the second.
    assert_eq!(sent, [1, 0]);
    assert_eq!(
        requests[0]
            .messages
            .last()
            .map(Message::attachments)
            .map(|a| a[0].mime_type.clone())
            .as_deref(),
        Some("image/png")
    );
    assert_eq!(conversation.messages[0].attachments().len(), 1);
}

#[tokio::test]
async fn a_failed_turn_keeps_its_attachments_for_the_message_sent_again() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let png = dir.path().join("dot.png");
    std::fs::write(&png, agent_testing::media::PNG).unwrap_or_else(|e| panic!("{e}"));
    let client = ScriptedClient::new()
        .fail(agent_core::LlmError::auth("set OPENAI_API_KEY"))
        .respond(response::text("A pixel."));
    let client = Arc::new(client.with_model("m"));
    let agent = Agent::builder(client.clone()).build();
    let attach = format!("/attach {}", png.display());
    let mut reader = Script::lines(&[&attach, "What is this?", "What is this?"]);
    let (_, conversation, _, _) = chat(&agent, &mut reader, &NoInterrupts).await;
    let sent: Vec<usize> = client
        .requests()
        .iter()
        .map(|request| request.messages.last().map_or(0, |message| message.attachments().len()))
        .collect();
    assert_eq!(sent, [1, 1]);
    assert_eq!(conversation.messages[0].attachments().len(), 1);
}
