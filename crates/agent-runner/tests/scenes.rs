//! Scenes (routing to sub-agents) and handoffs (agents as tools).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use agent_core::{
    AgentEvent, CallPurpose, Capabilities, DelegatedUsage, LlmError, Message, ModelCatalog, ModelInfo, Pricing, RunEnd,
    ToolChoice, ToolContext, ToolOutput, ToolProvider, Usage,
};
use agent_prompts::PromptTemplate;
use agent_runner::Agent;
use agent_runner::scenes::{
    ActorError, AgentTool, CurrentDate, MatchKind, Scene, SceneActor, SceneContext, SceneError, SceneRequest,
    SceneRouter, SceneRouterBuilder, StaticContext,
};
use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

const QUESTION: &str = "What is 15 + 27?";

fn add() -> ToolBehaviour {
    ToolBehaviour::Compute(Arc::new(|arguments: &Value| {
        let sum = arguments["a"].as_i64().unwrap_or_default() + arguments["b"].as_i64().unwrap_or_default();
        Ok(ToolOutput::Text(sum.to_string()))
    }))
}

fn math() -> Arc<dyn ToolProvider> {
    Arc::new(TestTools::new("math").with(TestTool::new("add", add())))
}

fn travel() -> Arc<dyn ToolProvider> {
    Arc::new(
        TestTools::new("travel")
            .with(TestTool::new(
                "get_weather",
                ToolBehaviour::Reply("sunny, 21 °C".into()),
            ))
            .with(TestTool::new("get_flight_prices", ToolBehaviour::Reply("$420".into()))),
    )
}

fn builder(client: &ScriptedClient) -> SceneRouterBuilder {
    SceneRouter::builder(Arc::new(client.clone()))
        .providers([math(), travel()])
        .scene(
            Scene::new("Calculator", "Arithmetic: sums, products, percentages.")
                .system_prompt("You calculate.")
                .tools(["math"]),
        )
        .scene(
            Scene::new("Weather", "The current weather in a city.")
                .system_prompt("You forecast.")
                .tools(["get_weather"]),
        )
}

fn router(client: &ScriptedClient) -> SceneRouter {
    builder(client).build().expect("the router builds")
}

fn tool_names(request: &agent_core::ChatRequest) -> Vec<String> {
    request.tools.iter().map(|tool| tool.name.clone()).collect()
}

#[tokio::test]
async fn a_sum_is_routed_to_the_calculator_and_answered_with_its_tools() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Calculator", json!({}))]))
        .respond(response::tool_calls([("add", json!({"a": 15, "b": 27}))]))
        .respond(response::text("15 + 27 = 42."));
    let result = router(&client)
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect("the scene runs");
    assert_eq!(result.scene.as_deref(), Some("Calculator"));
    assert_eq!(result.response, "15 + 27 = 42.");
    assert_eq!(result.tool_calls[0].name, "add");
    assert_eq!(result.tool_calls[0].result, "42");
    assert_eq!(result.stop_reason, RunEnd::Completed);

    let requests = client.requests();
    assert_eq!(requests.len(), 3);
    // The routing call: one function per scene, a call required.
    assert_eq!(tool_names(&requests[0]), ["Calculator", "Weather"]);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    assert_eq!(
        requests[0].tools[0].description,
        "Arithmetic: sums, products, percentages."
    );
    assert_eq!(requests[0].messages, [Message::user(QUESTION)]);
    // The scene's run: its own prompt and only its tools.
    assert_eq!(requests[1].system.as_deref(), Some("You calculate."));
    assert_eq!(tool_names(&requests[1]), ["add"]);
    assert_eq!(requests[1].messages, [Message::user(QUESTION)]);
    assert_eq!(result.messages.first(), Some(&Message::user(QUESTION)));
}

#[tokio::test]
async fn near_miss_names_still_reach_the_calculator() {
    for name in [
        "calculator",
        "Calcualtor",
        "calculator-scene",
        "calculator_scene",
        "CALCULATOR",
    ] {
        let client = ScriptedClient::new()
            .respond(response::tool_calls([(name, json!({}))]))
            .respond(response::text("42"));
        let router = router(&client);
        let result = router
            .run(Vec::new(), QUESTION, &ToolContext::new())
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(result.scene.as_deref(), Some("Calculator"), "{name}");
        assert_eq!(tool_names(&client.requests()[1]), ["add"], "{name}");
    }
    let client = ScriptedClient::new().respond(response::tool_calls([("Calcualtor", json!({}))]));
    let choice = router(&client)
        .route(&[], QUESTION, &ToolContext::new())
        .await
        .expect("routed");
    assert_eq!(choice.requested.as_deref(), Some("Calcualtor"));
    assert_eq!(choice.matched, Some(MatchKind::Fuzzy { distance: 1 }));
}

#[tokio::test]
async fn an_unknown_name_goes_to_the_default_scene() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Astrology", json!({}))]))
        .respond(response::text("Sunny."));
    let router = builder(&client).default_scene("weather").build().expect("builds");
    assert_eq!(router.default_scene(), Some("Weather"));
    let result = router
        .run(Vec::new(), "Horoscope?", &ToolContext::new())
        .await
        .expect("runs");
    assert_eq!(result.scene.as_deref(), Some("Weather"));
    assert_eq!(client.requests()[1].system.as_deref(), Some("You forecast."));

    let client = ScriptedClient::new().respond(response::text(""));
    let router = builder(&client).default_scene("Weather").build().expect("builds");
    let choice = router.route(&[], "?", &ToolContext::new()).await.expect("routed");
    assert_eq!(
        (choice.scene.as_str(), choice.requested, choice.matched),
        ("Weather", None, None)
    );
}

#[tokio::test]
async fn without_a_default_an_unknown_name_is_a_clear_error() {
    let client = ScriptedClient::new().respond(response::tool_calls([("Astrology", json!({}))]));
    let error = router(&client)
        .run(Vec::new(), "Horoscope?", &ToolContext::new())
        .await
        .expect_err("no such scene");
    match &error {
        SceneError::UnknownScene { requested, available } => {
            assert_eq!(requested, "Astrology");
            assert_eq!(available, &["Calculator", "Weather"]);
        }
        other => panic!("unexpected: {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        "the model chose the scene `Astrology`, which does not exist; available scenes: Calculator, Weather"
    );
    // No scene ran.
    assert_eq!(client.requests().len(), 1);

    let client = ScriptedClient::new().respond(response::text("  "));
    let error = router(&client)
        .run(Vec::new(), "?", &ToolContext::new())
        .await
        .expect_err("no scene named");
    assert!(matches!(error, SceneError::NoSceneChosen { .. }), "{error:?}");
    assert!(error.to_string().contains("Calculator, Weather"), "{error}");
}

#[tokio::test]
async fn a_failed_routing_call_is_reported_as_such() {
    let client = ScriptedClient::new().fail(LlmError::invalid_request("bad key"));
    let error = router(&client)
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect_err("routing failed");
    assert!(matches!(error, SceneError::Routing(_)), "{error:?}");
    assert!(error.to_string().starts_with("choosing the scene failed"), "{error}");
}

#[tokio::test]
async fn a_text_protocol_client_names_the_scene_in_its_reply() {
    let text_only = Capabilities {
        native_tools: false,
        ..Capabilities::default()
    };
    let client = ScriptedClient::new()
        .with_capabilities(text_only)
        .respond(response::text("Weather."))
        .respond(response::text("Sunny in Tokyo."));
    let router = router(&client);
    assert!(!router.routes_natively());
    let result = router
        .run(Vec::new(), "Weather in Tokyo?", &ToolContext::new())
        .await
        .expect("runs");
    assert_eq!(result.scene.as_deref(), Some("Weather"));
    let requests = client.requests();
    assert!(requests[0].tools.is_empty());
    assert_eq!(requests[0].tool_choice, ToolChoice::Auto);
    let system = requests[0].system.clone().unwrap_or_default();
    assert!(
        system.contains("- Calculator: Arithmetic") && system.contains("- Weather: The current weather"),
        "{system}"
    );
    // The scene itself runs with the text protocol: its tool in the prompt.
    let scene_system = requests[1].system.clone().unwrap_or_default();
    assert!(scene_system.contains("get_weather"), "{scene_system}");
    assert!(requests[1].tools.is_empty());

    // Configured text protocol on a native client routes by text too.
    let client = ScriptedClient::new().respond(response::text("calculator"));
    let router = builder(&client)
        .configure(|agent| agent.tool_protocol(agent_runner::ToolProtocol::Text))
        .build()
        .expect("builds");
    assert!(!router.routes_natively());
    let choice = router.route(&[], QUESTION, &ToolContext::new()).await.expect("routed");
    assert_eq!(choice.scene, "Calculator");
}

/// Says who is asking and what they asked.
struct WhoAsks;

#[async_trait]
impl SceneActor for WhoAsks {
    fn name(&self) -> &'static str {
        "who_asks"
    }

    async fn context(&self, request: &SceneRequest<'_>) -> Result<SceneContext, ActorError> {
        let user = request
            .context
            .user_id
            .clone()
            .ok_or_else(|| ActorError::new("nobody is signed in"))?;
        Ok(SceneContext::new().with("user", user).with(
            "asked",
            format!("{} ({} earlier messages)", request.user_message, request.history.len()),
        ))
    }
}

#[tokio::test]
async fn actors_add_their_context_to_the_scenes_system_prompt() {
    let june_first = UNIX_EPOCH + Duration::from_secs(22_066 * 86_400);
    let template = PromptTemplate::parse("You are {{scene}}. Today is {{date}}.").expect("template parses");
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Planner", json!({}))]))
        .respond(response::text("Done."));
    let router = SceneRouter::builder(Arc::new(client.clone()))
        .scene(
            Scene::new("Planner", "Plans trips.")
                .prompt_template(template)
                .actor(Arc::new(CurrentDate::at(june_first)))
                .actor(Arc::new(StaticContext::new(
                    "profile",
                    SceneContext::new().with("home", "Lisbon"),
                )))
                .actor(Arc::new(WhoAsks)),
        )
        .build()
        .expect("builds");
    let history = vec![Message::user("hi"), Message::assistant("hello")];
    let context = ToolContext::new().with_user("ada");
    router.run(history, "Plan a trip", &context).await.expect("runs");
    assert_eq!(
        client.requests()[1].system.as_deref(),
        Some(
            "You are Planner. Today is 2030-06-01.\n\nContext:\n- weekday: Saturday\n- home: Lisbon\n- user: ada\n- asked: \
             Plan a trip (2 earlier messages)"
        )
    );

    // An actor that fails keeps the scene from running.
    let client = ScriptedClient::new().respond(response::tool_calls([("Planner", json!({}))]));
    let router = SceneRouter::builder(Arc::new(client.clone()))
        .scene(Scene::new("Planner", "Plans trips.").actor(Arc::new(WhoAsks)))
        .build()
        .expect("builds");
    let error = router
        .run(Vec::new(), "Plan a trip", &ToolContext::new())
        .await
        .expect_err("the actor fails");
    assert_eq!(
        error.to_string(),
        "scene `Planner`: actor `who_asks` failed: nobody is signed in"
    );
    assert_eq!(client.requests().len(), 1);
}

fn priced_catalog() -> Arc<ModelCatalog> {
    let mut catalog = ModelCatalog::new();
    catalog.insert(
        "scripted-model",
        ModelInfo {
            provider: "scripted".into(),
            context_window: None,
            pricing: Pricing {
                input_per_million: 1_000_000.0,
                output_per_million: 2_000_000.0,
                ..Pricing::default()
            },
            inputs: None,
        },
    );
    Arc::new(catalog)
}

#[tokio::test]
async fn the_routing_call_counts_in_usage_cost_and_model_calls() {
    let client = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("Calculator", json!({}))]),
            Usage::new(100, 3),
        ))
        .respond(response::tool_calls([("add", json!({"a": 15, "b": 27}))]))
        .respond(response::text("42"));
    let result = builder(&client)
        .catalog(priced_catalog())
        .build()
        .expect("builds")
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect("runs");
    // Routing 100 + 3, then two scene calls of 10 + 5.
    assert_eq!(result.usage, Usage::new(120, 13));
    // $1 per input token, $2 per output token.
    assert_eq!(result.cost_usd, Some(120.0 + 26.0));
    assert_eq!(result.model_calls.len(), 3);
    assert_eq!(result.model_calls[0].purpose, CallPurpose::Routing);
    assert_eq!(result.model_calls[0].usage, Usage::new(100, 3));
    assert_eq!(result.model_calls[0].cost_usd, Some(106.0));
    assert!(
        result.model_calls[1..]
            .iter()
            .all(|call| call.purpose == CallPurpose::Chat)
    );
    // The routing call is no iteration.
    assert_eq!(result.iterations, 2);
}

#[tokio::test]
async fn scene_entered_comes_before_the_scenes_events_and_the_stream_agrees_with_run() {
    let script = || {
        ScriptedClient::new()
            .respond(response::with_usage(
                response::tool_calls([("calculator", json!({}))]),
                Usage::new(100, 3),
            ))
            .respond(response::tool_calls([("add", json!({"a": 15, "b": 27}))]))
            .respond(response::text("42"))
    };
    let client = script();
    let events: Vec<AgentEvent> = router(&client)
        .run_stream(Vec::new(), QUESTION, ToolContext::new())
        .collect()
        .await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| match event {
            AgentEvent::SceneEntered { .. } => "scene_entered",
            AgentEvent::RunStarted { .. } => "run_started",
            AgentEvent::ToolStarted { .. } => "tool_started",
            AgentEvent::RunFinished { .. } => "run_finished",
            _ => "other",
        })
        .filter(|kind| *kind != "other")
        .collect();
    assert_eq!(kinds, ["scene_entered", "run_started", "tool_started", "run_finished"]);
    assert_eq!(
        events[0],
        AgentEvent::SceneEntered {
            scene: "Calculator".into(),
            requested: Some("calculator".into()),
        }
    );
    let Some(AgentEvent::RunFinished { result: streamed }) = events.last() else {
        panic!("no result: {events:?}")
    };
    let client = script();
    let ran = router(&client)
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect("runs");
    assert_eq!(streamed.scene.as_deref(), Some("Calculator"));
    assert_eq!(streamed.usage, Usage::new(120, 13));
    assert_eq!(streamed.usage, ran.usage);
    assert_eq!(streamed.model_calls.len(), ran.model_calls.len());
    assert_eq!(streamed.response, ran.response);
}

#[tokio::test]
async fn a_streamed_request_no_scene_can_take_ends_with_an_error_record() {
    let client = ScriptedClient::new().respond(response::tool_calls([("Astrology", json!({}))]));
    let events: Vec<AgentEvent> = router(&client)
        .run_stream(vec![Message::user("earlier")], "Horoscope?", ToolContext::new())
        .collect()
        .await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        matches!(&events[0], AgentEvent::Error { message } if message.contains("Astrology")),
        "{events:?}"
    );
    let AgentEvent::RunFinished { result } = &events[1] else {
        panic!("{events:?}")
    };
    assert_eq!(result.stop_reason, RunEnd::Error);
    assert_eq!(result.scene, None);
    assert_eq!(result.messages, [Message::user("earlier"), Message::user("Horoscope?")]);
}

/// A client whose calls wait for their cancellation, and say they saw it.
struct Hanging {
    cancelled: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait]
impl agent_core::LlmClient for Hanging {
    fn provider(&self) -> &'static str {
        "hanging"
    }

    fn model(&self) -> &'static str {
        "hanging-model"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            native_tools: true,
            ..Capabilities::default()
        }
    }

    async fn complete(
        &self,
        _request: &agent_core::ChatRequest,
        cancel: &agent_core::CancellationToken,
    ) -> Result<agent_core::ChatResponse, LlmError> {
        cancel.cancelled().await;
        self.cancelled.store(true, std::sync::atomic::Ordering::SeqCst);
        Err(LlmError::cancelled())
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_routing_call() {
    let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let router = SceneRouter::builder(Arc::new(Hanging {
        cancelled: Arc::clone(&cancelled),
    }))
    .scene(Scene::new("Calculator", "Arithmetic"))
    .build()
    .expect("builds");
    let mut stream = Box::pin(router.run_stream(Vec::new(), QUESTION, ToolContext::new()));
    let next = tokio::time::timeout(Duration::from_millis(50), stream.next()).await;
    assert!(next.is_err(), "nothing yet");
    drop(stream);
    for _ in 0..100 {
        if cancelled.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the routing call was not cancelled");
}

#[tokio::test]
async fn a_cancelled_routing_call_ends_the_stream_as_cancelled() {
    let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let router = SceneRouter::builder(Arc::new(Hanging { cancelled }))
        .scene(Scene::new("Calculator", "Arithmetic"))
        .build()
        .expect("builds");
    let cancel = agent_core::CancellationToken::new();
    let stream = router.run_stream(Vec::new(), QUESTION, ToolContext::new().with_cancel(cancel.clone()));
    cancel.cancel();
    let events: Vec<AgentEvent> = stream.collect().await;
    let Some(AgentEvent::RunFinished { result }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(result.stop_reason, RunEnd::Cancelled);
}

#[test]
fn routers_with_unusable_scenes_are_refused() {
    let client = ScriptedClient::new();
    let error = SceneRouter::builder(Arc::new(client.clone()))
        .build()
        .expect_err("no scenes");
    assert!(matches!(error, SceneError::NoScenes));
    let error = builder(&client)
        .scene(Scene::new("calculator", "again"))
        .build()
        .expect_err("same name");
    assert_eq!(
        error.to_string(),
        "the scenes `Calculator` and `calculator` have the same name once case and separators are ignored; rename one"
    );
    let error = builder(&client)
        .default_scene("Astrology")
        .build()
        .expect_err("no default");
    assert_eq!(
        error.to_string(),
        "the default scene `Astrology` is not a scene; available scenes: Calculator, Weather"
    );
    let error = builder(&client)
        .scene(Scene::new("Sql", "Queries").tools(["sql"]))
        .build()
        .expect_err("no sql");
    assert_eq!(
        error.to_string(),
        "scene `Sql`: `sql` is neither a tool domain nor a tool; domains: math, travel"
    );
}

#[test]
fn a_scene_gets_whole_domains_and_single_tools_only() {
    let client = ScriptedClient::new();
    let router = builder(&client)
        .scene(Scene::new("Trips", "Flights and sums").tools(["get_flight_prices", "math"]))
        .build()
        .expect("builds");
    let names = |scene: &str| -> Vec<String> {
        router
            .scene_registry(scene)
            .map(|registry| registry.definitions().into_iter().map(|tool| tool.name).collect())
            .unwrap_or_default()
    };
    assert_eq!(names("Weather"), ["get_weather"]);
    assert_eq!(names("Calculator"), ["add"]);
    assert_eq!(names("Trips"), ["add", "get_flight_prices"]);
    let all: Vec<String> = router
        .registry()
        .definitions()
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    assert_eq!(all, ["add", "get_weather", "get_flight_prices"]);
}

#[test]
fn tools_that_require_approval_keep_requiring_it_in_scenes() {
    let client = ScriptedClient::new();
    let router = builder(&client).require_approval(["add"]).build().expect("builds");
    let calculator = router.scene_registry("Calculator").expect("a scene");
    assert!(calculator.requires_approval("add"));
    let weather = router.scene_registry("Weather").expect("a scene");
    assert!(!weather.requires_approval("get_weather"));
}

#[tokio::test]
async fn a_scene_cannot_run_a_tool_it_was_not_given() {
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Weather", json!({}))]))
        .respond(response::tool_calls([("get_flight_prices", json!({}))]))
        .respond(response::text("I cannot."));
    let result = router(&client)
        .run(Vec::new(), "Flights?", &ToolContext::new())
        .await
        .expect("runs");
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0].result.contains("unknown tool"),
        "{}",
        result.tool_calls[0].result
    );
}

fn expert(client: &ScriptedClient) -> Agent {
    Agent::builder(Arc::new(client.clone()))
        .name("math_expert")
        .description("Solves arithmetic.")
        .catalog(priced_catalog())
        .build()
}

fn parent(client: &ScriptedClient, expert: Agent) -> Agent {
    let registry = agent_tools::ToolBox::new();
    registry
        .register(Arc::new(AgentTool::new(expert)), true)
        .expect("registers");
    Agent::builder(Arc::new(client.clone()))
        .name("parent")
        .tools(Arc::new(registry))
        .catalog(priced_catalog())
        .build()
}

#[tokio::test]
async fn a_handoff_answers_with_the_sub_agent_and_adds_its_usage() {
    let sub = ScriptedClient::new().respond(response::with_usage(response::text("42"), Usage::new(20, 4)));
    let main = ScriptedClient::new()
        .respond(response::tool_calls([("math_expert", json!({"task": "15 + 27"}))]))
        .respond(response::text("It is 42."));
    let agent = parent(&main, expert(&sub));
    let definition = &agent.registry().definitions()[0];
    assert_eq!(definition.name, "math_expert");
    assert!(
        definition.description.starts_with("Solves arithmetic."),
        "{}",
        definition.description
    );
    let result = agent.run(QUESTION).await.expect("runs");
    assert_eq!(result.response, "It is 42.");
    assert_eq!(result.tool_calls[0].result, "42");
    assert_eq!(sub.requests()[0].messages, [Message::user("15 + 27")]);
    // The parent's two calls (10 + 5 each) and the sub-agent's 20 + 4.
    assert_eq!(result.usage, Usage::new(40, 14));
    assert_eq!(result.cost_usd, Some(40.0 + 28.0));
    assert_eq!(
        result.tool_calls[0].delegated_usage,
        Some(DelegatedUsage::new(Usage::new(20, 4), Some(28.0)))
    );
    // The model calls stay the parent's own.
    assert_eq!(result.model_calls.len(), 2);

    // Streamed, the same usage.
    let sub = ScriptedClient::new().respond(response::with_usage(response::text("42"), Usage::new(20, 4)));
    let main = ScriptedClient::new()
        .respond(response::tool_calls([("math_expert", json!({"task": "15 + 27"}))]))
        .respond(response::text("It is 42."));
    let events: Vec<AgentEvent> = parent(&main, expert(&sub)).run(QUESTION).stream().collect().await;
    let Some(AgentEvent::RunFinished { result: streamed }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(streamed.usage, result.usage);
    assert_eq!(streamed.cost_usd, result.cost_usd);
}

#[tokio::test]
async fn identical_handoffs_of_one_reply_run_and_count_once() {
    let sub = ScriptedClient::new().respond(response::with_usage(response::text("42"), Usage::new(20, 4)));
    let main = ScriptedClient::new()
        .respond(response::tool_calls([
            ("math_expert", json!({"task": "15 + 27"})),
            ("math_expert", json!({"task": "15 + 27"})),
        ]))
        .respond(response::text("42."));
    let result = parent(&main, expert(&sub)).run(QUESTION).await.expect("runs");
    assert_eq!(sub.requests().len(), 1);
    assert_eq!(result.usage, Usage::new(40, 14));
    assert_eq!(result.tool_calls.len(), 2);
    assert_eq!(result.tool_calls[1].delegated_usage, None);
}

#[tokio::test]
async fn a_failed_handoff_is_a_tool_error_and_its_usage_still_counts() {
    let sub = ScriptedClient::new()
        .respond(response::with_usage(
            response::tool_calls([("nothing", json!({}))]),
            Usage::new(30, 1),
        ))
        .fail(LlmError::invalid_request("the sub-model is gone"));
    let main = ScriptedClient::new()
        .respond(response::tool_calls([("math_expert", json!({"task": "15 + 27"}))]))
        .respond(response::text("The expert failed."));
    let result = parent(&main, expert(&sub)).run(QUESTION).await.expect("runs");
    assert!(result.tool_calls[0].is_error);
    assert!(
        result.tool_calls[0]
            .result
            .starts_with("the agent `math_expert` failed:"),
        "{}",
        result.tool_calls[0].result
    );
    assert_eq!(result.usage, Usage::new(50, 11));

    // An empty task never reaches the sub-agent.
    let sub = ScriptedClient::new();
    let main = ScriptedClient::new()
        .respond(response::tool_calls([("math_expert", json!({"task": " "}))]))
        .respond(response::text("?"));
    let result = parent(&main, expert(&sub)).run(QUESTION).await.expect("runs");
    assert!(result.tool_calls[0].is_error);
    assert!(sub.requests().is_empty());
}

#[tokio::test]
async fn a_scene_can_hand_off_to_another_agent() {
    let sub = ScriptedClient::new().respond(response::with_usage(response::text("42"), Usage::new(20, 4)));
    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Delegator", json!({}))]))
        .respond(response::tool_calls([("math_expert", json!({"task": "15 + 27"}))]))
        .respond(response::text("42"));
    let router = SceneRouter::builder(Arc::new(client.clone()))
        .provider(Arc::new(AgentTool::new(expert(&sub))))
        .scene(Scene::new("Delegator", "Hands work over.").tools(["handoff"]))
        .build()
        .expect("builds");
    let result = router
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect("runs");
    // Routing 10 + 5, the scene's two calls 20 + 10, the sub-agent's 20 + 4.
    assert_eq!(result.usage, Usage::new(50, 19));
}

#[tokio::test]
async fn a_scene_with_guardrails_of_its_own_checks_with_them_instead_of_the_configured_ones() {
    use agent_runner::Guardrails;
    use agent_runner::guardrails::{DenyList, Redactor};

    let client = ScriptedClient::new()
        .respond(response::tool_calls([("Weather", json!({}))]))
        .respond(response::tool_calls([("Calculator", json!({}))]))
        .respond(response::text("Mail admin@example.com for sums."));
    let router = SceneRouter::builder(Arc::new(client.clone()))
        .providers([math(), travel()])
        // Every scene's agent gets the configured guardrails...
        .configure(|builder| builder.guardrails(Guardrails::new().output(Redactor::builtin())))
        .scene(Scene::new("Calculator", "Arithmetic.").tools(["math"]))
        // ...but this scene has its own.
        .scene(
            Scene::new("Weather", "The weather.")
                .tools(["get_weather"])
                .guardrails(Guardrails::new().input(DenyList::keywords(["hurricane"]).expect("keywords"))),
        )
        .build()
        .expect("the router builds");

    let weather = router
        .run(Vec::new(), "Is a hurricane coming?", &ToolContext::new())
        .await
        .expect("a record");
    assert_eq!(weather.scene.as_deref(), Some("Weather"));
    assert_eq!(weather.stop_reason, RunEnd::Guardrail);
    // Only the routing call was made: the scene's model never saw the question.
    assert_eq!(client.requests().len(), 1);

    let sums = router
        .run(Vec::new(), QUESTION, &ToolContext::new())
        .await
        .expect("a record");
    assert_eq!(sums.scene.as_deref(), Some("Calculator"));
    assert_eq!(sums.response, "Mail [redacted email] for sums.");
}
