//! `agentry demo`: the Travel Assistant of the `agent-travel-assistant`
//! crate (its ten turns, agents, scenes and checker live there), rendered
//! live on the [`Console`]: a header, each turn's heading, prompt, streamed
//! answer, tool calls and a summary line, and the totals.

use std::io;
use std::path::Path;
use std::sync::Arc;

use agent_core::{LlmClient, ModelCatalog, RunEnd};
use agent_travel_assistant::{
    DemoError, DemoEvent, DemoOptions, DemoScenes, DemoTotals, DemoTurnReport, NaiveDate, check_demo, run_turns,
};

use crate::args::DemoArgs;
use crate::assemble::{catalog_for, default_system_prompt};
use crate::error::{AppError, ConfigError, EXIT_FAILURE, EXIT_OK};
use crate::output::stdout_line;
use crate::providers::{Progress, build_client};
use agent_console::{Console, count, stop_note};
use agentry::config::{Env, SceneSpecs, Settings};

/// The demo's scenes from `[scenes]`: scenes without a prompt of their own
/// get the demo's system prompt (of `options`) and a line naming them.
pub fn scenes(specs: &SceneSpecs, options: &DemoOptions) -> Result<DemoScenes, ConfigError> {
    Ok(DemoScenes {
        scenes: crate::scenes::scene_list(specs, &options.effective_system_prompt())?,
        default: specs.default.clone(),
    })
}

/// The demo's options from `settings`: the agent of `run` and `chat` (the
/// same loop policies, budgets, grounding, tokens and system prompt, the
/// prompt written for the demo's today) and nothing prepended to the
/// conversation for the model to copy. `today`: the demo's date (default:
/// the system's).
pub fn options(settings: &Settings, today: Option<NaiveDate>) -> DemoOptions {
    let defaults = DemoOptions::default();
    let today = today.unwrap_or(defaults.today);
    let system_prompt = settings
        .config
        .agent
        .system_prompt
        .clone()
        .unwrap_or_else(|| default_system_prompt(today));
    DemoOptions {
        agent: settings.agent_config(),
        system_prompt: Some(system_prompt),
        worked_example: false,
        today,
        ..defaults
    }
}

/// Runs the ten turns as one conversation, rendering each on `console` as
/// it happens. Returns every turn's record; a turn that fails is reported
/// and the demo goes on.
pub async fn run_demo(
    client: Arc<dyn LlmClient>,
    catalog: Arc<ModelCatalog>,
    options: &DemoOptions,
    console: &mut Console,
) -> Result<Vec<DemoTurnReport>, AppError> {
    run_turns(client, catalog, options, |event| render(console, event))
        .await
        .map_err(|error| match error {
            DemoError::Observer(error) => AppError::io("writing the demo", error),
            other => AppError::RunFailed(other.to_string()),
        })
}

/// `agentry demo`; `quiet` (`--quiet`) shows no progress.
pub(crate) async fn run(args: DemoArgs, env: &Env, cwd: &Path, quiet: bool) -> Result<u8, AppError> {
    let settings = Settings::load(&args.provider.overrides(), env, cwd)?;
    let client = build_client(&settings, env, Progress::unless_quiet(quiet)).await?;
    let catalog = catalog_for(&settings, client.as_ref());
    let mut options = options(&settings, args.today);
    if let Some(specs) = settings.scene_specs()? {
        options.scenes = Some(scenes(&specs, &options)?);
    }
    let console = if quiet {
        Console::new(io::stdout())
    } else {
        Console::stdout()
    };
    let mut console = console.with_text_prefix("assistant> ");
    let reports = run_demo(client, catalog, &options, &mut console).await?;
    let failed = reports
        .iter()
        .filter(|report| report.result.stop_reason == RunEnd::Error)
        .count();
    if args.check {
        let checked = check_demo(&reports, options.today);
        stdout_line("")?;
        stdout_line(&checked.to_string())?;
        if let Some(min) = args.min_pass
            && checked.passed() < min
        {
            eprintln!(
                "error: {} of {} turns passed, fewer than --min-pass {min}",
                checked.passed(),
                reports.len()
            );
            return Ok(EXIT_FAILURE);
        }
    }
    if failed > 0 {
        eprintln!("error: {failed} of {} turns failed", reports.len());
        return Ok(EXIT_FAILURE);
    }
    Ok(EXIT_OK)
}

/// Writes one step of the demo.
fn render(console: &mut Console, event: DemoEvent<'_>) -> io::Result<()> {
    match event {
        DemoEvent::Started {
            provider,
            model,
            today,
            turns,
            worked_example,
        } => {
            console.line(&format!(
                "Travel Assistant demo · {provider}/{model} · today is {} · {turns} turns",
                today.format("%Y-%m-%d"),
            ))?;
            if worked_example {
                console.line("(the conversation opens with one worked example — a weather question, its get_weather call and the answer — which small local models copy)")?;
            }
            Ok(())
        }
        DemoEvent::TurnStarted {
            index,
            turn,
            max_iterations,
            limit_turn,
        } => {
            console.line("")?;
            console.line(&format!(
                "━━ {}/{} · {} ━━",
                index + 1,
                agent_travel_assistant::TURNS.len(),
                turn.shows
            ))?;
            if limit_turn {
                console.line(&format!("(this turn runs with max_iterations = {max_iterations})"))?;
            }
            console.line(&format!("you> {}", turn.prompt))?;
            console.begin();
            Ok(())
        }
        DemoEvent::Agent { event, .. } => console.event(event),
        DemoEvent::TurnFinished { report, .. } => {
            console.clear_spinners();
            console.end_line()?;
            let result = &report.result;
            if !console.text_seen() && !result.response.trim().is_empty() {
                console.line(result.response.trim())?;
            }
            let mut summary = format!(
                "   [{} · {} · {} · {:.1} s]",
                count(result.iterations, "iteration"),
                count(result.tool_calls.len() as u64, "tool call"),
                count(result.usage.total_tokens(), "token"),
                report.elapsed.as_secs_f64()
            );
            if let Some(note) = stop_note(result.stop_reason, result.stop_detail.as_deref()) {
                summary = format!("   {note}\n{summary}");
            }
            console.line(&summary)
        }
        DemoEvent::Finished { reports, elapsed } => {
            let totals = DemoTotals::of(reports);
            console.line("")?;
            console.line(&format!(
                "done: {} · {} · {} ({} in, {} from cache, {} out) · ${:.6} · {:.1} s",
                count(totals.turns as u64, "turn"),
                count(totals.tool_calls as u64, "tool call"),
                count(totals.usage.total_tokens(), "token"),
                totals.usage.input_tokens,
                totals.usage.cache_read_tokens,
                totals.usage.output_tokens,
                totals.cost_usd,
                elapsed.as_secs_f64()
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::RunEnd;
    use agent_testing::{ScriptedClient, response};
    use agent_travel_assistant::{LIMIT_TURN, NaiveDate, TURNS};
    use serde_json::json;

    use super::*;
    use agent_console::SharedBuffer;

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2030, 6, 1).unwrap_or_default()
    }

    #[tokio::test]
    async fn the_demo_runs_its_turns_through_the_configured_scenes() {
        let entry = |description: &str, tools: &[&str]| agentry::config::SceneEntry {
            description: description.to_owned(),
            system_prompt: None,
            prompt_template: None,
            tools: tools.iter().map(|tool| (*tool).to_owned()).collect(),
            context: std::collections::BTreeMap::new(),
            current_date: false,
            guardrails: None,
        };
        let specs = SceneSpecs {
            scenes: vec![
                agentry::config::SceneSpec {
                    name: "weather".into(),
                    entry: entry("Weather in a city", &["get_weather"]),
                    template: None,
                    guardrails: None,
                },
                agentry::config::SceneSpec {
                    name: "math".into(),
                    entry: entry("Arithmetic", &["math", "divide_by_secret_number"]),
                    template: None,
                    guardrails: None,
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
        let mut options = DemoOptions {
            today: today(),
            worked_example: false,
            ..DemoOptions::default()
        };
        options.scenes = Some(scenes(&specs, &options).unwrap_or_else(|e| panic!("{e}")));
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
        // A scene without a prompt of its own gets the demo's and its name.
        let system = requests[1].system.clone().unwrap_or_default();
        assert!(
            system.starts_with("You are a travel assistant.")
                && system.ends_with("In this conversation you are the weather scene: Weather in a city"),
            "{system}"
        );
        let out = buffer.contents();
        assert!(out.contains("⇢ scene weather") && out.contains("⇢ scene math"), "{out}");
    }

    #[tokio::test]
    async fn ten_turns_are_rendered_live_with_a_summary_each_and_the_totals() {
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
            worked_example: true,
            ..DemoOptions::default()
        };
        let reports = run_demo(client.clone(), Arc::new(ModelCatalog::new()), &options, &mut console)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reports.len(), 10);
        assert_eq!(reports[LIMIT_TURN].result.stop_reason, RunEnd::MaxIterations);
        let out = buffer.contents();
        assert!(
            out.starts_with("Travel Assistant demo · scripted/scripted · today is 2030-06-01 · 10 turns\n"),
            "{out}"
        );
        assert!(
            out.contains("━━ 9/10 · the iteration limit and the forced answer ━━\n(this turn runs with max_iterations = 1)\nyou> Tell me"),
            "{out}"
        );
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
