//! Running the ten turns as one conversation: [`TravelAssistant`] (the
//! agents, or scene routers, over the travel tools) and [`run_turns`], which
//! reports every step to an observer as it happens, so that a caller can
//! render the demo live.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{
    AgentEvent, AgentRunResult, AssistantMessage, LlmClient, Message, ModelCatalog, RegistryError, RunEnd, ToolCall,
    ToolContext, ToolProvider, ToolRegistry, ToolResult, Usage,
};
use agent_runner::{Agent, BuildError, ChatSession, SceneError, SceneRouter};
use agent_tools::ToolBox;
use agent_tools_travel::{NaiveDate, TravelTools};
use futures::StreamExt;
use futures::stream::BoxStream;

use crate::options::{DemoOptions, DemoScenes};
use crate::turns::{DemoTurn, LIMIT_TURN, TURNS};

/// What one turn did.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoTurnReport {
    /// The prompt.
    pub prompt: &'static str,
    /// The run's record.
    pub result: AgentRunResult,
    /// How long it took.
    pub elapsed: Duration,
}

impl DemoTurnReport {
    /// Names of the tools called, in order.
    pub fn tools_called(&self) -> Vec<&str> {
        self.result.tool_calls.iter().map(|call| call.name.as_str()).collect()
    }
}

/// What the turns of a run added up to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DemoTotals {
    /// Turns run.
    pub turns: usize,
    /// Tool calls made, over every turn.
    pub tool_calls: usize,
    /// Tokens used, over every turn.
    pub usage: Usage,
    /// Estimated cost in USD of the turns whose model has a price.
    pub cost_usd: f64,
    /// Turns that ended with `stop_reason` `error`.
    pub failed: usize,
}

impl DemoTotals {
    /// The totals of `reports`.
    pub fn of(reports: &[DemoTurnReport]) -> Self {
        Self {
            turns: reports.len(),
            tool_calls: reports.iter().map(|report| report.result.tool_calls.len()).sum(),
            usage: reports.iter().map(|report| report.result.usage).sum(),
            cost_usd: reports.iter().filter_map(|report| report.result.cost_usd).sum(),
            failed: reports
                .iter()
                .filter(|report| report.result.stop_reason == RunEnd::Error)
                .count(),
        }
    }
}

/// What the demo reports as it runs, in this order: `Started`, then for
/// each turn `TurnStarted`, its `Agent` events and `TurnFinished`, then
/// `Finished`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum DemoEvent<'a> {
    /// The demo starts (before the worked example is made).
    Started {
        /// The model's provider.
        provider: &'a str,
        /// The model.
        model: &'a str,
        /// The date the demo takes as today.
        today: NaiveDate,
        /// How many turns will run.
        turns: usize,
        /// Whether the conversation opens with the worked example.
        worked_example: bool,
    },
    /// A turn starts.
    TurnStarted {
        /// The turn, 0-based.
        index: usize,
        /// Its prompt and what it shows.
        turn: &'a DemoTurn,
        /// Model calls the turn may make before its answer is forced.
        max_iterations: u32,
        /// Whether this is the turn that shows the iteration limit.
        limit_turn: bool,
    },
    /// An event of the turn's run, as it happens (text deltas, tool calls
    /// and results, the scene entered, ...). Its `RunFinished` is not
    /// passed on: `TurnFinished` follows with the turn's record.
    Agent {
        /// The turn, 0-based.
        index: usize,
        /// The event.
        event: &'a AgentEvent,
    },
    /// A turn ended.
    TurnFinished {
        /// The turn, 0-based.
        index: usize,
        /// What it did.
        report: &'a DemoTurnReport,
    },
    /// Every turn ran.
    Finished {
        /// Every turn's record, in order.
        reports: &'a [DemoTurnReport],
        /// Time since `Started`.
        elapsed: Duration,
    },
}

/// Why the travel assistant could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The travel tools could not be registered.
    #[error("the travel tools cannot be registered: {0}")]
    Tools(#[source] RegistryError),
    /// The agent's configuration is invalid.
    #[error("the travel assistant cannot be built: {0}")]
    Agent(#[source] BuildError),
    /// The scenes could not be built (a tool they name does not exist, an
    /// unknown default, ...).
    #[error("the demo's scenes cannot be used: {0}")]
    Scenes(#[source] SceneError),
}

/// Why a demo run stopped early. (A turn that fails is not an error: its
/// record says why, with `stop_reason` `error`, and the demo goes on.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoError<E = Infallible> {
    /// The assistant could not be set up.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// A turn's event stream ended without its record.
    #[error("turn {turn} ended without a result")]
    Unfinished {
        /// The turn, 1-based.
        turn: usize,
    },
    /// The observer failed (e.g. writing to a closed terminal); the demo
    /// stopped there.
    #[error("reporting the demo failed: {0}")]
    Observer(#[source] E),
}

/// Runs a turn: one agent, or a scene router.
#[derive(Debug)]
enum Runner {
    Agent(Agent),
    Scenes(SceneRouter),
}

impl Runner {
    fn run_stream(&self, history: Vec<Message>, prompt: &str) -> BoxStream<'static, AgentEvent> {
        match self {
            Self::Agent(agent) => Box::pin(agent.run(prompt).history(history).stream()),
            Self::Scenes(router) => Box::pin(router.run_stream(history, prompt, ToolContext::new())),
        }
    }
}

/// The travel assistant, set up for the demo: the travel tools on
/// [`DemoOptions::today`], and the agent (or scene router) of the regular
/// turns and the one of the iteration-limit turn.
pub struct TravelAssistant {
    client: Arc<dyn LlmClient>,
    registry: Arc<ToolBox>,
    regular: Runner,
    limited: Runner,
    options: DemoOptions,
}

impl std::fmt::Debug for TravelAssistant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TravelAssistant")
            .field("provider", &self.client.provider())
            .field("model", &self.client.model())
            .field("regular", &self.regular)
            .field("limited", &self.limited)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TravelAssistant {
    /// The assistant on `client`, with `catalog`'s prices and context
    /// windows, set up as `options` says.
    pub fn new(
        client: Arc<dyn LlmClient>,
        catalog: Arc<ModelCatalog>,
        options: DemoOptions,
    ) -> Result<Self, SetupError> {
        let travel: Arc<dyn ToolProvider> = Arc::new(TravelTools::with_today(options.today).tool_set());
        let registry = Arc::new(
            ToolBox::builder()
                .provider(Arc::clone(&travel))
                .build()
                .map_err(SetupError::Tools)?,
        );
        let setup = Setup {
            client: &client,
            catalog,
            registry: &registry,
            travel: &travel,
            options: &options,
        };
        let regular = setup.runner(options.agent.run.max_iterations)?;
        let limited = setup.runner(options.limit_turn_max_iterations)?;
        Ok(Self {
            client,
            registry,
            regular,
            limited,
            options,
        })
    }

    /// The options it was set up with.
    pub fn options(&self) -> &DemoOptions {
        &self.options
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.client
    }

    /// The travel tools the turns use.
    pub fn registry(&self) -> Arc<dyn ToolRegistry> {
        self.registry.clone()
    }

    /// Runs the ten turns as one conversation, passing each step to
    /// `observe` as it happens (see [`DemoEvent`]), and returns every
    /// turn's record. A turn that fails is recorded and the demo goes on,
    /// without it in the history; an error of `observe` stops the demo.
    pub async fn run<E>(
        &self,
        mut observe: impl FnMut(DemoEvent<'_>) -> Result<(), E>,
    ) -> Result<Vec<DemoTurnReport>, DemoError<E>> {
        let options = &self.options;
        observe(DemoEvent::Started {
            provider: self.client.provider(),
            model: self.client.model(),
            today: options.today,
            turns: TURNS.len(),
            worked_example: options.worked_example,
        })
        .map_err(DemoError::Observer)?;
        let started = Instant::now();
        let mut conversation = if options.worked_example {
            ChatSession::with_history(worked_example(self.registry.as_ref()).await)
        } else {
            ChatSession::new()
        };
        let mut reports = Vec::with_capacity(TURNS.len());
        for (index, turn) in TURNS.iter().enumerate() {
            let limit_turn = index == LIMIT_TURN;
            let (runner, max_iterations) = if limit_turn {
                (&self.limited, options.limit_turn_max_iterations)
            } else {
                (&self.regular, options.agent.run.max_iterations)
            };
            observe(DemoEvent::TurnStarted {
                index,
                turn,
                max_iterations,
                limit_turn,
            })
            .map_err(DemoError::Observer)?;
            let turn_started = Instant::now();
            let mut events = runner.run_stream(conversation.messages.clone(), turn.prompt);
            let mut result = None;
            while let Some(event) = events.next().await {
                if let AgentEvent::RunFinished { result: finished } = event {
                    result = Some(*finished);
                    break;
                }
                observe(DemoEvent::Agent { index, event: &event }).map_err(DemoError::Observer)?;
            }
            let Some(result) = result else {
                return Err(DemoError::Unfinished { turn: index + 1 });
            };
            // A failed turn stays out of the history.
            conversation.record(&result);
            let report = DemoTurnReport {
                prompt: turn.prompt,
                result,
                elapsed: turn_started.elapsed(),
            };
            observe(DemoEvent::TurnFinished { index, report: &report }).map_err(DemoError::Observer)?;
            reports.push(report);
        }
        observe(DemoEvent::Finished {
            reports: &reports,
            elapsed: started.elapsed(),
        })
        .map_err(DemoError::Observer)?;
        Ok(reports)
    }
}

/// Sets up a [`TravelAssistant`] on `client` and runs the ten turns as one
/// conversation: [`TravelAssistant::new`], then [`TravelAssistant::run`].
pub async fn run_turns<E>(
    client: Arc<dyn LlmClient>,
    catalog: Arc<ModelCatalog>,
    options: &DemoOptions,
    observe: impl FnMut(DemoEvent<'_>) -> Result<(), E>,
) -> Result<Vec<DemoTurnReport>, DemoError<E>> {
    TravelAssistant::new(client, catalog, options.clone())?
        .run(observe)
        .await
}

/// What the agents and scene routers are built from.
struct Setup<'a> {
    client: &'a Arc<dyn LlmClient>,
    catalog: Arc<ModelCatalog>,
    registry: &'a Arc<ToolBox>,
    travel: &'a Arc<dyn ToolProvider>,
    options: &'a DemoOptions,
}

impl Setup<'_> {
    /// The agent, or the scene router when the options have scenes, of
    /// turns with `max_iterations` iterations.
    fn runner(&self, max_iterations: u32) -> Result<Runner, SetupError> {
        match &self.options.scenes {
            Some(scenes) => self.scene_router(scenes, max_iterations).map(Runner::Scenes),
            None => self.agent(max_iterations).map(Runner::Agent),
        }
    }

    fn agent(&self, max_iterations: u32) -> Result<Agent, SetupError> {
        Agent::builder(Arc::clone(self.client))
            .name("travel-assistant")
            .description("Weather, flight prices and currency exchange.")
            .system_prompt(self.options.effective_system_prompt())
            .tools(self.registry.clone())
            .catalog(Arc::clone(&self.catalog))
            .agent_config(self.options.agent_config(max_iterations))
            .try_build()
            .map_err(SetupError::Agent)
    }

    /// A router of `scenes` over the travel and math tools, its scenes'
    /// agents set up as [`agent`](Self::agent) sets up the demo's.
    fn scene_router(&self, scenes: &DemoScenes, max_iterations: u32) -> Result<SceneRouter, SetupError> {
        let config = self.options.agent_config(max_iterations);
        let math: Arc<dyn ToolProvider> = Arc::new(agent_tools_math::tool_set());
        let mut builder = SceneRouter::builder(Arc::clone(self.client))
            .providers([Arc::clone(self.travel), math])
            .scenes(scenes.scenes.iter().cloned())
            .catalog(Arc::clone(&self.catalog));
        if let Some(default) = &scenes.default {
            builder = builder.default_scene(default.clone());
        }
        if let Some(max_tokens) = config.request.max_tokens {
            builder = builder.routing_max_tokens(max_tokens);
        }
        if let Some(temperature) = config.request.temperature {
            builder = builder.routing_temperature(temperature);
        }
        let catalog = Arc::clone(&self.catalog);
        builder
            .configure(move |builder| builder.catalog(Arc::clone(&catalog)).agent_config(config.clone()))
            .build()
            .map_err(SetupError::Scenes)
    }
}

/// The worked example the conversation opens with: "What's the weather in
/// Rome?", a `get_weather` call run on `tools`, the tool's real result, and
/// an answer giving its figures. (An example of asking back was tried as
/// well: after it, the 0.5B model stopped calling tools altogether, so
/// asking is left to the tools' errors.)
pub async fn worked_example(tools: &dyn ToolRegistry) -> Vec<Message> {
    let arguments = serde_json::json!({"location": "Rome"});
    let execution = tools.execute("get_weather", &arguments, &ToolContext::new()).await;
    let content = match &execution.outcome {
        Ok(output) => output.to_content(),
        Err(error) => error.to_string(),
    };
    let weather: serde_json::Value = serde_json::from_str(&content).unwrap_or_default();
    let answer = match (weather["temperature"].as_f64(), weather["conditions"].as_str()) {
        (Some(temperature), Some(conditions)) => {
            format!("Right now in Rome it is {temperature:.1} °C and {conditions}.")
        }
        _ => "I could not get the weather for Rome.".to_owned(),
    };
    let call = ToolCall::new("example_1", "get_weather", arguments);
    vec![
        Message::user("What's the weather in Rome?"),
        Message::Assistant(AssistantMessage::with_tool_calls("", vec![call])),
        Message::tool(if execution.outcome.is_ok() {
            ToolResult::success("example_1", "get_weather", content)
        } else {
            ToolResult::error("example_1", "get_weather", content)
        }),
        Message::assistant(answer),
    ]
}

#[cfg(test)]
mod tests {
    use agent_runner::Scene;
    use agent_testing::{ScriptedClient, response};
    use serde_json::json;

    use super::*;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 6, 1).unwrap_or_default()
    }

    /// Every event's name, turn by turn, as the observer saw them.
    fn collect(log: &mut Vec<String>) -> impl FnMut(DemoEvent<'_>) -> Result<(), Infallible> + '_ {
        move |event| {
            log.push(match event {
                DemoEvent::Started { turns, .. } => format!("started {turns}"),
                DemoEvent::TurnStarted {
                    index, max_iterations, ..
                } => format!("turn {index} ({max_iterations})"),
                DemoEvent::Agent { index, event } => match event {
                    AgentEvent::ToolCallRequested { call, .. } => format!("{index} call {}", call.name),
                    AgentEvent::SceneEntered { scene, .. } => format!("{index} scene {scene}"),
                    _ => String::new(),
                },
                DemoEvent::TurnFinished { index, report } => format!("finished {index}: {}", report.result.response),
                DemoEvent::Finished { reports, .. } => format!("done {}", reports.len()),
            });
            Ok(())
        }
    }

    #[tokio::test]
    async fn ten_turns_share_one_conversation_and_the_limit_turn_is_limited() {
        let mut client = ScriptedClient::new().with_model("scripted");
        for (index, _) in TURNS.iter().enumerate() {
            client = match index {
                1 => client
                    .respond(response::tool_calls([("get_weather", json!({"location": "Tokyo"}))]))
                    .respond(response::text("Sunny in Tokyo.")),
                LIMIT_TURN => client
                    .respond(response::tool_calls([(
                        "get_weather",
                        json!({"location": "Australia"}),
                    )]))
                    .respond(response::text("Australia is warm; I ran out of steps for the rest.")),
                9 => client
                    .respond(response::tool_calls([(
                        "divide_by_secret_number",
                        json!({"number": 17}),
                    )]))
                    .respond(response::text("That tool cannot divide: the secret number is 0.")),
                _ => client.respond(response::text(format!("Answer {}.", index + 1))),
            };
        }
        let client = Arc::new(client);
        let options = DemoOptions {
            today: today(),
            worked_example: true,
            ..DemoOptions::default()
        };
        let mut log = Vec::new();
        let reports = run_turns(
            client.clone(),
            Arc::new(ModelCatalog::new()),
            &options,
            collect(&mut log),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports.len(), 10);
        assert_eq!(reports[1].tools_called(), ["get_weather"]);
        assert_eq!(reports[LIMIT_TURN].result.stop_reason, RunEnd::MaxIterations);
        assert!(reports[9].result.tool_calls[0].is_error);
        // History is carried: the last request holds the worked example and
        // every earlier user turn.
        let last = client.requests().pop().unwrap_or_default();
        let users = last
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        assert_eq!(users, 11);
        assert_eq!(last.messages[0], Message::user("What's the weather in Rome?"));
        assert_eq!(last.messages[2].as_tool_result().map(|r| r.is_error), Some(false));
        // The observer saw every step, in order.
        log.retain(|line| !line.is_empty());
        assert_eq!(
            log[..5],
            [
                "started 10",
                "turn 0 (5)",
                "finished 0: Answer 1.",
                "turn 1 (5)",
                "1 call get_weather"
            ]
        );
        assert!(log.contains(&"turn 8 (1)".to_owned()), "{log:?}");
        assert!(log.contains(&"finished 1: Sunny in Tokyo.".to_owned()), "{log:?}");
        assert_eq!(log.last().map(String::as_str), Some("done 10"));
        let totals = DemoTotals::of(&reports);
        assert_eq!((totals.turns, totals.tool_calls, totals.failed), (10, 3, 0));
    }

    #[tokio::test]
    async fn a_failed_turn_is_recorded_and_left_out_of_the_history() {
        let mut client = ScriptedClient::new().fail(agent_core::LlmError::invalid_request("no"));
        for index in 1..TURNS.len() {
            client = client.respond(response::text(format!("Answer {}.", index + 1)));
        }
        let client = Arc::new(client);
        let options = DemoOptions {
            today: today(),
            worked_example: false,
            ..DemoOptions::default()
        };
        let mut log = Vec::new();
        let reports = run_turns(
            client.clone(),
            Arc::new(ModelCatalog::new()),
            &options,
            collect(&mut log),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports[0].result.stop_reason, RunEnd::Error);
        assert_eq!(DemoTotals::of(&reports).failed, 1);
        // The second turn starts from an empty history.
        assert_eq!(client.requests()[1].messages, [Message::user(TURNS[1].prompt)]);
    }

    #[tokio::test]
    async fn the_observer_s_error_stops_the_demo() {
        let client = Arc::new(ScriptedClient::new().respond(response::text("Hi.")));
        let options = DemoOptions {
            today: today(),
            worked_example: false,
            ..DemoOptions::default()
        };
        let error = run_turns(
            client.clone(),
            Arc::new(ModelCatalog::new()),
            &options,
            |event| match event {
                DemoEvent::TurnFinished { .. } => Err("the terminal is gone"),
                _ => Ok(()),
            },
        )
        .await
        .err();
        assert!(
            matches!(error, Some(DemoError::Observer("the terminal is gone"))),
            "{error:?}"
        );
        assert_eq!(client.requests().len(), 1);
    }

    #[tokio::test]
    async fn the_turns_run_through_scenes_over_the_travel_and_math_tools() {
        let scenes = DemoScenes {
            scenes: vec![
                Scene::new("weather", "Weather in a city").tools(["get_weather"]),
                Scene::new("math", "Arithmetic").tools(["math", "divide_by_secret_number"]),
            ],
            default: Some("weather".into()),
        };
        let mut client = ScriptedClient::new().with_model("scripted");
        for index in 0..TURNS.len() {
            client = match index {
                1 => client
                    .respond(response::tool_calls([("Weather", json!({}))]))
                    .respond(response::tool_calls([("get_weather", json!({"location": "Tokyo"}))]))
                    .respond(response::text("Sunny in Tokyo.")),
                9 => client
                    .respond(response::tool_calls([("math_scene", json!({}))]))
                    .respond(response::text("The secret number is 0.")),
                _ => client
                    .respond(response::text("nothing fits"))
                    .respond(response::text(format!("Answer {}.", index + 1))),
            };
        }
        let client = Arc::new(client);
        let options = DemoOptions {
            today: today(),
            worked_example: false,
            scenes: Some(scenes),
            ..DemoOptions::default()
        };
        let mut log = Vec::new();
        let reports = run_turns(
            client.clone(),
            Arc::new(ModelCatalog::new()),
            &options,
            collect(&mut log),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports.len(), 10);
        assert_eq!(reports[1].result.scene.as_deref(), Some("weather"));
        assert_eq!(reports[1].tools_called(), ["get_weather"]);
        assert_eq!(reports[9].result.scene.as_deref(), Some("math"));
        // Unmatched answers went to the default scene.
        assert_eq!(reports[0].result.scene.as_deref(), Some("weather"));
        let requests = client.requests();
        let names = |request: &agent_core::ChatRequest| -> Vec<String> {
            request.tools.iter().map(|tool| tool.name.clone()).collect()
        };
        assert_eq!(names(&requests[0]), ["weather", "math"]);
        assert_eq!(names(&requests[1]), ["get_weather"]);
        let math = requests.last().map(names).unwrap_or_default();
        assert_eq!(math, ["divide_by_secret_number", "calculator", "arithmetic"]);
        assert!(log.contains(&"1 scene weather".to_owned()), "{log:?}");
        assert!(log.contains(&"9 scene math".to_owned()), "{log:?}");
    }

    #[test]
    fn scenes_naming_an_unknown_tool_are_a_setup_error() {
        let options = DemoOptions {
            today: today(),
            scenes: Some(DemoScenes {
                scenes: vec![Scene::new("web", "Pages").tools(["fetch_url"])],
                default: None,
            }),
            ..DemoOptions::default()
        };
        let error = TravelAssistant::new(Arc::new(ScriptedClient::new()), Arc::new(ModelCatalog::new()), options).err();
        let message = error.map(|error| error.to_string()).unwrap_or_default();
        assert!(
            message.starts_with("the demo's scenes cannot be used: ") && message.contains("fetch_url"),
            "{message}"
        );
    }
}
