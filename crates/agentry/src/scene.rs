//! [`SceneConfig`]: a scene of a scene router from its `[scenes.NAME]`
//! table.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_prompts::{PromptError, PromptTemplate};
use agent_runner::scenes::{CurrentDate, Scene, SceneContext, StaticContext};
use serde::Deserialize;

/// One `[scenes.NAME]` table: a named sub-agent with its own prompt and
/// tools, which a [`SceneRouter`](agent_runner::SceneRouter) routes each
/// request to.
///
/// ```
/// use agentry::SceneConfig;
///
/// let config: SceneConfig = serde_json::from_value(serde_json::json!({
///     "description": "Arithmetic.",
///     "tools": ["math"],
///     "context": {"home": "Lisbon"},
/// }))?;
/// let scene = config.scene("math", None, "You are helpful.")?;
/// assert_eq!(scene.name(), "math");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneConfig {
    /// What the scene is for, written for the routing model.
    pub description: String,
    /// The scene's system prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// A `{{var}}` prompt template file (its text is given to
    /// [`scene`](Self::scene): where a relative path starts is the reader's
    /// choice).
    #[serde(default)]
    pub prompt_template: Option<PathBuf>,
    /// Tool domains and single tools the scene may use.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Fixed values added to the prompt.
    #[serde(default)]
    pub context: BTreeMap<String, String>,
    /// Add today's date (`date`, `weekday`, UTC) to the prompt.
    #[serde(default)]
    pub current_date: bool,
    /// The scene's own guardrails (`[scenes.NAME.guardrails]`), instead of
    /// `[agent.guardrails]`.
    #[serde(default)]
    pub guardrails: Option<crate::GuardrailTables>,
}

impl SceneConfig {
    /// The runner's scene `name`: its prompt is `system_prompt`, else the
    /// template `template` (the text of `prompt_template`), else
    /// `base_prompt` and a line naming the scene; `context` and
    /// `current_date` add their values.
    pub fn scene(&self, name: &str, template: Option<&str>, base_prompt: &str) -> Result<Scene, PromptError> {
        let mut scene = Scene::new(name.to_owned(), self.description.clone()).tools(self.tools.iter().cloned());
        scene = match (&self.system_prompt, template) {
            (Some(prompt), _) => scene.system_prompt(prompt.clone()),
            (None, Some(text)) => scene.prompt_template(PromptTemplate::parse(text)?),
            (None, None) => scene.system_prompt(format!(
                "{base_prompt}\n\nIn this conversation you are the {name} scene: {}",
                self.description
            )),
        };
        if self.current_date {
            scene = scene.actor(Arc::new(CurrentDate::new()));
        }
        if !self.context.is_empty() {
            let values = self
                .context
                .iter()
                .fold(SceneContext::new(), |values, (name, value)| values.with(name, value));
            scene = scene.actor(Arc::new(StaticContext::new("context", values)));
        }
        Ok(scene)
    }
}
