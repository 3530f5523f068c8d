//! # agent-travel-assistant
//!
//! The Travel Assistant: Agentry's demo conversation as a library. Ten
//! turns of one conversation ([`TURNS`]) show an answer without tools, tool
//! calls, questions for missing information, memory of the conversation,
//! parallel calls, the iteration limit with its forced answer, and a tool
//! error handled, on the travel tools of `agent-tools-travel` (weather,
//! flight prices, currency exchange).
//!
//! - [`DemoOptions`]: today's date, the agent's configuration, the limit
//!   turn's iterations, the system prompt ([`system_prompt`]), the worked
//!   example, and optional [`DemoScenes`] to route each turn through.
//! - [`TravelAssistant`] / [`run_turns`]: the agents (or scene routers)
//!   over the travel tools, and the ten turns run as one conversation; every
//!   step is passed to an observer as it happens ([`DemoEvent`]), so a caller
//!   renders the demo live (`agentry demo` does, in its console), and every
//!   turn's record comes back ([`DemoTurnReport`]).
//! - [`check_demo`]: machine-checkable expectations for each turn and a
//!   verdict per turn ([`CheckReport`], printed as a table and `passed: N/10`).
//!
//! It depends on library crates only: any [`LlmClient`](agent_core::LlmClient)
//! runs it. `examples/travel_assistant.rs` runs it on the embedded local
//! model.
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::Arc;
//!
//! use agent_core::ModelCatalog;
//! use agent_testing::{ScriptedClient, response};
//! use agent_travel_assistant::{DemoEvent, DemoOptions, NaiveDate, TURNS, check_demo, run_turns};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A scripted model: the second turn calls `get_weather`, the others answer.
//! let mut client = ScriptedClient::new();
//! for turn in 1..=TURNS.len() {
//!     if turn == 2 {
//!         client = client.respond(response::tool_calls([("get_weather", json!({"location": "Tokyo"}))]));
//!     }
//!     client = client.respond(response::text(format!("I help with weather, flights and currency ({turn}).")));
//! }
//! let options = DemoOptions {
//!     today: NaiveDate::from_ymd_opt(2026, 11, 22).ok_or("bad date")?,
//!     ..DemoOptions::default()
//! };
//! let reports = run_turns(Arc::new(client), Arc::new(ModelCatalog::new()), &options, |event| {
//!     if let DemoEvent::TurnFinished { index, report } = event {
//!         println!("{}: {:?} {}", index + 1, report.tools_called(), report.result.response);
//!     }
//!     Ok::<(), Infallible>(())
//! })
//! .await?;
//! assert_eq!(reports.len(), TURNS.len());
//! assert_eq!(reports[1].tools_called(), ["get_weather"]);
//!
//! let checked = check_demo(&reports, options.today);
//! assert_eq!(checked.verdicts.len(), 10);
//! assert!(checked.verdicts[0].passed());
//! println!("{checked}"); // a table of verdicts, then `passed: N/10`
//! # Ok(())
//! # }
//! ```

mod assistant;
mod check;
mod options;
mod turns;

pub use agent_tools_travel::NaiveDate;
pub use assistant::{
    DemoError, DemoEvent, DemoTotals, DemoTurnReport, SetupError, TravelAssistant, run_turns, worked_example,
};
pub use check::{CheckReport, TurnVerdict, check_demo};
pub use options::{DemoOptions, DemoScenes, default_agent_config, system_prompt};
pub use turns::{DemoTurn, LIMIT_TURN, TURNS};
