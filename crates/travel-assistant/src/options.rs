//! How the demo runs: [`DemoOptions`], the system prompt, and the scenes
//! the turns may run through instead of one agent.

use agent_runner::{AgentConfig, ModelSettings, RunConfig, Scene};
use agent_tools_travel::NaiveDate;

/// How the demo runs.
#[derive(Debug, Clone)]
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
    /// its tool call, the tool's real result and the answer). Off by
    /// default: `agentry demo` runs the agent of `agentry run`, with
    /// nothing prepended; kept for measuring what an example does
    /// (docs/local-models.md).
    pub worked_example: bool,
    /// Run every turn through these scenes instead of one agent.
    pub scenes: Option<DemoScenes>,
}

impl Default for DemoOptions {
    fn default() -> Self {
        Self {
            today: chrono::Local::now().date_naive(),
            agent: default_agent_config(),
            limit_turn_max_iterations: 1,
            system_prompt: None,
            worked_example: false,
            scenes: None,
        }
    }
}

impl DemoOptions {
    /// The system prompt the turns run with: [`system_prompt`](Self::system_prompt)
    /// when set, else the demo's own for [`today`](Self::today).
    pub fn effective_system_prompt(&self) -> String {
        self.system_prompt.clone().unwrap_or_else(|| system_prompt(self.today))
    }

    /// [`agent`](Self::agent) with `max_iterations` iterations a turn.
    pub(crate) fn agent_config(&self, max_iterations: u32) -> AgentConfig {
        let mut config = self.agent.clone();
        config.run.max_iterations = max_iterations;
        config
    }
}

/// Scenes the turns run through instead of one agent: each turn is first
/// routed (one model call choosing a scene), then the chosen scene's own
/// agent runs under [`DemoOptions::agent`].
///
/// The scenes' `tools` may name the tool domains `travel` and `math`, or
/// single tools of them (`get_weather`, `calculator`, ...). A scene without a
/// prompt of its own gets agent-runner's default ("You are {name}:
/// {description}"); to build on the demo's prompt, give it
/// [`DemoOptions::effective_system_prompt`] plus a line naming the scene.
#[derive(Debug, Clone, Default)]
pub struct DemoScenes {
    /// The scenes, offered to the model in this order.
    pub scenes: Vec<Scene>,
    /// The scene that runs when the model names none of them.
    pub default: Option<String>,
}

/// The demo's agent: 5 iterations a turn, 256 tokens a call, greedy
/// decoding (temperature 0) and prompt caching.
pub fn default_agent_config() -> AgentConfig {
    AgentConfig {
        run: RunConfig {
            max_iterations: 5,
            ..RunConfig::default()
        },
        request: ModelSettings {
            max_tokens: Some(256),
            temperature: Some(0.0),
            stop: Vec::new(),
            prompt_caching: true,
        },
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_replaced_prompt_is_the_one_the_turns_run_with() {
        let options = DemoOptions {
            today: today(),
            ..DemoOptions::default()
        };
        assert_eq!(options.effective_system_prompt(), system_prompt(today()));
        let replaced = DemoOptions {
            system_prompt: Some("Be brief.".to_owned()),
            ..options
        };
        assert_eq!(replaced.effective_system_prompt(), "Be brief.");
        assert_eq!(replaced.agent_config(1).run.max_iterations, 1);
        assert_eq!(replaced.agent_config(1).request, default_agent_config().request);
    }
}
