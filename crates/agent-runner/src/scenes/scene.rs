//! A scene: a named sub-agent with its own prompt, tools and actors.

use std::fmt::Write as _;
use std::sync::Arc;

use agent_prompts::{PromptError, PromptTemplate};

use super::actor::{SceneActor, SceneContext};

/// A scene's instructions: fixed text, or a template rendered for each run
/// with its actors' values.
#[derive(Debug, Clone)]
pub enum ScenePrompt {
    /// The system prompt as it is (actors' values are appended to it).
    Text(String),
    /// A `{{var}}` template (agent-prompts). Its variables come from the
    /// actors, plus `scene` (the scene's name) and `description`; a
    /// variable no one provides is an error naming it.
    Template(Arc<PromptTemplate>),
}

/// One scene of a [`SceneRouter`](super::SceneRouter): what the router
/// offers the model to choose (the name and description), and what runs
/// when it is chosen (the prompt, the tools, the actors that add context).
#[derive(Clone)]
pub struct Scene {
    name: String,
    description: String,
    prompt: Option<ScenePrompt>,
    tools: Vec<String>,
    actors: Vec<Arc<dyn SceneActor>>,
    /// The scene agent's guardrails, instead of the configured agent's.
    guardrails: Option<crate::Guardrails>,
}

impl std::fmt::Debug for Scene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scene")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("prompt", &self.prompt)
            .field("tools", &self.tools)
            .field(
                "actors",
                &self
                    .actors
                    .iter()
                    .map(|actor| actor.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("guardrails", &self.guardrails)
            .finish()
    }
}

impl Scene {
    /// A scene named `name` (the function name the router offers; letters,
    /// digits, `_` and `-` work with every provider) for what `description`
    /// says (written for the model that chooses). Without a prompt its
    /// system prompt is "You are {name}: {description}"; without tools it
    /// has none.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            prompt: None,
            tools: Vec::new(),
            actors: Vec::new(),
            guardrails: None,
        }
    }

    /// The scene's system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(ScenePrompt::Text(prompt.into()));
        self
    }

    /// The scene's system prompt as a template (see [`ScenePrompt::Template`]).
    #[must_use]
    pub fn prompt_template(mut self, template: PromptTemplate) -> Self {
        self.prompt = Some(ScenePrompt::Template(Arc::new(template)));
        self
    }

    /// The tools the scene may use: each entry is a tool domain (a
    /// provider's name, e.g. `math`: all its tools) or the name of one tool
    /// (e.g. `get_weather`: that tool alone). Replaces earlier entries.
    #[must_use]
    pub fn tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an actor; actors run in the order they were added.
    #[must_use]
    pub fn actor(mut self, actor: Arc<dyn SceneActor>) -> Self {
        self.actors.push(actor);
        self
    }

    /// The scene's agent checks its edges with `guardrails` (and hooks),
    /// instead of those the router's `configure` gives every scene.
    pub fn guardrails(mut self, guardrails: crate::Guardrails) -> Self {
        self.guardrails = Some(guardrails);
        self
    }

    /// The scene's own guardrails, if it has them.
    pub fn own_guardrails(&self) -> Option<&crate::Guardrails> {
        self.guardrails.as_ref()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The prompt, if one was set.
    pub fn prompt(&self) -> Option<&ScenePrompt> {
        self.prompt.as_ref()
    }

    /// The tool domains and tool names.
    pub fn tool_entries(&self) -> &[String] {
        &self.tools
    }

    /// The actors.
    pub fn actors(&self) -> &[Arc<dyn SceneActor>] {
        &self.actors
    }

    /// The system prompt of a run with the actors' `context`: the prompt
    /// (rendered, for a template), then the values it did not use under
    /// `Context:`. `None` when the scene has neither prompt, description
    /// nor context (the run then has no system prompt).
    pub fn render_prompt(&self, context: &SceneContext) -> Result<Option<String>, PromptError> {
        let (base, used): (Option<String>, &[String]) = match &self.prompt {
            Some(ScenePrompt::Text(text)) => (Some(text.clone()), &[]),
            Some(ScenePrompt::Template(template)) => {
                let rendered = template.render_with(|name| {
                    context.get(name).map(str::to_owned).or_else(|| match name {
                        "scene" => Some(self.name.clone()),
                        "description" => Some(self.description.clone()),
                        _ => None,
                    })
                })?;
                (Some(rendered), template.required_variables())
            }
            None if self.description.is_empty() => (None, &[]),
            None => (Some(format!("You are {}: {}", self.name, self.description)), &[]),
        };
        let rest: Vec<&(String, String)> = context
            .entries()
            .iter()
            .filter(|(name, _)| !used.contains(name))
            .collect();
        if rest.is_empty() {
            return Ok(base);
        }
        let mut prompt = base.unwrap_or_default();
        if !prompt.is_empty() {
            prompt.push_str("\n\n");
        }
        prompt.push_str("Context:");
        for (name, value) in rest {
            let _ = write!(prompt, "\n- {name}: {value}");
        }
        Ok(Some(prompt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> PromptTemplate {
        PromptTemplate::parse(text).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn a_plain_prompt_gets_the_values_appended() {
        let scene = Scene::new("Weather", "Forecasts").system_prompt("You forecast.");
        let context = SceneContext::new().with("date", "2030-06-01").with("user", "Ada");
        assert_eq!(
            scene.render_prompt(&context).ok().flatten().as_deref(),
            Some("You forecast.\n\nContext:\n- date: 2030-06-01\n- user: Ada")
        );
        assert_eq!(
            scene.render_prompt(&SceneContext::new()).ok().flatten().as_deref(),
            Some("You forecast.")
        );
    }

    #[test]
    fn a_template_takes_its_variables_and_the_rest_is_appended() {
        let scene = Scene::new("Weather", "Forecasts")
            .prompt_template(template("You are {{scene}} ({{description}}). Today is {{date}}."));
        let context = SceneContext::new().with("date", "2030-06-01").with("user", "Ada");
        assert_eq!(
            scene.render_prompt(&context).ok().flatten().as_deref(),
            Some("You are Weather (Forecasts). Today is 2030-06-01.\n\nContext:\n- user: Ada")
        );
        let missing = scene.render_prompt(&SceneContext::new());
        assert!(
            matches!(&missing, Err(PromptError::MissingVariables { missing }) if missing == &["date".to_owned()]),
            "{missing:?}"
        );
    }

    #[test]
    fn without_a_prompt_the_description_speaks() {
        let scene = Scene::new("Math", "Arithmetic.");
        assert_eq!(
            scene.render_prompt(&SceneContext::new()).ok().flatten().as_deref(),
            Some("You are Math: Arithmetic.")
        );
        let bare = Scene::new("Math", "");
        assert_eq!(bare.render_prompt(&SceneContext::new()).ok().flatten(), None);
        assert_eq!(
            bare.render_prompt(&SceneContext::new().with("a", "b"))
                .ok()
                .flatten()
                .as_deref(),
            Some("Context:\n- a: b")
        );
    }
}
