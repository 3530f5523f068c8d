//! End-to-end tests against the real embedded model (Qwen2.5-Coder-0.5B).
//!
//! They need the model in the store (`cargo xtask fetch-model`). Without it
//! they are skipped with a message, unless `AGENTRY_REQUIRE_MODEL` is set (as
//! CI does), in which case they fail. They run one at a time: two cores are
//! not enough to run two generations side by side with stable timings.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use agent_core::{
    AssistantMessage, CancellationToken, ChatRequest, LlmClient, LlmErrorKind, Message, RunEnd, StopReason, ToolCall,
    ToolChoice, ToolDefinition, ToolOutput, ToolResult,
};
mod common;

use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_runner::Agent;
use agent_testing::{TestTool, TestTools, ToolBehaviour};
use serde_json::{Value, json};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The client, or `None` (after saying why) when the model is not fetched.
fn client(context_size: u32) -> Option<LlamaClient> {
    client_with(LlamaConfig {
        context_size,
        ..LlamaConfig::default()
    })
}

use common::client_with;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A calculator for products and sums, enough for these prompts.
fn calculator() -> TestTools {
    let compute = |args: &Value| {
        let expression = args["expression"].as_str().unwrap_or_default().replace(' ', "");
        let value = if let Some((a, b)) = expression.split_once('*') {
            a.parse::<i64>().ok().zip(b.parse::<i64>().ok()).map(|(a, b)| a * b)
        } else if let Some((a, b)) = expression.split_once('+') {
            a.parse::<i64>().ok().zip(b.parse::<i64>().ok()).map(|(a, b)| a + b)
        } else {
            expression.parse::<i64>().ok()
        };
        value
            .map(|v| ToolOutput::Json(json!({"result": v})))
            .ok_or_else(|| agent_core::ToolError::failed(format!("cannot evaluate {expression:?}")))
    };
    TestTools::new("math").with(
        TestTool::new("calculator", ToolBehaviour::Compute(Arc::new(compute))).with_schema(json!({
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "An arithmetic expression, e.g. 2 * 3"}},
            "required": ["expression"]
        })),
    )
}

#[test]
fn the_agent_answers_a_product_by_calling_the_calculator() {
    let _serial = serial();
    let Some(client) = client(4096) else { return };
    let registry = agent_tools::ToolBox::new();
    registry.register(Arc::new(calculator()), true).expect("register");
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You are a helpful assistant. Use the calculator for arithmetic.")
        .tools(Arc::new(registry))
        .max_iterations(4)
        .max_tokens(256)
        .temperature(0.0)
        .build();
    let result = runtime()
        .block_on(agent.run("What is 1234 * 5678?").into_future())
        .expect("run");
    let call = result
        .tool_calls
        .iter()
        .find(|c| c.name == "calculator")
        .expect("a calculator call");
    assert_eq!(call.result, r#"{"result":7006652}"#, "{result:#?}");
    assert!(!call.is_error);
    assert!(
        matches!(result.stop_reason, RunEnd::Completed | RunEnd::LoopDetected),
        "{result:#?}"
    );
    eprintln!("answer: {}", result.response);
}

/// Small talk that needs no tool, with the calculator and a weather tool offered.
fn small_talk(choice: ToolChoice) -> ChatRequest {
    let mut request =
        ChatRequest::new(vec![Message::user("Say hello to me.")]).with_system("You are a helpful assistant.");
    request.tools = vec![
        ToolDefinition::new(
            "calculator",
            "Evaluates an arithmetic expression.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
        ToolDefinition::new(
            "get_weather",
            "Current weather in a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
    ]
    .into();
    request.tool_choice = choice;
    request.max_tokens = Some(64);
    request.temperature = Some(0.0);
    request
}

/// The one call of a reply that must call a tool, checked to be a real call.
fn forced_call(client: &LlamaClient, request: &ChatRequest) -> ToolCall {
    let response = runtime()
        .block_on(client.complete(request, &CancellationToken::new()))
        .expect("reply");
    assert_eq!(response.stop_reason, StopReason::ToolUse, "{:?}", response.message);
    assert!(
        !response.message.content.contains("<tool_call>"),
        "the prefilled opening is not shown as text: {:?}",
        response.message.content
    );
    let call = response.message.tool_calls.first().cloned().expect("a tool call");
    assert!(call.arguments.is_object(), "{call:?}");
    call
}

#[test]
fn a_required_tool_choice_makes_the_model_call_a_tool_for_small_talk() {
    let _serial = serial();
    // Left to its first token and without the grammar, the model makes no
    // call: it writes `{"name": "hello", ...}`, a tool that does not exist,
    // which stays text. (With the lazy grammar, on by default, that bare
    // `{"name"` opens the grammar, which makes it a call of an offered tool.)
    let Some(client) = client_with(LlamaConfig {
        context_size: 4096,
        call_threshold: 1.0,
        grammar: false,
        ..LlamaConfig::default()
    }) else {
        return;
    };
    let free = runtime()
        .block_on(client.complete(&small_talk(ToolChoice::Auto), &CancellationToken::new()))
        .expect("reply");
    assert!(free.message.tool_calls.is_empty(), "{:?}", free.message);
    let call = forced_call(&client, &small_talk(ToolChoice::Required));
    assert!(["calculator", "get_weather"].contains(&call.name.as_str()), "{call:?}");
}

/// `call_threshold` decides a reply to a user message from the model's odds
/// of starting a call of an offered tool: the small talk the model answers
/// in prose when its first token decides (`call_threshold = 1`, see
/// above) is a call, under the grammar, once the threshold is below its
/// odds.
#[test]
fn the_reply_to_a_user_message_is_a_call_when_its_odds_reach_the_threshold() {
    let _serial = serial();
    let Some(client) = client_with(LlamaConfig {
        context_size: 4096,
        call_threshold: 1e-6,
        ..LlamaConfig::default()
    }) else {
        return;
    };
    let call = forced_call(&client, &small_talk(ToolChoice::Auto));
    assert!(["calculator", "get_weather"].contains(&call.name.as_str()), "{call:?}");
}

#[test]
fn a_named_tool_choice_makes_the_model_call_that_tool() {
    let _serial = serial();
    let Some(client) = client(4096) else { return };
    let choice = ToolChoice::Tool {
        name: "get_weather".into(),
    };
    let call = forced_call(&client, &small_talk(choice));
    assert_eq!(call.name, "get_weather");
}

#[test]
fn with_the_grammar_a_required_call_has_schema_valid_arguments() {
    let _serial = serial();
    let Some(client) = client_with(LlamaConfig {
        context_size: 4096,
        grammar: true,
        ..LlamaConfig::default()
    }) else {
        return;
    };
    let choice = ToolChoice::Tool {
        name: "calculator".into(),
    };
    let call = forced_call(&client, &small_talk(choice));
    assert_eq!(call.name, "calculator");
    assert!(call.arguments["expression"].is_string(), "{call:?}");
}

#[test]
fn a_second_turn_reuses_the_cached_prefix() {
    let _serial = serial();
    let Some(client) = client(4096) else { return };
    let runtime = runtime();
    let cancel = CancellationToken::new();
    let mut request = ChatRequest::new(vec![Message::user("Name one colour.")]).with_system("Answer in one word.");
    request.max_tokens = Some(8);
    request.temperature = Some(0.0);
    let first = runtime.block_on(client.complete(&request, &cancel)).expect("first");
    request.messages.push(Message::Assistant(first.message.clone()));
    request.messages.push(Message::user("Name another one."));
    let second = runtime.block_on(client.complete(&request, &cancel)).expect("second");
    assert!(
        second.usage.cache_read_tokens > 0 && second.usage.cache_read_tokens < second.usage.input_tokens,
        "{:?}",
        second.usage
    );
    assert!(
        second.usage.cache_read_tokens >= first.usage.input_tokens,
        "the whole first prompt was reused: {:?} then {:?}",
        first.usage,
        second.usage
    );
}

#[test]
fn a_cancelled_generation_stops_within_one_token() {
    let _serial = serial();
    let Some(client) = client(4096) else { return };
    let runtime = runtime();
    let mut request = ChatRequest::new(vec![Message::user("Count from 1 to 500, one number per line.")]);
    request.max_tokens = Some(2000);
    request.temperature = Some(0.0);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let (error, latency) = runtime.block_on(async move {
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            trigger.cancel();
            Instant::now()
        });
        let outcome = client.complete(&request, &cancel).await;
        let returned = Instant::now();
        let cancelled_at = canceller.await.expect("canceller");
        (outcome.err(), returned.saturating_duration_since(cancelled_at))
    });
    assert_eq!(error.map(|e| e.kind), Some(LlmErrorKind::Cancelled));
    // One token takes about 40 ms on two cores; allow scheduling slack.
    assert!(
        latency < Duration::from_millis(150),
        "returned {latency:?} after cancellation"
    );
}

#[test]
fn the_prompt_is_the_models_own_template_with_tools_calls_and_results() {
    let _serial = serial();
    let Some(client) = client(4096) else { return };
    let request = ChatRequest {
        system: Some("You are a travel assistant.".into()),
        messages: vec![
            Message::user("Weather in Tokyo?"),
            Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("call_1", "get_weather", json!({"location": "Tokyo"}))],
            )),
            Message::Tool(ToolResult::success("call_1", "get_weather", r#"{"temp_c":21}"#)),
        ],
        tools: vec![ToolDefinition::new(
            "get_weather",
            "Current weather.",
            json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
        )]
        .into(),
        ..ChatRequest::default()
    };
    let prompt = client.render_prompt(&request).expect("renders");
    let expected = concat!(
        "<|im_start|>system\nYou are a travel assistant.\n\n# Tools\n\n",
        "You may call one or more functions to assist with the user query.\n\n",
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
        "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather.\", ",
        "\"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}}, \"required\": [\"location\"]}}}\n",
        "</tools>\n\nFor each function call, return a json object with function name and arguments within ",
        "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n",
        "</tool_call><|im_end|>\n",
        "<|im_start|>user\nWeather in Tokyo?<|im_end|>\n",
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Tokyo\"}}\n</tool_call><|im_end|>\n",
        "<|im_start|>user\n<tool_response>\n{\"temp_c\":21}\n</tool_response><|im_end|>\n",
        "<|im_start|>assistant\n"
    );
    assert_eq!(prompt, expected);
}

/// The local model reads text only: an image is refused with a typed error
/// naming the part, before anything is generated (complete and stream
/// alike); a text file is read inline.
#[test]
fn an_image_is_refused_and_a_text_file_is_read() {
    let _serial = serial();
    let Some(client) = client(2048) else {
        return;
    };
    let runtime = runtime();
    let image = ChatRequest::new(vec![Message::user_with(
        "What is in this picture?",
        vec![agent_testing::media::png()],
    )]);
    let error = runtime
        .block_on(client.complete(&image, &CancellationToken::new()))
        .expect_err("refused");
    assert_eq!(error.kind, LlmErrorKind::UnsupportedInput);
    assert!(
        error
            .message
            .starts_with("llama cannot take an image (image/png) in a user message"),
        "{error}"
    );
    let streamed = runtime.block_on(client.stream(&image, &CancellationToken::new()));
    assert!(streamed.is_err_and(|error| error.kind == LlmErrorKind::UnsupportedInput));

    let notes = agent_core::Attachment::from_bytes(
        b"The meeting is on Tuesday.".to_vec(),
        Some("text/plain"),
        Some("notes.txt".into()),
    )
    .expect("a text file");
    let request = ChatRequest {
        max_tokens: Some(24),
        ..ChatRequest::new(vec![Message::user_with("Which day is the meeting?", vec![notes])])
    };
    let prompt = client.render_prompt(&request).expect("renders");
    assert!(
        prompt.contains("Attached file notes.txt (text/plain):\n\nThe meeting is on Tuesday."),
        "{prompt}"
    );
    let reply = runtime
        .block_on(client.complete(&request, &CancellationToken::new()))
        .expect("reply");
    assert!(reply.message.content.contains("Tuesday"), "{}", reply.message.content);
}
