//! Why a scene router could not be built or could not run a request.

use agent_core::{LlmError, RegistryError};
use agent_prompts::PromptError;

use crate::RunError;

/// A scene router's error.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// A router needs at least one scene.
    #[error("the scene router has no scenes; add at least one")]
    NoScenes,
    /// Two scenes have names the router cannot tell apart (the same words
    /// whatever the case and separators).
    #[error("the scenes `{first}` and `{second}` have the same name once case and separators are ignored; rename one")]
    DuplicateScene {
        /// The scene declared first.
        first: String,
        /// The one that clashes with it.
        second: String,
    },
    /// The default scene is not one of the scenes.
    #[error("the default scene `{name}` is not a scene; available scenes: {}", available.join(", "))]
    UnknownDefault {
        /// The configured default.
        name: String,
        /// The scenes there are.
        available: Vec<String>,
    },
    /// A scene names a tool domain or tool that no provider has.
    #[error(
        "scene `{scene}`: `{entry}` is neither a tool domain nor a tool; domains: {}",
        domains.join(", ")
    )]
    UnknownTool {
        /// The scene.
        scene: String,
        /// The entry of its tools.
        entry: String,
        /// The tool domains (provider names) the router has.
        domains: Vec<String>,
    },
    /// A scene's tools could not be put in one registry (two tools of the
    /// same name).
    #[error("scene `{scene}`: {source}")]
    Registry {
        /// The scene.
        scene: String,
        /// What clashed.
        source: RegistryError,
    },
    /// The model chose a scene that is not one of them, and there is no
    /// default scene.
    #[error("the model chose the scene `{requested}`, which does not exist; available scenes: {}", available.join(", "))]
    UnknownScene {
        /// The name the model wrote.
        requested: String,
        /// The scenes there are.
        available: Vec<String>,
    },
    /// The model named no scene, and there is no default scene.
    #[error("the model chose no scene; available scenes: {}", available.join(", "))]
    NoSceneChosen {
        /// The scenes there are.
        available: Vec<String>,
    },
    /// The routing call failed.
    #[error("choosing the scene failed: {0}")]
    Routing(#[source] LlmError),
    /// An actor of the chosen scene failed; the scene did not run.
    #[error("scene `{scene}`: actor `{actor}` failed: {message}")]
    Actor {
        /// The scene.
        scene: String,
        /// The actor.
        actor: String,
        /// What went wrong.
        message: String,
    },
    /// The chosen scene's prompt template could not be rendered.
    #[error("scene `{scene}`: the prompt template could not be rendered: {source}")]
    Prompt {
        /// The scene.
        scene: String,
        /// The template's error (e.g. a variable no actor provides).
        source: PromptError,
    },
    /// The scene's run failed; its record (the routing call included) is kept.
    #[error("scene `{scene}`: {source}")]
    Run {
        /// The scene.
        scene: String,
        /// The failed run.
        source: Box<RunError>,
    },
}
