//! Actors: what adds dynamic context to a scene's system prompt before its
//! run starts (today's date, the user's profile, an account's state).

use std::time::{SystemTime, UNIX_EPOCH};

use agent_core::{Message, ToolContext};
use async_trait::async_trait;

/// What an actor is told about the run about to start.
#[derive(Debug, Clone, Copy)]
pub struct SceneRequest<'a> {
    /// The scene that will run.
    pub scene: &'a str,
    /// The user's new message.
    pub user_message: &'a str,
    /// The conversation before it.
    pub history: &'a [Message],
    /// Who is asking (user id, roles, attributes) and the run's cancellation.
    pub context: &'a ToolContext,
}

/// Named values an actor adds to a scene's prompt. A prompt template uses
/// them as its `{{name}}` variables; the values the template does not use
/// (every value, for a plain system prompt) are appended to the prompt
/// under `Context:`, one `- name: value` line each, in the order the actors
/// ran and added them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SceneContext {
    entries: Vec<(String, String)>,
}

impl SceneContext {
    /// No values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name` = `value` (a later value of the same name replaces it).
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set(name, value);
        self
    }

    /// Sets `name` = `value`, replacing an earlier value of that name in place.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        match self.entries.iter_mut().find(|(existing, _)| *existing == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name, value)),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, value)| value.as_str())
    }

    /// Every value, in order.
    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds every value of `other`.
    pub fn extend(&mut self, other: SceneContext) {
        for (name, value) in other.entries {
            self.set(name, value);
        }
    }
}

/// Why an actor could not give its context; the scene does not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ActorError {
    message: String,
}

impl ActorError {
    /// An error saying what went wrong.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Adds dynamic context to a scene's prompt before the scene runs. Actors
/// of a scene run in order, once per run, after the scene was chosen.
#[async_trait]
pub trait SceneActor: Send + Sync {
    /// The actor's name, for errors.
    fn name(&self) -> &str;

    /// The values to add for this run.
    async fn context(&self, request: &SceneRequest<'_>) -> Result<SceneContext, ActorError>;
}

/// An actor that always adds the same values (say, the user's profile read
/// from configuration).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaticContext {
    name: String,
    context: SceneContext,
}

impl StaticContext {
    /// An actor named `name` adding `context`.
    pub fn new(name: impl Into<String>, context: SceneContext) -> Self {
        Self {
            name: name.into(),
            context,
        }
    }
}

#[async_trait]
impl SceneActor for StaticContext {
    fn name(&self) -> &str {
        &self.name
    }

    async fn context(&self, _request: &SceneRequest<'_>) -> Result<SceneContext, ActorError> {
        Ok(self.context.clone())
    }
}

/// An actor adding today's date in UTC as `date` (`2030-06-01`) and
/// `weekday` (`Saturday`). The prompt then changes once a day: the values
/// come after the prompt's fixed text, which stays a cacheable prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CurrentDate {
    fixed: Option<SystemTime>,
}

impl CurrentDate {
    /// The system clock's date.
    pub fn new() -> Self {
        Self::default()
    }

    /// Always the date of `time` (for tests and replays).
    pub fn at(time: SystemTime) -> Self {
        Self { fixed: Some(time) }
    }

    /// The date's values.
    pub fn values(&self) -> SceneContext {
        const WEEKDAYS: [&str; 7] = [
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
            "Monday",
            "Tuesday",
            "Wednesday",
        ];
        let time = self.fixed.unwrap_or_else(SystemTime::now);
        let days = time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs() / 86_400);
        let (year, month, day) = civil_from_days(days);
        let weekday = WEEKDAYS[usize::try_from(days % 7).unwrap_or(0)];
        SceneContext::new()
            .with("date", format!("{year:04}-{month:02}-{day:02}"))
            .with("weekday", weekday)
    }
}

#[async_trait]
impl SceneActor for CurrentDate {
    fn name(&self) -> &'static str {
        "current_date"
    }

    async fn context(&self, _request: &SceneRequest<'_>) -> Result<SceneContext, ActorError> {
        Ok(self.values())
    }
}

/// The proleptic Gregorian date `days` days after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn dates_are_computed_from_the_epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        // 2030-06-01 is day 22066.
        assert_eq!(civil_from_days(22_066), (2030, 6, 1));
        let values = CurrentDate::at(UNIX_EPOCH + Duration::from_secs(22_066 * 86_400 + 3_600)).values();
        assert_eq!(values.get("date"), Some("2030-06-01"));
        assert_eq!(values.get("weekday"), Some("Saturday"));
        assert_eq!(CurrentDate::at(UNIX_EPOCH).values().get("weekday"), Some("Thursday"));
    }

    #[test]
    fn a_later_value_replaces_an_earlier_one_in_place() {
        let mut context = SceneContext::new().with("a", "1").with("b", "2");
        context.extend(SceneContext::new().with("a", "3").with("c", "4"));
        assert_eq!(
            context.entries(),
            [
                ("a".to_owned(), "3".to_owned()),
                ("b".to_owned(), "2".to_owned()),
                ("c".to_owned(), "4".to_owned())
            ]
        );
        assert!(!context.is_empty() && SceneContext::new().is_empty());
    }
}
