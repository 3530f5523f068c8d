//! The travel assistant's guards, on the real embedded model: a city the
//! user never named is not looked up (the turn ends with a question), and an
//! argument the model invents is refused by validation while the run goes
//! on. Skipped without the model unless `AGENTRY_REQUIRE_MODEL` is set.
#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};

use agent_core::{
    AssistantMessage, CancellationToken, Capabilities, ChatRequest, ChatResponse, LlmClient, LlmError, Message, RunEnd,
    ToolCall, ToolContext, ToolResult,
};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_runner::Agent;
use agent_tools_travel::{NaiveDate, TravelTools};
use async_trait::async_trait;

/// Two generations side by side do not fit two cores: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 22).unwrap()
}

fn model() -> Option<LlamaClient> {
    common::model_is_fetched().then(|| LlamaClient::load(LlamaConfig::default()).unwrap())
}

fn agent(client: Arc<dyn LlmClient>) -> Agent {
    agent_on(client, today())
}

/// The travel assistant with `today` as its date.
fn agent_on(client: Arc<dyn LlmClient>, today: NaiveDate) -> Agent {
    agent_limited(client, today, 4)
}

/// The travel assistant with `today` as its date and at most
/// `max_iterations` rounds of calls.
fn agent_limited(client: Arc<dyn LlmClient>, today: NaiveDate, max_iterations: u32) -> Agent {
    let registry = agent_tools::ToolBox::new();
    registry
        .register(Arc::new(TravelTools::with_today(today).tool_set()), true)
        .unwrap();
    Agent::builder(client)
        .system_prompt(agent_travel_assistant::system_prompt(today))
        .tools(Arc::new(registry))
        .max_iterations(max_iterations)
        .max_tokens(160)
        .temperature(0.0)
        .build()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_city_the_user_never_named_is_asked_for_not_looked_up() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(client) = model() else { return };
    let result = runtime()
        .block_on(
            agent(Arc::new(client))
                .run("What's the weather in my favorite city?")
                .into_future(),
        )
        .unwrap();
    eprintln!("{:#?}\n{}", result.tool_calls, result.response);
    let looked_up: Vec<_> = result.tool_calls.iter().filter(|call| !call.is_error).collect();
    assert!(looked_up.is_empty(), "a made-up place was looked up: {looked_up:?}");
    let answer = result.response.to_lowercase();
    assert!(
        answer.contains('?') || answer.contains("please provide") || answer.contains("let me know"),
        "the turn did not end with a question: {answer}"
    );
}

/// The real model, with `"airport": "HND"` added to the first tool call it
/// makes: the argument no schema names.
#[derive(Debug)]
struct InventsAnArgument {
    model: LlamaClient,
    done: Mutex<bool>,
}

#[async_trait]
impl LlmClient for InventsAnArgument {
    fn provider(&self) -> &str {
        self.model.provider()
    }

    fn model(&self) -> &str {
        self.model.model()
    }

    fn capabilities(&self) -> Capabilities {
        self.model.capabilities()
    }

    async fn complete(&self, request: &ChatRequest, cancel: &CancellationToken) -> Result<ChatResponse, LlmError> {
        let mut response = self.model.complete(request, cancel).await?;
        let mut done = self.done.lock().unwrap();
        if let Some(call) = response.message.tool_calls.first_mut().filter(|_| !*done)
            && let Some(arguments) = call.arguments.as_object_mut()
        {
            arguments.insert("airport".into(), "HND".into());
            *done = true;
        }
        Ok(response)
    }
}

#[test]
fn an_invented_argument_is_refused_and_the_run_completes() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(model) = model() else { return };
    let client = Arc::new(InventsAnArgument {
        model,
        done: Mutex::new(false),
    });
    let result = runtime()
        .block_on(agent(client.clone()).run("What's the weather in Tokyo?").into_future())
        .unwrap();
    eprintln!("{:#?}\n{}", result.tool_calls, result.response);
    assert!(
        *client.done.lock().unwrap(),
        "the model made no tool call to add the argument to"
    );
    let first = &result.tool_calls[0];
    assert!(first.is_error, "{first:?}");
    assert_eq!(
        first.result,
        "invalid arguments for `get_weather`: unexpected argument \"airport\""
    );
    assert_ne!(result.stop_reason, RunEnd::Error);
    assert!(!result.response.trim().is_empty(), "no answer after the refused call");
}

/// A tool call and its real result from `agent`'s tools, as history.
async fn called(agent: &Agent, id: &str, name: &str, arguments: serde_json::Value) -> Vec<Message> {
    let execution = agent.registry().execute(name, &arguments, &ToolContext::new()).await;
    let content = execution.outcome.map(|output| output.to_content()).unwrap();
    vec![
        Message::Assistant(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(id, name, arguments)],
        )),
        Message::tool(ToolResult::success(id, name, content)),
    ]
}

/// The demo's first five turns as the 0.5B model answers them, after the
/// worked example: the history before "It's June 15".
async fn demo_history(agent: &Agent) -> Vec<Message> {
    let mut history = agent_travel_assistant::worked_example(agent.registry().as_ref()).await;
    history.push(Message::user("What do you do?"));
    history.push(Message::assistant(
        "I'm a travel assistant designed to help users find information about weather, flight prices, \
         and currency exchange rates.",
    ));
    history.push(Message::user("What's the weather in Tokyo?"));
    history.extend(called(agent, "call_1", "get_weather", serde_json::json!({"location": "Tokyo"})).await);
    history.push(Message::assistant(
        "Right now in Tokyo it is 12.3 °C and mostly cloudy.",
    ));
    history.push(Message::user("What's the weather in my favorite city?"));
    history.push(Message::assistant(
        "I'm sorry, but I don't have any information about your favorite city. Please provide me with the \
         city name or IATA airport code so I can assist you better.",
    ));
    history.push(Message::user("My favorite city is New York"));
    history.extend(
        called(
            agent,
            "call_2",
            "get_weather",
            serde_json::json!({"location": "New York"}),
        )
        .await,
    );
    history.push(Message::assistant("Right now in New York it is 4.9 °C and sunny."));
    history.push(Message::user("How much is a flight from NYC to Paris?"));
    history.push(Message::assistant("On what date do you want to fly?"));
    history
}

/// The demo's turn 6: "It's June 15" after five turns of history, where the
/// model used to echo the message instead of searching the flight asked
/// about in turn 5.
#[test]
fn a_follow_up_that_needs_a_tool_is_answered_with_the_call() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::model_is_fetched() {
        return;
    }
    let runtime = runtime();
    // The demo's date (`--today 2026-11-25`), whose weather the history quotes.
    let today = NaiveDate::from_ymd_opt(2026, 11, 25).unwrap();
    let agent = agent_on(Arc::new(LlamaClient::load(LlamaConfig::default()).unwrap()), today);
    let result = runtime.block_on(async {
        let history = demo_history(&agent).await;
        agent.run("It's June 15").history(history).await.unwrap()
    });
    eprintln!("{:#?}\n{}", result.tool_calls, result.response);
    let flight = result
        .tool_calls
        .iter()
        .find(|call| call.name == "get_flight_prices" && !call.is_error)
        .unwrap_or_else(|| panic!("no successful flight search: {:?}", result.tool_calls));
    assert!(
        flight.result.contains("New York") && flight.result.contains("Paris"),
        "{flight:?}"
    );
    assert!(flight.result.contains("2027-06-15"), "{flight:?}");
}

#[test]
fn a_message_that_needs_no_tool_gets_no_call() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(client) = model() else { return };
    let result = runtime()
        .block_on(agent(Arc::new(client)).run("What do you do?").into_future())
        .unwrap();
    eprintln!("{:#?}\n{}", result.tool_calls, result.response);
    assert!(result.tool_calls.is_empty(), "{:?}", result.tool_calls);
    assert!(!result.response.trim().is_empty());
}

/// The demo's limit turn without history: eight places, one round of
/// calls, then the forced answer under `tool_choice = none`. With the call
/// token banned, the model used to write the call in a ```json fence
/// instead, which reached the user as text; the no-call grammar rules out
/// every opening of a call. (Whether the answer is a good one is the demo
/// checker's figure, in docs/local-models.md, not this test's.)
#[test]
fn the_forced_answer_after_the_limit_is_not_a_call() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::model_is_fetched() {
        return;
    }
    let agent = agent_limited(Arc::new(LlamaClient::load(LlamaConfig::default()).unwrap()), today(), 1);
    let prompt = "Tell me the weather in Australia, Belarus, Caribbean, Denmark, Egypt, France, Greece and Hungary";
    let result = runtime().block_on(agent.run(prompt).into_future()).unwrap();
    eprintln!("{:#?}\n{}", result.tool_calls, result.response);
    assert_eq!(result.stop_reason, RunEnd::MaxIterations);
    assert!(!result.tool_calls.is_empty(), "no round of calls before the limit");
    let answer = result.response.trim();
    assert!(!answer.contains("\"name\""), "a call as the answer: {answer}");
}
