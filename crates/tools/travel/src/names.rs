//! Text helpers for place names: a lookup key that ignores case, accents
//! and punctuation, placeholder detection, and an edit distance for
//! "did you mean" suggestions.

/// The longest key compared by edit distance; longer input is not a
/// misspelt place name, and the bound keeps every lookup cheap.
pub(crate) const MAX_FUZZY_CHARS: usize = 40;

/// A lookup key: lower case, common accents removed, `.` and `'` dropped,
/// other punctuation turned into spaces, whitespace collapsed. So
/// `"  Washington D.C. "` becomes `"washington dc"` and `"Zürich"`
/// becomes `"zurich"`.
pub(crate) fn key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        let c = fold(c);
        if c.is_alphanumeric() {
            out.push(c);
        } else if matches!(c, '.' | '\'' | '\u{2019}') {
            // "d.c." -> "dc", "xi'an" -> "xian"
        } else if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// The letter without its accent, for the accents common in place names.
fn fold(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => 'a',
        'ç' | 'č' | 'ć' => 'c',
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => 'e',
        'ì' | 'í' | 'î' | 'ï' | 'ī' => 'i',
        'ñ' | 'ń' => 'n',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => 'o',
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ű' | 'ů' => 'u',
        'ý' | 'ÿ' => 'y',
        'ł' => 'l',
        'ś' | 'š' => 's',
        'ź' | 'ż' | 'ž' => 'z',
        'ř' => 'r',
        _ => c,
    }
}

/// Words that on their own mark text as an instruction or a template,
/// never a place.
const PLACEHOLDER_WORDS: &[&str] = &[
    "favorite",
    "favourite",
    "favorites",
    "favourites",
    "iata",
    "placeholder",
    "unknown",
    "unspecified",
    "undefined",
    "example",
    "your",
    "yours",
    "user",
    "users",
    "insert",
    "eg",
    "todo",
    "tbd",
    "tba",
];

/// Phrases (in [`key`] form) that mark a placeholder wherever they occur.
const PLACEHOLDER_PHRASES: &[&str] = &[
    "city name",
    "name of",
    "airport code",
    "city code",
    "my city",
    "my town",
    "my home",
    "my location",
    "current location",
    "home town",
    "some city",
    "any city",
    "a city",
    "not specified",
    "not provided",
    "not given",
    "e g",
];

/// Whole inputs (in [`key`] form) that are no place at all.
const PLACEHOLDER_WHOLE: &[&str] = &[
    "n a",
    "na",
    "none",
    "null",
    "nil",
    "city",
    "town",
    "location",
    "place",
    "string",
    "destination",
    "origin",
    "here",
    "there",
    "home",
    "anywhere",
    "somewhere",
    "nowhere",
    "x",
    "xx",
    "xxx",
    "foo",
    "bar",
    "test",
    "departure",
    "arrival",
];

/// Whether `text` looks like a template or an instruction copied from a
/// schema ("Your favorite city name or IATA airport code", "<city>",
/// "N/A", "e.g. Paris") rather than a place someone named.
pub(crate) fn is_placeholder(text: &str) -> bool {
    if text.contains(['<', '>', '{', '}', '[', ']']) || text.contains("...") || text.contains("__") {
        return true;
    }
    let normalized = key(text);
    if normalized.is_empty() {
        // Only punctuation: "???", "--".
        return !text.trim().is_empty();
    }
    if PLACEHOLDER_WHOLE.contains(&normalized.as_str()) {
        return true;
    }
    if normalized.split(' ').any(|word| PLACEHOLDER_WORDS.contains(&word)) {
        return true;
    }
    let padded = format!(" {normalized} ");
    PLACEHOLDER_PHRASES
        .iter()
        .any(|phrase| padded.contains(&format!(" {phrase} ")))
}

/// Levenshtein distance between two short strings, in characters. Both
/// are cut to [`MAX_FUZZY_CHARS`], so the cost stays bounded.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(MAX_FUZZY_CHARS).collect();
    let b: Vec<char> = b.chars().take(MAX_FUZZY_CHARS).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The first `max` characters of `text`, with "..." when cut: for quoting
/// what the model sent without echoing a page of it back.
pub(crate) fn preview(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}...")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_accents_and_punctuation() {
        assert_eq!(key("  Washington D.C. "), "washington dc");
        assert_eq!(key("Zürich"), "zurich");
        assert_eq!(key("SÃO  PAULO"), "sao paulo");
        assert_eq!(key("Tokyo?"), "tokyo");
        assert_eq!(key("Xi'an"), "xian");
        assert_eq!(key("Rio-de-Janeiro"), "rio de janeiro");
        assert_eq!(key("???"), "");
    }

    #[test]
    fn placeholders_are_recognised() {
        for text in [
            "Your favorite city name or IATA airport code",
            "city name",
            "my favorite city",
            "unknown",
            "<city>",
            "user's city",
            "e.g. Paris",
            "N/A",
            "your city",
            "My favourite place",
            "IATA code",
            "PLACEHOLDER",
            "{location}",
            "[city]",
            "...",
            "???",
            "City",
            "the name of the city",
        ] {
            assert!(is_placeholder(text), "{text}");
        }
    }

    #[test]
    fn real_names_are_not_placeholders() {
        for text in [
            "Paris",
            "New York City",
            "Mexico City",
            "Springfield",
            "Kansas City",
            "Hong Kong",
            "Salt Lake City",
            "Atlantis",
            "Nagoya",
        ] {
            assert!(!is_placeholder(text), "{text}");
        }
    }

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("pari", "paris"), 1);
        assert_eq!(edit_distance("tokio", "tokyo"), 1);
        assert_eq!(edit_distance("londn", "london"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn previews_are_cut() {
        assert_eq!(preview("Tokyo", 10), "Tokyo");
        assert_eq!(preview("abcdef", 3), "abc...");
    }
}
