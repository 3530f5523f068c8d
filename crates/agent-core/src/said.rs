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
        let mut words = String::from(" ");
        for message in messages {
            let Message::User { content } = message else { continue };
            let trimmed = content.trim_start();
            if trimmed.starts_with("<tool_response") || trimmed.starts_with("Observation:") {
                continue;
            }
            if !words.ends_with(' ') {
                words.push(' ');
            }
            normalise_into(content, &mut words);
        }
        Self::closed(words)
    }

    /// `text` as the user's words.
    pub fn from_text(text: &str) -> Self {
        let mut words = String::from(" ");
        normalise_into(text, &mut words);
        Self::closed(words)
    }

    /// `words` (normalised after a leading space), closed.
    fn closed(mut words: String) -> Self {
        close(&mut words);
        Self(Arc::from(words))
    }

    /// Whether the user wrote `phrase` as whole words, ignoring case,
    /// punctuation and spacing. An empty phrase is never said.
    pub fn contains(&self, phrase: &str) -> bool {
        let mut needle = String::from(" ");
        normalise_into(phrase, &mut needle);
        close(&mut needle);
        needle.len() > 2 && self.0.contains(&needle)
    }

    /// The normalised words, space-separated.
    pub fn as_str(&self) -> &str {
        self.0.trim()
    }
}

/// Appends `text`, normalised, to `out`: lower case; what is not a letter
/// or a digit becomes one space (none at the very start of `out`, never two
/// in a row), except a `,` between a digit and exactly three digits, which
/// is dropped. The end may keep one space.
fn normalise_into(text: &str, out: &mut String) {
    out.reserve(text.len());
    let mut previous = None;
    for (index, ch) in text.char_indices() {
        if ch.is_alphanumeric() {
            out.extend(ch.to_lowercase());
        } else {
            let separator =
                ch == ',' && previous.is_some_and(|p: char| p.is_ascii_digit()) && thousands(&text[index + 1..]);
            if !separator && !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        }
        previous = Some(ch);
    }
}

/// Ends normalised `words` with the one space every word is matched
/// against.
fn close(words: &mut String) {
    if !words.ends_with(' ') {
        words.push(' ');
    }
}

/// Whether `rest` starts with exactly three digits.
fn thousands(rest: &str) -> bool {
    let digits = rest.as_bytes();
    digits.len() >= 3 && digits[..3].iter().all(u8::is_ascii_digit) && !digits.get(3).is_some_and(u8::is_ascii_digit)
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
