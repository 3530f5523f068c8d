//! Arguments must come from the user: a city or a date the user never
//! mentioned was made up by the model (small models fill a missing city
//! with one from an example, or today's date for a flight), so the tools
//! refuse it and tell the model to ask. The check uses the conversation the
//! runner hands the tools ([`ToolContext::user_text`](agent_core::ToolContext::user_text), matched
//! as [`UserWords`]); without it, or with
//! the check switched off ([`TravelTools::checking_user_named`](crate::TravelTools::checking_user_named)),
//! every argument is taken as given.

use agent_core::ToolError;
use agent_tools::UserWords;

use crate::countries::COUNTRIES;
use crate::missing::ask_back;
use crate::places::{CITIES, Place};

/// Words that show the user has talked about when: months, weekdays and
/// relative dates. ("may" is left out: it is a verb more often than not.)
const DATE_WORDS: &[&str] = &[
    "january",
    "jan",
    "february",
    "feb",
    "march",
    "mar",
    "april",
    "apr",
    "june",
    "jun",
    "july",
    "jul",
    "august",
    "aug",
    "september",
    "sep",
    "sept",
    "october",
    "oct",
    "november",
    "nov",
    "december",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tonight",
    "tomorrow",
    "weekend",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "days",
];

/// Refuses `place` (what the model wrote as `query` for `what`) when the
/// user named neither it nor its city, one of the city's other names or
/// codes, or its country.
pub(crate) fn check_place(said: Option<&UserWords>, query: &str, place: &Place, what: &str) -> Result<(), ToolError> {
    let Some(words) = said else {
        return Ok(());
    };
    let city = place.city;
    let named = words.contains(query)
        || said_name(words, city.name, city.aliases)
        || words.contains(city.airport)
        || words.contains(city.country)
        || place.country.is_some_and(|country| words.contains(country.name));
    if named {
        return Ok(());
    }
    let refused = format!("the user has not named {query:?} (the {what})");
    let places: Vec<String> = named_places(words).iter().map(|place| format!("{place:?}")).collect();
    if places.is_empty() {
        return Err(ask_back(
            &format!("{refused}, so do not guess it"),
            "Which city do you mean?",
        ));
    }
    Err(ToolError::failed(format!(
        "{refused}; the user named {}. Call the tool again with the place the user meant",
        places.join(" or ")
    )))
}

/// Whether the user wrote `name` or one of its `aliases`.
fn said_name(words: &UserWords, name: &str, aliases: &[&str]) -> bool {
    words.contains(name) || aliases.iter().any(|alias| words.contains(alias))
}

/// The places of the gazetteer the user named (cities, by any of their
/// other names, and countries), at most [`MAX_NAMED`], in table order.
/// Airport codes are left out here: "MAD" or "CAN" would turn up in
/// ordinary words.
fn named_places(words: &UserWords) -> Vec<&'static str> {
    let cities = CITIES
        .iter()
        .filter(|city| said_name(words, city.name, city.aliases))
        .map(|city| city.name);
    let countries = COUNTRIES
        .iter()
        .filter(|country| said_name(words, country.name, country.aliases))
        .map(|country| country.name);
    let mut named: Vec<&'static str> = Vec::new();
    for place in cities.chain(countries) {
        if !named.contains(&place) {
            named.push(place);
        }
    }
    named.truncate(MAX_NAMED);
    named
}

/// How many places the user named a refusal lists.
const MAX_NAMED: usize = 3;

/// Refuses a date (as the model wrote it) when the user has not talked
/// about dates at all: the model made one up.
pub(crate) fn check_date(said: Option<&UserWords>, spoken: &str) -> Result<(), ToolError> {
    let Some(words) = said else {
        return Ok(());
    };
    let talked_about_dates = words.contains(spoken)
        || DATE_WORDS.iter().any(|word| words.contains(word))
        || words.as_str().split(' ').any(looks_like_a_numeric_date);
    if talked_about_dates {
        return Ok(());
    }
    Err(ask_back(
        &format!("the user has not said when the flight is ({spoken:?} is a guess)"),
        "On what date do you want to fly?",
    ))
}

/// Number words that show the user has talked about how much.
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "fifteen",
    "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "billion", "dozen", "grand",
];

/// Refuses an amount of money when the user has given no figure at all
/// (digits or number words): the model made it up, as small models do
/// with the `100` of the tool's example.
pub(crate) fn check_amount(said: Option<&UserWords>, amount: f64) -> Result<(), ToolError> {
    let Some(words) = said else {
        return Ok(());
    };
    let gave_a_figure = words
        .as_str()
        .split(' ')
        .any(|word| word.bytes().any(|b| b.is_ascii_digit()) || NUMBER_WORDS.contains(&word));
    if gave_a_figure {
        return Ok(());
    }
    Err(ask_back(
        &format!("the user has not said how much to convert ({amount} is a guess)"),
        "How much do you want to convert?",
    ))
}

/// `2026` followed by more digits in ISO form is split by the normaliser;
/// a four-digit year is enough to count as a date mention.
fn looks_like_a_numeric_date(word: &str) -> bool {
    word.len() == 4 && word.starts_with("20") && word.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use agent_tools::UserWords;

    use super::*;

    fn context(said: &str) -> UserWords {
        UserWords::from_text(said)
    }

    fn place(query: &str) -> Place {
        Place::resolve(query, "location").unwrap()
    }

    #[test]
    fn a_city_counts_as_named_by_any_of_its_names_or_its_country() {
        let said = context("Flights from NYC to Australia, and the weather in São Paulo?");
        for query in ["New York", "JFK", "nyc", "Sao Paulo", "Canberra", "Australia"] {
            assert!(
                check_place(Some(&said), query, &place(query), "origin").is_ok(),
                "{query}"
            );
        }
        let error = check_place(Some(&said), "Paris", &place("Paris"), "location")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "the user has not named \"Paris\" (the location); the user named \"New York\" or \"São Paulo\" or \
             \"Australia\". Call the tool again with the place the user meant"
        );
    }

    /// The refusal of `query` as the location after the user said `said`.
    fn refusal(said: &str, query: &str) -> String {
        check_place(Some(&context(said)), query, &place(query), "location")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_refused_place_names_the_one_the_user_said_or_asks_when_there_is_none() {
        let error = refusal("Is it cold in Oslo right now?", "Tokyo");
        assert!(
            error.contains("the user named \"Oslo\". Call the tool again"),
            "{error}"
        );
        assert_eq!(
            refusal("What's the weather like?", "Tokyo"),
            "the user has not named \"Tokyo\" (the location), so do not guess it. Reply to the user with a short \
             question, for example: Which city do you mean?"
        );
    }

    #[test]
    fn without_the_conversation_everything_is_taken_as_given() {
        assert!(check_place(None, "Paris", &place("Paris"), "location").is_ok());
        assert!(check_date(None, "2030-01-01").is_ok());
    }

    #[test]
    fn an_amount_needs_the_user_to_have_given_a_figure() {
        let error = check_amount(Some(&context("Convert my money to euros.")), 100.0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "the user has not said how much to convert (100 is a guess). Reply to the user with a short \
             question, for example: How much do you want to convert?"
        );
        for said in [
            "Convert 200 USD to EUR",
            "how many euros do 1,000 dollars buy?",
            "a hundred pounds in yen",
            "Convert the cheapest fare on 2026-11-20 to JPY",
        ] {
            assert!(check_amount(Some(&context(said)), 123.0).is_ok(), "{said}");
        }
        assert!(check_amount(None, 100.0).is_ok());
    }

    #[test]
    fn a_date_needs_the_user_to_have_talked_about_when() {
        let error = check_date(Some(&context("How much is a flight from NYC to Paris?")), "June 15")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("the user has not said when the flight is"), "{error}");
        for said in [
            "It's June 15",
            "next month",
            "on 2027-06-15",
            "this Friday",
            "in 3 days",
            "15 jun",
        ] {
            assert!(check_date(Some(&context(said)), "2027-06-15").is_ok(), "{said}");
        }
        assert!(check_date(Some(&context("May I fly to Oslo?")), "2027-05-01").is_err());
    }
}
