//! Scenes and handoffs: several named sub-agents behind one entry point,
//! and agents used as tools of other agents.
//!
//! A [`SceneRouter`] holds [`Scene`]s. Each has a name and a description
//! (what the model chooses by), a system prompt or a `{{var}}` prompt
//! template ([`ScenePrompt`]), the tool domains or single tools it may use
//! (the router builds each scene's registry from its providers), and
//! [`SceneActor`]s that add dynamic context to the prompt before the scene
//! runs ([`CurrentDate`], [`StaticContext`], or your own). A request goes
//! first to the model with one function per scene; the name it picks is
//! matched forgivingly ([`match_name`]: case, separators, filler words,
//! small typos), else the default scene runs, else the request fails with
//! [`SceneError::UnknownScene`] naming the scenes there are. Then the
//! scene's own agent loop runs, streamed or not; the streamed form starts
//! with [`AgentEvent::SceneEntered`](agent_core::AgentEvent::SceneEntered).
//! The routing call counts in the result's usage, cost and model calls
//! ([`CallPurpose::Routing`](agent_core::CallPurpose::Routing)), and
//! [`AgentRunResult::scene`](agent_core::AgentRunResult::scene) names the
//! scene that ran.
//!
//! An [`AgentTool`] offers an [`Agent`](crate::Agent) as a tool of another
//! agent (a handoff): the task goes in, the sub-agent's answer comes out,
//! and its usage is added to the calling run's.
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{ToolContext, ToolProvider};
//! use agent_runner::scenes::{Scene, SceneRouter};
//! use agent_testing::{ScriptedClient, TestTool, TestTools, ToolBehaviour, response};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = ScriptedClient::new()
//!     // The routing call: the model names a scene, loosely.
//!     .respond(response::tool_calls([("calculator_scene", json!({}))]))
//!     .respond(response::tool_calls([("add", json!({"a": 15, "b": 27}))]))
//!     .respond(response::text("42"));
//! let math = TestTools::new("math").with(TestTool::new("add", ToolBehaviour::Reply("42".into())));
//! let router = SceneRouter::builder(Arc::new(client))
//!     .provider(Arc::new(math) as Arc<dyn ToolProvider>)
//!     .scene(Scene::new("Calculator", "Arithmetic").system_prompt("You calculate.").tools(["math"]))
//!     .scene(Scene::new("Weather", "Forecasts"))
//!     .build()?;
//! let result = router.run(Vec::new(), "What is 15 + 27?", &ToolContext::new()).await?;
//! assert_eq!(result.scene.as_deref(), Some("Calculator"));
//! assert_eq!(result.response, "42");
//! # Ok(())
//! # }
//! ```

mod actor;
mod builder;
mod error;
mod handoff;
mod matching;
mod router;
mod routing;
mod scene;
mod tools;

pub use actor::{ActorError, CurrentDate, SceneActor, SceneContext, SceneRequest, StaticContext};
pub use builder::SceneRouterBuilder;
pub use error::SceneError;
pub use handoff::{AgentTool, HANDOFF_DOMAIN};
pub use matching::{MatchKind, NameMatch, match_name};
pub use router::{SceneChoice, SceneRouter};
pub use scene::{Scene, ScenePrompt};
