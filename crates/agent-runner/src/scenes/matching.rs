//! Forgiving matching of the scene name a model asked for against the
//! scenes there are.
//!
//! Models write names loosely: `calculator` for `Calculator`,
//! `calculator_scene` or `Calculator-Agent` for it, `Calcualtor` with two
//! letters swapped, or a whole sentence that names it. [`match_name`] tries,
//! in order, and takes a tier's answer only when exactly one scene fits it
//! (two scenes that fit equally well are not guessed between):
//!
//! 1. the exact name ([`MatchKind::Exact`]);
//! 2. the same words whatever the case and separators (`-`, `_`, spaces,
//!    camelCase), also once filler words such as "scene" or "agent" are
//!    dropped from both ([`MatchKind::Normalized`]);
//! 3. a small edit distance between those forms (optimal string alignment:
//!    a swap of two neighbouring letters counts as one edit), at most 1
//!    when the shorter of the two has 4 to 7 letters and 2 when it has more
//!    ([`MatchKind::Fuzzy`]);
//! 4. the words of exactly one scene's name appearing in order in the text
//!    ([`MatchKind::Mentioned`]), for a model that answered in a sentence.

/// Words a model adds to a scene's name that do not tell scenes apart.
const FILLER_WORDS: &[&str] = &[
    "scene",
    "scenes",
    "agent",
    "subagent",
    "assistant",
    "expert",
    "mode",
    "the",
];

/// Longest normalised text the edit distance is computed for: a longer
/// answer is a sentence, which only tier 4 can match.
const MAX_FUZZY_LEN: usize = 64;

/// How a requested name was matched to a scene.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchKind {
    /// Exactly the scene's name.
    Exact,
    /// The same words, ignoring case, separators and filler words.
    Normalized,
    /// Within a small edit distance of the scene's name.
    Fuzzy {
        /// The number of edits.
        distance: usize,
    },
    /// The scene's name appears in a longer answer.
    Mentioned,
}

/// The scene a requested name was matched to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameMatch {
    /// Its index in the names given to [`match_name`].
    pub index: usize,
    /// How it matched.
    pub kind: MatchKind,
}

/// The scene among `names` that `requested` means, if exactly one fits;
/// tried in order: the exact name, the same words whatever the case,
/// separators and filler words ("scene", "agent"), a small edit distance,
/// then one scene's words named in order in a sentence ([`MatchKind`]).
pub fn match_name<S: AsRef<str>>(requested: &str, names: &[S]) -> Option<NameMatch> {
    let requested = requested.trim();
    if requested.is_empty() {
        return None;
    }
    if let Some(index) = unique(names.iter().map(|name| name.as_ref() == requested)) {
        return Some(NameMatch {
            index,
            kind: MatchKind::Exact,
        });
    }
    let wanted = Words::of(requested);
    let candidates: Vec<Words> = names.iter().map(|name| Words::of(name.as_ref())).collect();
    if let Some(index) = unique(candidates.iter().map(|words| words.joined() == wanted.joined())) {
        return Some(NameMatch {
            index,
            kind: MatchKind::Normalized,
        });
    }
    let core = wanted.core();
    if !core.is_empty()
        && let Some(index) = unique(candidates.iter().map(|words| words.core() == core))
    {
        return Some(NameMatch {
            index,
            kind: MatchKind::Normalized,
        });
    }
    if let Some(found) = fuzzy(&core, &candidates) {
        return Some(found);
    }
    let mentioned = candidates.iter().map(|words| {
        let needle = words.core_words();
        !needle.is_empty()
            && wanted
                .words
                .windows(needle.len())
                .any(|window| window == needle.as_slice())
    });
    unique(mentioned).map(|index| NameMatch {
        index,
        kind: MatchKind::Mentioned,
    })
}

/// The closest candidate within its allowed distance, when it is the only
/// one that close.
fn fuzzy(core: &str, candidates: &[Words]) -> Option<NameMatch> {
    let length = core.chars().count();
    if length == 0 || length > MAX_FUZZY_LEN {
        return None;
    }
    let distances: Vec<Option<usize>> = candidates
        .iter()
        .map(|words| {
            let target = words.core();
            let allowed = allowed_distance(length.min(target.chars().count()));
            let distance = edit_distance(core, &target);
            (allowed > 0 && distance <= allowed).then_some(distance)
        })
        .collect();
    let best = distances.iter().flatten().min().copied()?;
    let index = unique(distances.iter().map(|distance| *distance == Some(best)))?;
    Some(NameMatch {
        index,
        kind: MatchKind::Fuzzy { distance: best },
    })
}

/// Edits tolerated for a name of `length` letters.
fn allowed_distance(length: usize) -> usize {
    match length {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// The index of the only `true`, if there is exactly one.
fn unique(flags: impl Iterator<Item = bool>) -> Option<usize> {
    let mut found = None;
    for (index, flag) in flags.enumerate() {
        if flag {
            if found.is_some() {
                return None;
            }
            found = Some(index);
        }
    }
    found
}

/// A name as lowercase words: split at anything not a letter or digit and
/// where a lowercase letter or digit is followed by an uppercase one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Words {
    words: Vec<String>,
}

impl Words {
    fn of(text: &str) -> Self {
        let mut words = Vec::new();
        let mut current = String::new();
        let mut previous_lower = false;
        for c in text.chars() {
            if !c.is_alphanumeric() {
                if !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                previous_lower = false;
                continue;
            }
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            words.push(current);
        }
        Self { words }
    }

    /// Every word, run together.
    fn joined(&self) -> String {
        self.words.concat()
    }

    /// The words without filler; all of them when they are all filler.
    fn core_words(&self) -> Vec<String> {
        let kept: Vec<String> = self
            .words
            .iter()
            .filter(|word| !FILLER_WORDS.contains(&word.as_str()))
            .cloned()
            .collect();
        if kept.is_empty() { self.words.clone() } else { kept }
    }

    /// The core words, run together.
    fn core(&self) -> String {
        self.core_words().concat()
    }
}

/// The optimal-string-alignment distance: insertions, deletions,
/// substitutions and swaps of two neighbouring characters, each one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    // Three rows: two back (for swaps), the previous one and the current one.
    let mut before: Vec<usize> = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    let mut current: Vec<usize> = vec![0; width];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..width {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (previous[j] + 1).min(current[j - 1] + 1).min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENES: [&str; 3] = ["Calculator", "Weather", "FlightBooking"];

    fn scene_of(requested: &str) -> Option<(&'static str, MatchKind)> {
        match_name(requested, &SCENES).map(|found| (SCENES[found.index], found.kind))
    }

    #[test]
    fn the_exact_name_matches_exactly() {
        assert_eq!(scene_of("Calculator"), Some(("Calculator", MatchKind::Exact)));
        assert_eq!(scene_of("  Weather \n"), Some(("Weather", MatchKind::Exact)));
    }

    #[test]
    fn case_separators_and_filler_words_are_ignored() {
        for requested in [
            "calculator",
            "CALCULATOR",
            "calculator_scene",
            "calculator-scene",
            "Calculator Agent",
            "the calculator scene",
            "CalculatorScene",
        ] {
            assert_eq!(
                scene_of(requested),
                Some(("Calculator", MatchKind::Normalized)),
                "{requested}"
            );
        }
        for requested in ["flight_booking", "flight-booking", "Flight Booking", "flightbooking"] {
            assert_eq!(
                scene_of(requested),
                Some(("FlightBooking", MatchKind::Normalized)),
                "{requested}"
            );
        }
    }

    #[test]
    fn small_typos_match_within_the_allowed_distance() {
        assert_eq!(
            scene_of("Calcualtor"),
            Some(("Calculator", MatchKind::Fuzzy { distance: 1 }))
        );
        assert_eq!(
            scene_of("calculater_scene"),
            Some(("Calculator", MatchKind::Fuzzy { distance: 1 }))
        );
        assert_eq!(scene_of("Wether"), Some(("Weather", MatchKind::Fuzzy { distance: 1 })));
        assert_eq!(
            scene_of("flight-bookign"),
            Some(("FlightBooking", MatchKind::Fuzzy { distance: 1 }))
        );
        // Too far from every name.
        assert_eq!(scene_of("Calendar"), None);
        assert_eq!(scene_of("Whatever"), None);
    }

    #[test]
    fn short_names_need_the_exact_words() {
        let names = ["Map", "Math"];
        assert_eq!(match_name("mat", &names), None);
        assert_eq!(match_name("maths", &names).map(|found| found.index), Some(1));
        assert_eq!(match_name("MAP", &names).map(|found| found.index), Some(0));
    }

    #[test]
    fn a_sentence_naming_one_scene_matches_it() {
        assert_eq!(
            scene_of("I would pick the Weather scene for this."),
            Some(("Weather", MatchKind::Mentioned))
        );
        assert_eq!(
            scene_of("Use flight booking."),
            Some(("FlightBooking", MatchKind::Mentioned))
        );
        assert_eq!(scene_of("Either weather or calculator"), None);
    }

    #[test]
    fn ties_are_not_guessed() {
        // One edit from both.
        assert_eq!(match_name("cart", &["card", "care"]), None);
        // The same words twice.
        assert_eq!(match_name("math", &["Math", "MATH"]), None);
        // Nothing asked, nothing matched.
        assert_eq!(match_name("  ", &SCENES), None);
        assert_eq!(match_name::<&str>("Calculator", &[]), None);
    }

    #[test]
    fn the_edit_distance_counts_a_swap_once() {
        assert_eq!(edit_distance("calculator", "calculator"), 0);
        assert_eq!(edit_distance("calcualtor", "calculator"), 1);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("ca", "abc"), 3);
    }

    #[test]
    fn words_split_at_separators_and_case_changes() {
        assert_eq!(Words::of("FlightBooking_v2-x").words, ["flight", "booking", "v2", "x"]);
        assert_eq!(Words::of("HTTPServer").words, ["httpserver"]);
        assert_eq!(Words::of("scene").core(), "scene");
    }
}
