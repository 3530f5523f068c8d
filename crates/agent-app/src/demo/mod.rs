//! `agentry demo`: the Travel Assistant, ten turns of one conversation that
//! show tool calls, questions for missing information, parallel calls, the
//! iteration limit with its forced answer, and a tool error handled.

use std::sync::Arc;
use std::time::{Duration, Instant};

mod check;

use agent_core::{
    AgentEvent, AgentRunResult, LlmClient, Message, ModelCatalog, StopCause, ToolContext, ToolRegistry, Usage,
};
use agent_runner::{Agent, AgentConfig, RequestOptions, RunConfig, SceneRouter};
use agent_tools_travel::{NaiveDate, TravelTools};
use futures::StreamExt;

pub use check::{CheckReport, TurnVerdict, check_demo};

use crate::console::{Console, count, stop_note};
use crate::error::AppError;
use crate::scenes::{SceneSpecs, TurnRunner};
use crate::tools::ToolBox;

/// One scripted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoTurn {
    /// What the user says.
    pub prompt: &'static str,
    /// What it shows.
    pub shows: &'static str,
}

/// The ten turns, in order.
pub const TURNS: [DemoTurn; 10] = [
    DemoTurn {
        prompt: "What do you do?",
        shows: "an answer without tools",
    },
    DemoTurn {
        prompt: "What's the weather in Tokyo?",
        shows: "a tool call",
    },
    DemoTurn {
        prompt: "What's the weather in my favorite city?",
        shows: "a question for missing information",
    },
    DemoTurn {
        prompt: "My favorite city is New York",
        shows: "memory of the conversation",
    },
    DemoTurn {
        prompt: "How much is a flight from NYC to Paris?",
        shows: "a question for the missing date",
    },
    DemoTurn {
        prompt: "It's June 15",
        shows: "the date filled in from the conversation",
    },
    DemoTurn {
        prompt: "I want to go from London to Tokyo next month, what's the weather there and how much is the flight?",
        shows: "two tools",
    },
    DemoTurn {
        prompt: "Plan a trip from NYC to Paris: weather, flight price and how many euros 1000 dollars buys",
        shows: "three tools",
    },
    DemoTurn {
        prompt: "Tell me the weather in Australia, Belarus, Caribbean, Denmark, Egypt, France, Greece and Hungary",
        shows: "the iteration limit and the forced answer",
    },
    DemoTurn {
        prompt: "Divide 17 by the secret number!",
        shows: "a tool error handled",
    },
];

/// The turn (0-based) that shows the iteration limit.
pub const LIMIT_TURN: usize = 8;

/// How the demo runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DemoOptions {
    /// Today, for the system prompt and the travel tools.
    pub today: NaiveDate,
    /// The agent's loop policies and request options; its
    /// `run.max_iterations` holds for every turn but the limit turn.
    pub agent: AgentConfig,
    /// Iterations of the limit turn: small, so the limit is what happens.
    pub limit_turn_max_iterations: u32,
    /// Replaces the demo's system prompt ([`system_prompt`]).
    pub system_prompt: Option<String>,
    /// Start the conversation with one worked example (a weather question,
    /// its tool call, the tool's real result and the answer). Small local
    /// models follow the tools far more reliably with one example to copy.
    pub worked_example: bool,
    /// Run every turn through these scenes (the `[scenes]` of the
    /// configuration) over the travel and math tools, instead of one agent.
    pub scenes: Option<SceneSpecs>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            today: chrono::Local::now().date_naive(),
            agent: default_agent_config(),
            limit_turn_max_iterations: 1,
            system_prompt: None,
            worked_example: true,
            scenes: None,
        }
    }
}

/// The demo's agent: 5 iterations a turn, 256 tokens a call, greedy
/// decoding (temperature 0) and prompt caching.
pub fn default_agent_config() -> AgentConfig {
    AgentConfig {
        run: RunConfig {
            max_iterations: 5,
            ..RunConfig::default()
        },
        request: RequestOptions {
            max_tokens: Some(256),
            temperature: Some(0.0),
            stop: Vec::new(),
            prompt_caching: true,
        },
    }
}

/// `options.agent` with `max_iterations` iterations a turn.
fn agent_config(options: &DemoOptions, max_iterations: u32) -> AgentConfig {
    let mut config = options.agent.clone();
    config.run.max_iterations = max_iterations;
    config
}

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

/// The demo's system prompt: today's date, one line per tool with an
/// example call (small local models copy examples far better than they
/// follow abstract rules), and the rule to ask for a missing city or date.
pub fn system_prompt(today: NaiveDate) -> String {
    format!(
        "You are a travel assistant. Today is {weekday}, {long} ({iso}).\n\
         You do not know the current weather, flight prices or exchange rates: for them you must call a tool and \
         answer from its result, every time, even if a similar question came before:\n\
         - weather in a city: call get_weather, e.g. {{\"location\": \"Rome\"}}\n\
         - flight price: call get_flight_prices with the origin, the destination and the date as the user \
         said them\n\
         - currency: call get_currency_exchange, e.g. {{\"from\": \"USD\", \"to\": \"EUR\", \"amount\": 100}}\n\
         Use only the cities and dates the user said. If the user has not said which city, or the date of a \
         flight, do not call a tool: ask the user for it in one short question. When a tool returns an error, \
         tell the user, or ask them for what is missing.\n\
         When a question needs several tools, call them all in the same reply, one call per item.\n\
         Answer in one or two short sentences, with the numbers from the tool results.",
        weekday = today.format("%A"),
        long = today.format("%B %-d, %Y"),
        iso = today.format("%Y-%m-%d"),
    )
}

fn agent(
    client: &Arc<dyn LlmClient>,
    catalog: &Arc<ModelCatalog>,
    tools: &ToolBox,
    options: &DemoOptions,
    max_iterations: u32,
) -> Agent {
    Agent::builder(Arc::clone(client))
        .name("travel-assistant")
        .description("Weather, flight prices and currency exchange.")
        .system_prompt(
            options
                .system_prompt
                .clone()
                .unwrap_or_else(|| system_prompt(options.today)),
        )
        .tools(tools.registry())
        .catalog(Arc::clone(catalog))
        .agent_config(agent_config(options, max_iterations))
        .build()
}

/// The demo's scene router of `specs` over the travel tools of `tools` and
/// the math tools, its scenes' agents set up as [`agent`] sets up the demo's.
fn scene_router(
    specs: &SceneSpecs,
    client: &Arc<dyn LlmClient>,
    catalog: &Arc<ModelCatalog>,
    tools: &ToolBox,
    options: &DemoOptions,
    max_iterations: u32,
) -> Result<SceneRouter, AppError> {
    let mut providers = tools.providers().to_vec();
    providers.push(Arc::new(agent_tools_math::tool_set()));
    let base = options
        .system_prompt
        .clone()
        .unwrap_or_else(|| system_prompt(options.today));
    let config = agent_config(options, max_iterations);
    let shared_catalog = Arc::clone(catalog);
    let mut builder =
        crate::scenes::router_builder(specs, Arc::clone(client), &providers, &base)?.catalog(Arc::clone(catalog));
    if let Some(max_tokens) = config.request.max_tokens {
        builder = builder.routing_max_tokens(max_tokens);
    }
    if let Some(temperature) = config.request.temperature {
        builder = builder.routing_temperature(temperature);
    }
    builder
        .configure(move |builder| {
            builder
                .catalog(Arc::clone(&shared_catalog))
                .agent_config(config.clone())
        })
        .build()
        .map_err(|error| AppError::RunFailed(format!("the demo's scenes cannot be used: {error}")))
}

/// The worked example: "What's the weather in Rome?", a `get_weather` call,
/// the tool's real result, and an answer giving its figures. (An example of
/// asking back was tried as well: after it, the 0.5B model stopped calling
/// tools altogether, so asking is left to the tools' errors.)
async fn worked_example(tools: &ToolBox) -> Vec<Message> {
    let arguments = serde_json::json!({"location": "Rome"});
    let execution = tools
        .registry()
        .execute("get_weather", &arguments, &ToolContext::new())
        .await;
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
    let call = agent_core::ToolCall::new("example_1", "get_weather", arguments);
    vec![
        Message::user("What's the weather in Rome?"),
        Message::Assistant(agent_core::AssistantMessage::with_tool_calls("", vec![call])),
        Message::tool(if execution.outcome.is_ok() {
            agent_core::ToolResult::success("example_1", "get_weather", content)
        } else {
            agent_core::ToolResult::error("example_1", "get_weather", content)
        }),
        Message::assistant(answer),
    ]
}

/// Runs the ten turns as one conversation, rendering each on `console`.
/// Returns every turn's record; a turn that fails is reported and the demo
/// goes on.
pub async fn run_demo(
    client: Arc<dyn LlmClient>,
    catalog: Arc<ModelCatalog>,
    options: &DemoOptions,
    console: &mut Console,
) -> Result<Vec<DemoTurnReport>, AppError> {
    let write = |error: std::io::Error| AppError::io("writing the demo", error);
    let tools = ToolBox::from_providers(vec![Arc::new(TravelTools::with_today(options.today).tool_set())])?;
    let regular = agent(&client, &catalog, &tools, options, options.agent.run.max_iterations);
    let limited = agent(&client, &catalog, &tools, options, options.limit_turn_max_iterations);
    let routers = match &options.scenes {
        Some(specs) => Some((
            scene_router(
                specs,
                &client,
                &catalog,
                &tools,
                options,
                options.agent.run.max_iterations,
            )?,
            scene_router(
                specs,
                &client,
                &catalog,
                &tools,
                options,
                options.limit_turn_max_iterations,
            )?,
        )),
        None => None,
    };
    console
        .line(&format!(
            "Travel Assistant demo · {}/{} · today is {} · {} turns",
            client.provider(),
            client.model(),
            options.today.format("%Y-%m-%d"),
            TURNS.len()
        ))
        .map_err(write)?;
    let started = Instant::now();
    let mut history: Vec<Message> = if options.worked_example {
        let example = worked_example(&tools).await;
        console
            .line("(the conversation opens with one worked example — a weather question, its get_weather call and the answer — which small local models copy)")
            .map_err(write)?;
        example
    } else {
        Vec::new()
    };
    let mut reports = Vec::with_capacity(TURNS.len());
    for (index, turn) in TURNS.iter().enumerate() {
        let agent: &dyn TurnRunner = match (&routers, index == LIMIT_TURN) {
            (Some((_, limited)), true) => limited,
            (Some((regular, _)), false) => regular,
            (None, true) => &limited,
            (None, false) => &regular,
        };
        console.line("").map_err(write)?;
        console
            .line(&format!("━━ {}/{} · {} ━━", index + 1, TURNS.len(), turn.shows))
            .map_err(write)?;
        if index == LIMIT_TURN {
            console
                .line(&format!(
                    "(this turn runs with max_iterations = {})",
                    options.limit_turn_max_iterations
                ))
                .map_err(write)?;
        }
        console.line(&format!("you> {}", turn.prompt)).map_err(write)?;
        let turn_started = Instant::now();
        console.begin();
        let mut events = Box::pin(agent.run_stream(history.clone(), turn.prompt, ToolContext::new()));
        let mut result = None;
        while let Some(event) = events.next().await {
            if let AgentEvent::RunFinished { result: finished } = event {
                console.clear_spinners();
                console.end_line().map_err(write)?;
                result = Some(*finished);
                break;
            }
            console.event(&event).map_err(write)?;
        }
        let Some(result) = result else {
            return Err(AppError::RunFailed(format!(
                "turn {} ended without a result",
                index + 1
            )));
        };
        if !console.text_seen() && !result.response.trim().is_empty() {
            console.line(result.response.trim()).map_err(write)?;
        }
        let elapsed = turn_started.elapsed();
        let mut summary = format!(
            "   [{} · {} · {} · {:.1} s]",
            count(result.iterations, "iteration"),
            count(result.tool_calls.len() as u64, "tool call"),
            count(result.usage.total_tokens(), "token"),
            elapsed.as_secs_f64()
        );
        if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
            summary = format!("   {note}\n{summary}");
        }
        console.line(&summary).map_err(write)?;
        if result.stop_reason != StopCause::Error {
            history.clone_from(&result.messages);
        }
        reports.push(DemoTurnReport {
            prompt: turn.prompt,
            result,
            elapsed,
        });
    }
    let usage: Usage = reports.iter().map(|report| report.result.usage).sum();
    let cost: f64 = reports.iter().filter_map(|report| report.result.cost_usd).sum();
    let calls: usize = reports.iter().map(|report| report.result.tool_calls.len()).sum();
    console.line("").map_err(write)?;
    console
        .line(&format!(
            "done: {} · {} · {} ({} in, {} from cache, {} out) · ${cost:.6} · {:.1} s",
            count(reports.len() as u64, "turn"),
            count(calls as u64, "tool call"),
            count(usage.total_tokens(), "token"),
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.output_tokens,
            started.elapsed().as_secs_f64()
        ))
        .map_err(write)?;
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use agent_testing::{ScriptedClient, response};
    use serde_json::json;

    use super::*;
    use crate::console::SharedBuffer;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 6, 1).unwrap_or_default()
    }

    #[test]
    fn the_system_prompt_gives_the_date_and_asks_for_missing_information() {
        let prompt = system_prompt(today());
        assert!(prompt.contains("Saturday, June 1, 2030 (2030-06-01)"), "{prompt}");
        assert!(prompt.contains("ask the user for it"), "{prompt}");
        assert!(
            prompt.contains("call get_weather, e.g. {\"location\": \"Rome\"}"),
            "{prompt}"
        );
    }

    #[tokio::test]
    async fn the_demo_runs_its_turns_through_the_configured_scenes() {
        let entry = |description: &str, tools: &[&str]| crate::scenes::SceneEntry {
            description: description.to_owned(),
            system_prompt: None,
            prompt_template: None,
            tools: tools.iter().map(|tool| (*tool).to_owned()).collect(),
            context: std::collections::BTreeMap::new(),
            current_date: false,
        };
        let specs = SceneSpecs {
            scenes: vec![
                crate::scenes::SceneSpec {
                    name: "weather".into(),
                    entry: entry("Weather in a city", &["get_weather"]),
                    template: None,
                },
                crate::scenes::SceneSpec {
                    name: "math".into(),
                    entry: entry("Arithmetic", &["math", "divide_by_secret_number"]),
                    template: None,
                },
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
        let buffer = SharedBuffer::new();
        let mut console = Console::new(buffer.clone());
        let options = DemoOptions {
            today: today(),
            worked_example: false,
            scenes: Some(specs),
            ..DemoOptions::default()
        };
        let reports = run_demo(client.clone(), Arc::new(ModelCatalog::new()), &options, &mut console)
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
        let out = buffer.contents();
        assert!(out.contains("⇢ scene weather") && out.contains("⇢ scene math"), "{out}");
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
        let buffer = SharedBuffer::new();
        let mut console = Console::new(buffer.clone()).with_text_prefix("assistant> ");
        let options = DemoOptions {
            today: today(),
            ..DemoOptions::default()
        };
        let reports = run_demo(client.clone(), Arc::new(ModelCatalog::new()), &options, &mut console)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports.len(), 10);
        assert_eq!(reports[1].tools_called(), ["get_weather"]);
        assert_eq!(reports[LIMIT_TURN].result.stop_reason, StopCause::MaxIterations);
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
        let out = buffer.contents();
        assert!(
            out.contains("you> What's the weather in Tokyo?\n  → get_weather"),
            "{out}"
        );
        assert!(out.contains("assistant> Sunny in Tokyo."), "{out}");
        assert!(out.contains("worked example"), "{out}");
        assert!(out.contains("  → get_weather {\"location\":\"Tokyo\"}"), "{out}");
        assert!(out.contains("[stop: max_iterations"), "{out}");
        assert!(
            out.contains("  ✗ divide_by_secret_number failed: division by zero"),
            "{out}"
        );
        assert!(out.contains("done: 10 turns · 3 tool calls"), "{out}");
        assert!(out.contains("[1 iteration · 0 tool calls · "), "{out}");
        assert!(out.contains("[2 iterations · 1 tool call · "), "{out}");
    }
}
