//! [`UserWords`]: what the user has written in a conversation, so a tool can
//! check that an argument came from the user and not from the model's
//! imagination (small models fill a missing city or date with a plausible
//! one; a tool that sees the user never said it can ask instead).

use agent_core::ToolContext;

/// Everything the user wrote in a conversation, normalised for matching:
/// lower case, runs of anything but letters and digits as one space,
/// thousands separators between digits dropped.
///
/// ```
/// use agent_core::ToolContext;
/// use agent_tools::UserWords;
///
/// let words = UserWords::from_text("Flights from NYC to São Paulo, June 15?");
/// assert!(words.contains("nyc"));
/// assert!(!words.contains("Sao Paulo")); // accents are kept: "são paulo"
/// assert!(words.contains("são  PAULO"));
/// assert!(words.contains("june 15"));
/// assert!(!words.contains("june 1"));
///
/// // A tool reads them from its context (the runner fills `user_text`).
/// let context = ToolContext::new().with_user_text("Weather in Oslo?");
/// assert_eq!(UserWords::of(&context).map(|words| words.contains("oslo")), Some(true));
/// assert_eq!(UserWords::of(&ToolContext::new()), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserWords(String);

impl UserWords {
    /// `text` as the user's words.
    pub fn from_text(text: &str) -> Self {
        let mut words = String::from(" ");
        normalise_into(text, &mut words);
        close(&mut words);
        Self(words)
    }

    /// The user's words of the conversation `context` belongs to
    /// ([`ToolContext::user_text`]); `None` when the context does not know
    /// the conversation, so a tool cannot tell.
    pub fn of(context: &ToolContext) -> Option<Self> {
        context.user_text.as_deref().map(Self::from_text)
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
    fn messages_joined_by_newlines_match_as_they_did_one_by_one() {
        // The runner joins the user's messages with newlines: no word, number
        // or thousands separator runs across the join.
        let words = UserWords::from_text("Weather in Tokyo, 1,\n000 dollars\nand Lima 5\n,000");
        assert_eq!(words.as_str(), "weather in tokyo 1 000 dollars and lima 5 000");
        assert!(words.contains("tokyo") && words.contains("lima"));
        assert!(!words.contains("1000") && !words.contains("5000"));
        assert_eq!(UserWords::from_text("\n\n").as_str(), "");
    }

    #[test]
    fn a_context_without_the_conversation_has_no_words() {
        assert_eq!(UserWords::of(&ToolContext::new()), None);
        let context = ToolContext::new().with_user_text("I live in Oslo.");
        let words = UserWords::of(&context);
        assert_eq!(words.as_ref().map(UserWords::as_str), Some("i live in oslo"));
    }
}
