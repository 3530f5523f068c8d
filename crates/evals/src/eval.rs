//! `cargo xtask eval-local`: how well the local models call tools.
//!
//! Runs a fixed suite of tool-calling prompts through the real agent loop
//! (calculator and travel tools, greedy decoding) against each local model,
//! with and without the tool-call grammar, and prints the success rate per
//! category. The numbers pick the default model and grammar setting
//! (docs/local-models.md).

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Instant;

use agent_core::AgentRunResult;
use agent_provider_llama::models::{ModelStore, known_model};
use agent_provider_llama::{LlamaClient, LlamaConfig};
use agent_runner::Agent;
use agent_tools_travel::{NaiveDate, TravelTools};

type Check = fn(&AgentRunResult) -> bool;

struct Case {
    category: &'static str,
    prompt: &'static str,
    check: Check,
}

/// Successful calls of `tool`.
fn calls<'a>(result: &'a AgentRunResult, tool: &'a str) -> impl Iterator<Item = &'a agent_core::ToolCallRecord> {
    result.tool_calls.iter().filter(move |c| c.name == tool && !c.is_error)
}

fn called_with(result: &AgentRunResult, tool: &str, needle: &str) -> bool {
    calls(result, tool).any(|c| c.arguments.to_string().to_lowercase().contains(&needle.to_lowercase()))
}

fn result_has(result: &AgentRunResult, tool: &str, needle: &str) -> bool {
    calls(result, tool).any(|c| c.result.contains(needle))
}

/// A math tool (`calculator` or `arithmetic`) returned `needle`: either is a
/// correct way to compute, so the checks accept both.
fn math_result_has(result: &AgentRunResult, needle: &str) -> bool {
    MATH_TOOLS.iter().any(|tool| result_has(result, tool, needle))
}

const MATH_TOOLS: [&str; 2] = ["calculator", "arithmetic"];

fn no_tools(result: &AgentRunResult) -> bool {
    result.tool_calls.is_empty() && !result.response.trim().is_empty()
}

fn answer_has(result: &AgentRunResult, needle: &str) -> bool {
    result.response.to_lowercase().contains(&needle.to_lowercase())
}

/// The suite: single calls, parallel calls, no tool needed, missing
/// arguments (the model should ask, not invent), multi-step.
const CASES: &[Case] = &[
    Case {
        category: "single",
        prompt: "What is 1234 * 5678?",
        check: |r| math_result_has(r, "7006652"),
    },
    Case {
        category: "single",
        prompt: "Compute 98765 + 43210.",
        check: |r| math_result_has(r, "141975"),
    },
    Case {
        category: "single",
        prompt: "What is the square root of 1764?",
        check: |r| math_result_has(r, "42"),
    },
    Case {
        category: "single",
        prompt: "Use the calculator: 2 ^ 20",
        check: |r| math_result_has(r, "1048576"),
    },
    Case {
        category: "single",
        prompt: "What's the weather in Paris?",
        check: |r| called_with(r, "get_weather", "paris"),
    },
    Case {
        category: "single",
        prompt: "Is it cold in Oslo right now?",
        check: |r| called_with(r, "get_weather", "oslo"),
    },
    Case {
        category: "single",
        prompt: "Weather in Tokyo in fahrenheit, please.",
        check: |r| called_with(r, "get_weather", "fahrenheit"),
    },
    Case {
        category: "single",
        prompt: "Convert 100 USD to EUR.",
        check: |r| called_with(r, "get_currency_exchange", "eur"),
    },
    Case {
        category: "single",
        prompt: "How many Japanese yen is 250 British pounds?",
        check: |r| called_with(r, "get_currency_exchange", "jpy"),
    },
    Case {
        category: "single",
        prompt: "Find flights from London to New York on 2026-09-10.",
        check: |r| called_with(r, "get_flight_prices", "2026-09-10"),
    },
    Case {
        category: "single",
        prompt: "Divide 17 by the secret number.",
        check: |r| {
            r.tool_calls
                .iter()
                .any(|c| c.name == "divide_by_secret_number" && c.is_error)
        },
    },
    Case {
        category: "parallel",
        prompt: "What's the weather in Tokyo and in Oslo?",
        check: |r| called_with(r, "get_weather", "tokyo") && called_with(r, "get_weather", "oslo"),
    },
    Case {
        category: "parallel",
        prompt: "Compute 12 * 12 and 13 * 13.",
        check: |r| math_result_has(r, "144") && math_result_has(r, "169"),
    },
    Case {
        category: "parallel",
        prompt: "Convert 50 USD to EUR and 50 USD to GBP.",
        check: |r| called_with(r, "get_currency_exchange", "eur") && called_with(r, "get_currency_exchange", "gbp"),
    },
    Case {
        category: "parallel",
        prompt: "Weather in Berlin, Madrid and Rome?",
        check: |r| {
            ["berlin", "madrid", "rome"]
                .iter()
                .all(|c| called_with(r, "get_weather", c))
        },
    },
    Case {
        category: "parallel",
        prompt: "Flight prices from Paris to Rome and from Paris to Berlin on 2026-10-01.",
        check: |r| called_with(r, "get_flight_prices", "rome") && called_with(r, "get_flight_prices", "berlin"),
    },
    Case {
        category: "parallel",
        prompt: "What is 7 * 8, and what's the weather in Cairo?",
        check: |r| math_result_has(r, "56") && called_with(r, "get_weather", "cairo"),
    },
    Case {
        category: "no_tool",
        prompt: "Say hello in French.",
        check: no_tools,
    },
    Case {
        category: "no_tool",
        prompt: "What is the capital of Italy?",
        check: |r| no_tools(r) && answer_has(r, "rome"),
    },
    Case {
        category: "no_tool",
        prompt: "Write a haiku about the sea.",
        check: no_tools,
    },
    Case {
        category: "no_tool",
        prompt: "What does HTTP stand for?",
        check: |r| no_tools(r) && answer_has(r, "hypertext"),
    },
    Case {
        category: "no_tool",
        prompt: "Thank you, that's all!",
        check: no_tools,
    },
    Case {
        category: "no_tool",
        prompt: "Name three primary colours.",
        check: no_tools,
    },
    Case {
        category: "missing_arg",
        prompt: "How much is a flight to Paris?",
        check: |r| calls(r, "get_flight_prices").next().is_none(),
    },
    Case {
        category: "missing_arg",
        prompt: "What's the weather like?",
        check: |r| calls(r, "get_weather").next().is_none(),
    },
    Case {
        category: "missing_arg",
        prompt: "Convert my money to euros.",
        check: |r| calls(r, "get_currency_exchange").next().is_none(),
    },
    Case {
        category: "missing_arg",
        prompt: "Book me the cheapest flight from Berlin.",
        check: |r| calls(r, "get_flight_prices").next().is_none(),
    },
    Case {
        category: "multi_step",
        prompt: "What is 15 + 27 multiplied by 3? Add first, then multiply.",
        check: |r| math_result_has(r, "126"),
    },
    Case {
        category: "multi_step",
        prompt: "Convert 200 USD to EUR, then tell me what half of that amount is.",
        check: |r| {
            called_with(r, "get_currency_exchange", "eur")
                && MATH_TOOLS.iter().any(|tool| calls(r, tool).next().is_some())
        },
    },
    Case {
        category: "multi_step",
        prompt: "Find the price of a flight from Madrid to Tokyo on 2026-11-20 and convert the cheapest price to JPY.",
        check: |r| called_with(r, "get_flight_prices", "tokyo") && called_with(r, "get_currency_exchange", "jpy"),
    },
    Case {
        category: "multi_step",
        prompt: "What's the weather in Sydney, and how much is 1000 AUD in USD?",
        check: |r| called_with(r, "get_weather", "sydney") && called_with(r, "get_currency_exchange", "aud"),
    },
    Case {
        category: "multi_step",
        prompt: "Multiply 23 by 19, then add 100 to the result.",
        check: |r| math_result_has(r, "537"),
    },
];

const CATEGORIES: [&str; 5] = ["single", "parallel", "no_tool", "missing_arg", "multi_step"];

/// Whether `case` is selected by `only`: texts separated by `|`, each a
/// category or a part of a prompt (case-insensitive); every case without
/// a filter.
fn selected(case: &Case, only: Option<&str>) -> bool {
    only.is_none_or(|texts| {
        texts
            .split('|')
            .map(str::trim)
            .any(|text| case.category == text || case.prompt.to_lowercase().contains(&text.to_lowercase()))
    })
}

/// Runs the suite (or the cases `only` selects) for each model and grammar
/// setting and prints a table, one row as soon as each configuration is done.
pub fn run(models: &[String], grammar_settings: &[bool], only: Option<&str>) -> Result<(), String> {
    if !CASES.iter().any(|case| selected(case, only)) {
        return Err(format!("no case matches `{}`", only.unwrap_or_default()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let store = ModelStore::default_location();
    for name in models {
        let known = known_model(name).ok_or_else(|| format!("unknown model {name}"))?;
        if !store.is_ready(known) {
            return Err(format!(
                "model {name} is not fetched; run `cargo xtask fetch-model {name}`"
            ));
        }
    }
    println!(
        "| model | grammar | {} | total | time | turn median | turn max |",
        CATEGORIES.join(" | ")
    );
    println!("|---|---|{}---|---|---|---|", "---|".repeat(CATEGORIES.len()));
    for name in models {
        for &grammar in grammar_settings {
            let config = LlamaConfig {
                model: name.clone(),
                grammar,
                ..LlamaConfig::default()
            };
            let client = LlamaClient::load(config).map_err(|e| e.to_string())?;
            let started = Instant::now();
            let mut passed = [0usize; CATEGORIES.len()];
            let mut total = [0usize; CATEGORIES.len()];
            let agent = agent(&client)?;
            let mut turn_seconds = Vec::new();
            for case in CASES.iter().filter(|case| selected(case, only)) {
                let turn_started = Instant::now();
                let outcome = runtime.block_on(agent.run(case.prompt).into_future());
                let seconds = turn_started.elapsed().as_secs_f64();
                turn_seconds.push(seconds);
                let ok = match &outcome {
                    Ok(result) => (case.check)(result),
                    Err(error) => (case.check)(&error.result),
                };
                let index = CATEGORIES.iter().position(|c| *c == case.category).unwrap_or(0);
                total[index] += 1;
                passed[index] += usize::from(ok);
                let calls: Vec<String> = match &outcome {
                    Ok(r) => r
                        .tool_calls
                        .iter()
                        .map(|c| format!("{}({})", c.name, c.arguments))
                        .collect(),
                    Err(e) => vec![format!("error: {e}")],
                };
                eprintln!(
                    "[{name} grammar={grammar}] {} {:<11} {seconds:>5.1} s {} -> {}",
                    if ok { "PASS" } else { "fail" },
                    case.category,
                    case.prompt,
                    calls.join(", ")
                );
            }
            let cells: Vec<String> = passed.iter().zip(&total).map(|(p, t)| format!("{p}/{t}")).collect();
            let all: usize = passed.iter().sum();
            let count: usize = total.iter().sum();
            println!(
                "| {name} | {} | {} | {all}/{count} ({:.0}%) | {:.0} s | {:.1} s | {:.1} s |",
                if grammar { "on" } else { "off" },
                cells.join(" | "),
                all as f64 * 100.0 / count as f64,
                started.elapsed().as_secs_f64(),
                crate::measure::median(&turn_seconds),
                turn_seconds.iter().copied().fold(0.0, f64::max)
            );
        }
    }
    Ok(())
}

fn agent(client: &LlamaClient) -> Result<Agent, String> {
    let registry = agent_tools::ToolBox::new();
    registry
        .register(Arc::new(agent_tools_math::tool_set()), true)
        .map_err(|e| e.to_string())?;
    let today = NaiveDate::from_ymd_opt(2026, 6, 1).ok_or("bad date")?;
    registry
        .register(Arc::new(TravelTools::with_today(today).tool_set()), true)
        .map_err(|e| e.to_string())?;
    Ok(Agent::builder(Arc::new(client.clone()))
        .name("eval")
        .system_prompt(
            "You are a helpful assistant. Today is 2026-06-01. Use the tools when they help. \
             If a tool needs information the user did not give, ask the user for it instead of guessing.",
        )
        .tools(Arc::new(registry))
        .max_iterations(3)
        .max_tokens(128)
        .temperature(0.0)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts(only: Option<&str>) -> Vec<&'static str> {
        CASES
            .iter()
            .filter(|case| selected(case, only))
            .map(|case| case.prompt)
            .collect()
    }

    #[test]
    fn only_selects_by_category_or_part_of_a_prompt() {
        assert_eq!(prompts(None).len(), CASES.len());
        assert_eq!(prompts(Some("missing_arg")).len(), 4);
        assert_eq!(
            prompts(Some("SYDNEY | square root")),
            [
                "What is the square root of 1764?",
                "What's the weather in Sydney, and how much is 1000 AUD in USD?"
            ]
        );
        assert!(prompts(Some("no such prompt")).is_empty());
    }
}
