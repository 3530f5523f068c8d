//! An agent with typed tools, offline: the model is a script, so this runs
//! anywhere (`cargo run --example typed_tool`). Swap the client for
//! `OpenAiClient::new(OpenAiConfig::openai("gpt-4o-mini"))?` (or see
//! `switch_provider.rs`) and the rest stays the same.

use std::sync::Arc;

use agent_testing::{ScriptedClient, response};
use agentry::prelude::*;
use agentry::serde_json::json;

/// Temperature unit.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Arguments of `get_weather`; the model sees a JSON Schema made from this
/// type, doc comments included.
#[derive(Deserialize, JsonSchema)]
struct WeatherArgs {
    /// City name, e.g. "Paris".
    city: String,
    /// Temperature unit.
    unit: Unit,
}

/// What `get_weather` returns, sent to the model as JSON.
#[derive(Serialize)]
struct Weather {
    city: String,
    temperature: f64,
    sky: &'static str,
}

/// A tool as a plain async closure: no `Ok::<_, ToolError>` needed, and a
/// message converts into a `ToolError` the model reads.
fn get_weather() -> TypedTool {
    TypedTool::new(
        "get_weather",
        "Current weather for a city.",
        |args: WeatherArgs, _: ToolContext| async move {
            if args.city.trim().is_empty() {
                return Err("`city` is empty: name a city".into());
            }
            let temperature = match args.unit {
                Unit::Celsius => 21.0,
                Unit::Fahrenheit => 69.8,
            };
            Ok(Json(Weather {
                city: args.city,
                temperature,
                sky: "sunny",
            }))
        },
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The model's two replies: first a tool call, then the answer.
    let client = ScriptedClient::new()
        .respond(response::tool_calls([(
            "get_weather",
            json!({"city": "Paris", "unit": "celsius"}),
        )]))
        .respond(response::text("It is sunny in Paris, 21 °C."));

    let agent = Agent::builder(Arc::new(client))
        .system_prompt("You answer weather questions with the get_weather tool.")
        .tool(get_weather())
        .build();

    let result = agent.run("What's the weather in Paris?").await?;
    for call in &result.tool_calls {
        println!("tool {}({}) -> {}", call.name, call.arguments, call.result);
    }
    println!("answer: {} ({:?})", result.response, result.stop_reason);
    if result.stop_reason != RunEnd::Completed || result.tool_calls.len() != 1 || result.tool_calls[0].is_error {
        return Err(format!("unexpected run: {:?}, {:?}", result.stop_reason, result.tool_calls).into());
    }
    Ok(())
}
