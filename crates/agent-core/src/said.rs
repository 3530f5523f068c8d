//! [`UserWords`]: what the user has written in a conversation, so a tool can
//! check that an argument came from the user and not from the model's
//! imagination (small models fill a missing city or date with a plausible
//! one; a tool that sees the user never said it can ask instead).

use std::sync::Arc;

use crate::Message;

/// Everything the user wrote in a conversation, normalised for matching:
/// lower case, runs of anything but letters and digits as one space,
/// thousands separators between digits dropped.
///
/// ```
/// use agent_core::{Message, UserWords};
///
/// let words = UserWords::from_messages(&[Message::user("Flights from NYC to São Paulo, June 15?")]);
/// assert!(words.contains("nyc"));
/// assert!(!words.contains("Sao Paulo")); // accents are kept: "são paulo"
/// assert!(words.contains("são  PAULO"));
/// assert!(words.contains("june 15"));
/// assert!(!words.contains("june 1"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserWords(Arc<str>);

impl UserWords {
    /// The user messages of `messages`, leaving out the ones the runner
    /// writes on the user's behalf in text protocols (`<tool_response>`
    /// blocks, ReAct `Observation:` lines).
    pub fn from_messages(messages: &[Message]) -> Self {
        let mut text = String::new();
        for message in messages {
            let Message::User { content } = message else { continue };
            let trimmed = content.trim_start();
            if trimmed.starts_with("<tool_response") || trimmed.starts_with("Observation:") {
                continue;
            }
            text.push(' ');
            text.push_str(content);
        }
        Self::from_text(&text)
    }

    /// `text` as the user's words.
    pub fn from_text(text: &str) -> Self {
        Self(Arc::from(format!(" {} ", normalise(text)).as_str()))
    }

    /// Whether the user wrote `phrase` as whole words, ignoring case,
    /// punctuation and spacing. An empty phrase is never said.
    pub fn contains(&self, phrase: &str) -> bool {
        let phrase = normalise(phrase);
        !phrase.is_empty() && self.0.contains(&format!(" {phrase} "))
    }

    /// The normalised words, space-separated.
    pub fn as_str(&self) -> &str {
        self.0.trim()
    }
}

/// Lower case; runs of other characters than letters and digits become
/// one space; a `,` or `.` between a digit and three digits is dropped.
fn normalise(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (index, &ch) in chars.iter().enumerate() {
        if ch.is_alphanumeric() {
            out.extend(ch.to_lowercase());
            continue;
        }
        let separator = ch == ',' && index > 0 && chars[index - 1].is_ascii_digit() && thousands(&chars[index + 1..]);
        if !separator && !out.ends_with(' ') && !out.is_empty() {
            out.push(' ');
        }
    }
    out.trim_end().to_owned()
}

/// Whether `rest` starts with exactly three digits.
fn thousands(rest: &[char]) -> bool {
    rest.len() >= 3 && rest[..3].iter().all(char::is_ascii_digit) && !rest.get(3).is_some_and(char::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_are_matched_whatever_the_case_and_punctuation() {
        let words = UserWords::from_text("What's the weather in New-York?  And 1,000 dollars in EUR.");
        assert!(words.contains("new york"));
        assert!(words.contains("New York!"));
        assert!(words.contains("1000"));
        assert!(words.contains("eur"));
        assert!(!words.contains("york city"));
        assert!(!words.contains("ew"));
        assert!(!words.contains(""));
        assert!(!words.contains("  ?"));
        assert_eq!(UserWords::from_text("1,5 and 2,000,000").as_str(), "1 5 and 2000000");
    }

    #[test]
    fn only_what_the_user_wrote_counts() {
        let messages = [
            Message::user("Weather in Tokyo?"),
            Message::assistant("Which city: Paris or Oslo?"),
            Message::user("<tool_response name=\"get_weather\">\n{\"location\": \"Rome\"}\n</tool_response>"),
            Message::user("Observation: Berlin is sunny"),
            Message::user("and Lima"),
        ];
        let words = UserWords::from_messages(&messages);
        assert!(words.contains("tokyo") && words.contains("lima"));
        for other in ["paris", "oslo", "rome", "berlin"] {
            assert!(!words.contains(other), "{other}");
        }
    }
}
