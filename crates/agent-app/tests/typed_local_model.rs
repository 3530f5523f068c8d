//! Typed output on the real embedded model: a schema with a nested object
//! and an enum yields valid JSON every time (the local provider decodes
//! under a grammar built from the schema). Skipped without the model unless
//! `AGENTRY_REQUIRE_MODEL` is set.
#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agent_core::{LlmClient, ToolContext};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_runner::Agent;
use agent_tools::schemars::{self, JsonSchema};
use serde::Deserialize;

/// Two generations side by side do not fit two cores: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "agent_tools::schemars")]
#[serde(rename_all = "snake_case")]
enum Climate {
    Cold,
    Temperate,
    Hot,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "agent_tools::schemars")]
struct Location {
    country: String,
    continent: String,
    coastal: bool,
}

/// The typed answer: a nested object and an enum.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "agent_tools::schemars")]
struct CityReport {
    city: String,
    climate: Climate,
    location: Location,
}

const CITIES: [&str; 10] = [
    "Oslo",
    "Cairo",
    "Tokyo",
    "Lima",
    "Sydney",
    "Toronto",
    "Nairobi",
    "Madrid",
    "Mumbai",
    "Reykjavik",
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_nested_schema_with_an_enum_is_answered_validly_ten_times_out_of_ten() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::model_is_fetched() {
        return;
    }
    let client = LlamaClient::load(LlamaConfig::default()).unwrap();
    assert!(client.capabilities().json_schema);
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You describe cities accurately and concisely.")
        .max_tokens(200)
        .temperature(0.7)
        .build();
    let runtime = runtime();
    let (mut valid, mut first_time) = (0, 0);
    for city in CITIES {
        let outcome = runtime.block_on(agent.run_typed::<CityReport>(
            Vec::new(),
            format!("Describe {city}: its country, continent, whether it is on the coast, and its climate."),
            &ToolContext::new(),
        ));
        match outcome {
            Ok(run) => {
                let report = &run.value;
                assert!(
                    !report.city.is_empty() && !report.location.country.is_empty(),
                    "{report:?}"
                );
                assert!(!report.location.continent.is_empty(), "{report:?}");
                let climate = match report.climate {
                    Climate::Cold => "cold",
                    Climate::Temperate => "temperate",
                    Climate::Hot => "hot",
                };
                eprintln!("{city}: {climate}, coastal: {}", report.location.coastal);
                valid += 1;
                if run.attempts == 1 {
                    first_time += 1;
                }
                eprintln!("{city}: {} (attempts: {})", run.json, run.attempts);
            }
            Err(error) => eprintln!("{city}: FAILED: {error}"),
        }
    }
    eprintln!("valid: {valid}/10, valid at the first attempt: {first_time}/10");
    assert_eq!(valid, 10, "valid answers");
    // The grammar makes every first answer valid: no retry is needed.
    assert_eq!(first_time, 10, "answers valid without a retry");
}

/// A typed answer after a tool call.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "agent_tools::schemars")]
struct Product {
    expression: String,
    result: i64,
}

#[test]
fn a_tool_using_typed_run_calls_the_tool_and_answers_in_the_schema() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::model_is_fetched() {
        return;
    }
    let client = LlamaClient::load(LlamaConfig::default()).unwrap();
    let registry = agent_tools::ToolBox::new();
    registry.register(Arc::new(agent_tools_math::tool_set()), true).unwrap();
    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You are a careful assistant. Use the calculator for arithmetic.")
        .tools(Arc::new(registry))
        .max_iterations(3)
        .max_tokens(200)
        .temperature(0.0)
        .build();
    let run = runtime()
        .block_on(agent.run_typed::<Product>(Vec::new(), "What is 1234 * 5678?", &ToolContext::new()))
        .unwrap_or_else(|error| panic!("{error}: {:#?}", error.result()));
    eprintln!(
        "{} (attempts: {}, tool calls: {:?})",
        run.json,
        run.attempts,
        run.result
            .tool_calls
            .iter()
            .map(|call| (&call.name, &call.result))
            .collect::<Vec<_>>()
    );
    assert!(!run.value.expression.is_empty());
    assert!(
        run.result.tool_calls.iter().any(|call| !call.is_error),
        "the tool was not called"
    );
    assert_eq!(run.value.result, 1234 * 5678);
}

#[test]
fn agentry_run_schema_prints_valid_json_from_the_local_model() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::model_is_fetched() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let schema = schemars::schema_for!(CityReport).to_value();
    std::fs::write(dir.path().join("city.json"), schema.to_string()).unwrap();
    let mut command = assert_cmd::Command::cargo_bin("agentry").unwrap();
    // The model store is the user's: keep the environment (HOME, AGENTRY_HOME).
    command.current_dir(dir.path()).args([
        "run",
        "--provider",
        "llama",
        "--tools",
        "",
        "--schema",
        "city.json",
        "Describe Lisbon: country, continent, coast, climate.",
    ]);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}");
    let report: CityReport = serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"));
    assert!(
        !report.city.is_empty() && !report.location.country.is_empty(),
        "{report:?}"
    );
}
