//! The gazetteer: a table of major cities (names, IATA airport and
//! metropolitan codes, coordinates, a rough climate) and how what the model
//! wrote resolves against it. A place must be a city of the table (by name,
//! alias or code) or a country standing for one of them; anything else is
//! an error that says so, suggests close matches and tells the model to ask
//! the user, because made-up data for a made-up place misleads everyone.

use agent_core::ToolError;

use crate::countries::{Country, find_country, find_region};
use crate::names::{MAX_FUZZY_CHARS, edit_distance, is_placeholder, key, preview};

/// How many characters of the model's input an error quotes.
const QUOTE_CHARS: usize = 60;

/// How many close matches an error names.
const MAX_SUGGESTIONS: usize = 3;

/// A city the tools know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct City {
    /// Display name.
    pub(crate) name: &'static str,
    pub(crate) country: &'static str,
    /// The main airport's IATA code.
    pub(crate) airport: &'static str,
    /// Other names and codes, in [`key`] form: metropolitan codes, other
    /// airports, spellings.
    pub(crate) aliases: &'static [&'static str],
    pub(crate) latitude: f64,
    pub(crate) longitude: f64,
    /// Mean annual temperature, °C.
    pub(crate) mean_temperature: f64,
    /// Half the difference between the warmest and coldest month, °C.
    pub(crate) seasonal_swing: f64,
    /// Typical relative humidity, %.
    pub(crate) humidity: f64,
    /// How often it rains, 0 (desert) to 1.
    pub(crate) wetness: f64,
}

macro_rules! cities {
    ($(($name:literal, $country:literal, $airport:literal, [$($alias:literal),*], $lat:literal, $lon:literal,
        $mean:literal, $swing:literal, $humidity:literal, $wet:literal)),* $(,)?) => {
        &[$(City {
            name: $name,
            country: $country,
            airport: $airport,
            aliases: &[$($alias),*],
            latitude: $lat,
            longitude: $lon,
            mean_temperature: $mean,
            seasonal_swing: $swing,
            humidity: $humidity,
            wetness: $wet,
        }),*]
    };
}

/// The known cities: name, country, main airport, aliases, latitude,
/// longitude, mean °C, seasonal swing °C, humidity %, wetness.
#[rustfmt::skip]
pub(crate) static CITIES: &[City] = cities![
    ("New York", "United States", "JFK", ["nyc", "new york city", "ny", "lga", "ewr", "manhattan"], 40.71, -74.01, 13.0, 12.0, 63.0, 0.35),
    ("Los Angeles", "United States", "LAX", ["la"], 34.05, -118.24, 18.5, 4.5, 65.0, 0.10),
    ("Chicago", "United States", "ORD", ["chi", "mdw"], 41.88, -87.63, 10.5, 14.0, 68.0, 0.35),
    ("San Francisco", "United States", "SFO", ["sf"], 37.77, -122.42, 14.5, 3.5, 72.0, 0.20),
    ("Miami", "United States", "MIA", [], 25.76, -80.19, 25.0, 4.0, 73.0, 0.45),
    ("Seattle", "United States", "SEA", [], 47.61, -122.33, 11.5, 7.0, 72.0, 0.50),
    ("Boston", "United States", "BOS", [], 42.36, -71.06, 11.0, 12.5, 66.0, 0.35),
    ("Washington", "United States", "IAD", ["was", "dca", "washington dc", "dc"], 38.91, -77.04, 14.5, 12.0, 64.0, 0.35),
    ("Dallas", "United States", "DFW", [], 32.78, -96.80, 19.5, 10.5, 60.0, 0.25),
    ("Atlanta", "United States", "ATL", [], 33.75, -84.39, 17.5, 9.5, 67.0, 0.35),
    ("Denver", "United States", "DEN", [], 39.74, -104.99, 10.5, 11.0, 50.0, 0.20),
    ("Las Vegas", "United States", "LAS", ["vegas"], 36.17, -115.14, 20.5, 12.5, 30.0, 0.05),
    ("Honolulu", "United States", "HNL", [], 21.31, -157.86, 25.5, 2.0, 70.0, 0.25),
    ("Toronto", "Canada", "YYZ", ["yto"], 43.65, -79.38, 9.0, 13.5, 70.0, 0.35),
    ("Vancouver", "Canada", "YVR", [], 49.28, -123.12, 11.0, 7.0, 75.0, 0.50),
    ("Ottawa", "Canada", "YOW", [], 45.42, -75.70, 6.5, 15.5, 70.0, 0.40),
    ("Mexico City", "Mexico", "MEX", ["ciudad de mexico", "cdmx"], 19.43, -99.13, 17.0, 3.0, 55.0, 0.30),
    ("Havana", "Cuba", "HAV", ["la habana"], 23.11, -82.37, 25.5, 2.5, 75.0, 0.40),
    ("London", "United Kingdom", "LHR", ["lon", "lgw", "stn"], 51.51, -0.13, 11.5, 6.5, 75.0, 0.45),
    ("Dublin", "Ireland", "DUB", [], 53.35, -6.26, 10.0, 5.0, 82.0, 0.50),
    ("Paris", "France", "CDG", ["par", "ory"], 48.86, 2.35, 12.5, 8.0, 72.0, 0.40),
    ("Berlin", "Germany", "BER", [], 52.52, 13.40, 10.0, 9.5, 72.0, 0.35),
    ("Frankfurt", "Germany", "FRA", [], 50.11, 8.68, 10.5, 9.0, 72.0, 0.35),
    ("Munich", "Germany", "MUC", ["munchen", "muenchen"], 48.14, 11.58, 9.0, 9.5, 74.0, 0.40),
    ("Amsterdam", "Netherlands", "AMS", [], 52.37, 4.90, 10.5, 7.0, 80.0, 0.45),
    ("Brussels", "Belgium", "BRU", ["bruxelles", "brussel"], 50.85, 4.35, 11.0, 7.5, 78.0, 0.45),
    ("Madrid", "Spain", "MAD", [], 40.42, -3.70, 15.0, 10.0, 57.0, 0.20),
    ("Barcelona", "Spain", "BCN", [], 41.39, 2.17, 16.5, 7.5, 70.0, 0.25),
    ("Lisbon", "Portugal", "LIS", ["lisboa"], 38.72, -9.14, 17.5, 6.0, 70.0, 0.25),
    ("Rome", "Italy", "FCO", ["rom", "roma"], 41.90, 12.50, 15.5, 8.5, 70.0, 0.25),
    ("Milan", "Italy", "MXP", ["mil", "milano", "lin"], 45.46, 9.19, 13.0, 10.5, 74.0, 0.35),
    ("Zurich", "Switzerland", "ZRH", [], 47.38, 8.54, 9.5, 9.0, 76.0, 0.40),
    ("Bern", "Switzerland", "BRN", ["berne"], 46.95, 7.45, 9.0, 9.0, 77.0, 0.40),
    ("Vienna", "Austria", "VIE", ["wien"], 48.21, 16.37, 11.0, 10.5, 70.0, 0.35),
    ("Stockholm", "Sweden", "ARN", ["sto"], 59.33, 18.07, 7.5, 10.5, 75.0, 0.35),
    ("Oslo", "Norway", "OSL", [], 59.91, 10.75, 6.5, 10.5, 72.0, 0.40),
    ("Copenhagen", "Denmark", "CPH", ["kobenhavn"], 55.68, 12.57, 9.0, 8.5, 79.0, 0.40),
    ("Helsinki", "Finland", "HEL", [], 60.17, 24.94, 6.0, 11.0, 78.0, 0.40),
    ("Reykjavik", "Iceland", "KEF", [], 64.15, -21.94, 5.0, 5.5, 78.0, 0.50),
    ("Warsaw", "Poland", "WAW", ["warszawa"], 52.23, 21.01, 8.5, 11.0, 75.0, 0.35),
    ("Prague", "Czechia", "PRG", ["praha"], 50.08, 14.44, 9.0, 10.0, 74.0, 0.35),
    ("Budapest", "Hungary", "BUD", [], 47.50, 19.04, 11.5, 11.5, 70.0, 0.30),
    ("Athens", "Greece", "ATH", ["athina"], 37.98, 23.73, 18.5, 9.0, 62.0, 0.15),
    ("Minsk", "Belarus", "MSQ", [], 53.90, 27.57, 7.0, 12.0, 78.0, 0.40),
    ("Kyiv", "Ukraine", "KBP", ["kiev", "iev"], 50.45, 30.52, 8.5, 12.5, 72.0, 0.35),
    ("Moscow", "Russia", "SVO", ["mow", "dme", "vko", "moskva"], 55.76, 37.62, 6.0, 14.0, 75.0, 0.35),
    ("Istanbul", "Türkiye", "IST", ["saw"], 41.01, 28.98, 15.0, 9.5, 72.0, 0.30),
    ("Ankara", "Türkiye", "ESB", [], 39.93, 32.86, 12.0, 12.0, 60.0, 0.20),
    ("Dubai", "United Arab Emirates", "DXB", [], 25.20, 55.27, 28.0, 7.5, 55.0, 0.03),
    ("Abu Dhabi", "United Arab Emirates", "AUH", [], 24.45, 54.38, 28.0, 7.5, 60.0, 0.03),
    ("Doha", "Qatar", "DOH", [], 25.29, 51.53, 28.0, 8.0, 60.0, 0.02),
    ("Riyadh", "Saudi Arabia", "RUH", [], 24.71, 46.68, 27.0, 9.5, 28.0, 0.02),
    ("Cairo", "Egypt", "CAI", [], 30.04, 31.24, 22.5, 7.5, 55.0, 0.02),
    ("Lagos", "Nigeria", "LOS", [], 6.52, 3.38, 27.0, 1.5, 80.0, 0.45),
    ("Nairobi", "Kenya", "NBO", [], -1.29, 36.82, 18.5, 1.5, 65.0, 0.30),
    ("Johannesburg", "South Africa", "JNB", ["joburg"], -26.20, 28.05, 16.0, 5.0, 55.0, 0.25),
    ("Mumbai", "India", "BOM", ["bombay"], 19.08, 72.88, 27.5, 2.5, 75.0, 0.35),
    ("Delhi", "India", "DEL", ["new delhi"], 28.61, 77.21, 25.0, 9.0, 60.0, 0.20),
    ("Bangkok", "Thailand", "BKK", ["dmk"], 13.76, 100.50, 29.0, 2.0, 75.0, 0.40),
    ("Hanoi", "Vietnam", "HAN", ["ha noi"], 21.03, 105.85, 24.0, 6.5, 79.0, 0.40),
    ("Kuala Lumpur", "Malaysia", "KUL", ["kl"], 3.15, 101.69, 27.5, 0.5, 80.0, 0.55),
    ("Singapore", "Singapore", "SIN", [], 1.35, 103.82, 27.5, 1.0, 83.0, 0.55),
    ("Jakarta", "Indonesia", "CGK", [], -6.21, 106.85, 27.5, 0.5, 80.0, 0.50),
    ("Manila", "Philippines", "MNL", [], 14.60, 120.98, 28.0, 1.5, 77.0, 0.45),
    ("Hong Kong", "China", "HKG", [], 22.32, 114.17, 23.5, 5.5, 78.0, 0.40),
    ("Beijing", "China", "PEK", ["bjs", "pkx", "peking"], 39.90, 116.41, 13.0, 15.0, 55.0, 0.20),
    ("Shanghai", "China", "PVG", ["sha"], 31.23, 121.47, 17.0, 11.0, 75.0, 0.40),
    ("Seoul", "South Korea", "ICN", ["sel", "gmp"], 37.57, 126.98, 12.5, 14.0, 65.0, 0.30),
    ("Tokyo", "Japan", "HND", ["tyo", "nrt"], 35.68, 139.69, 16.0, 10.0, 65.0, 0.35),
    ("Osaka", "Japan", "KIX", ["osa", "itm"], 34.69, 135.50, 17.0, 10.0, 65.0, 0.35),
    ("Sydney", "Australia", "SYD", [], -33.87, 151.21, 18.5, 5.0, 68.0, 0.35),
    ("Melbourne", "Australia", "MEL", [], -37.81, 144.96, 15.0, 5.0, 67.0, 0.35),
    ("Canberra", "Australia", "CBR", [], -35.28, 149.13, 13.0, 7.5, 65.0, 0.30),
    ("Auckland", "New Zealand", "AKL", [], -36.85, 174.76, 15.5, 4.0, 78.0, 0.45),
    ("Wellington", "New Zealand", "WLG", [], -41.29, 174.78, 13.0, 4.0, 80.0, 0.45),
    ("São Paulo", "Brazil", "GRU", ["sao", "cgh"], -23.55, -46.63, 20.0, 3.5, 75.0, 0.40),
    ("Rio de Janeiro", "Brazil", "GIG", ["rio", "sdu"], -22.91, -43.17, 24.0, 3.0, 78.0, 0.35),
    ("Brasília", "Brazil", "BSB", [], -15.79, -47.88, 21.5, 1.5, 65.0, 0.35),
    ("Buenos Aires", "Argentina", "EZE", ["bue", "aep"], -34.60, -58.38, 18.0, 6.5, 72.0, 0.30),
    ("Santiago", "Chile", "SCL", ["santiago de chile"], -33.45, -70.67, 14.5, 6.0, 65.0, 0.15),
    ("Lima", "Peru", "LIM", [], -12.05, -77.04, 19.5, 3.5, 80.0, 0.05),
    ("Bogotá", "Colombia", "BOG", [], 4.71, -74.07, 14.0, 0.5, 78.0, 0.50),
];

impl City {
    /// Whether `lookup` (in [`key`] form) is this city's name, airport
    /// code or an alias.
    fn matches(&self, lookup: &str) -> bool {
        key(self.name) == lookup || key(self.airport) == lookup || self.aliases.contains(&lookup)
    }

    /// Every key the city is known by.
    fn keys(&self) -> impl Iterator<Item = String> + '_ {
        [key(self.name), key(self.airport)]
            .into_iter()
            .chain(self.aliases.iter().map(|alias| (*alias).to_owned()))
    }
}

/// The city `lookup` (in [`key`] form) names, if any.
pub(crate) fn find_city(lookup: &str) -> Option<&'static City> {
    CITIES.iter().find(|city| city.matches(lookup))
}

/// A place as the tools understand it: a city of the table, reached by
/// its own name or through the country it stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Place {
    /// The city.
    pub(crate) city: &'static City,
    /// The country the input named, when it named one rather than a city.
    pub(crate) country: Option<&'static Country>,
}

impl Place {
    /// Resolves what the model wrote for the argument `what`: a city name,
    /// an alias or an IATA airport or metropolitan code, ignoring case,
    /// accents, spacing and a trailing ", country" or ", state"; or a
    /// country, which stands for its capital (or main city). Anything else
    /// is an error written for the model: empty input, a placeholder, a
    /// region, or an unknown name with close matches.
    pub(crate) fn resolve(input: &str, what: &str) -> Result<Self, ToolError> {
        let cleaned = input.split_whitespace().collect::<Vec<_>>().join(" ");
        if cleaned.is_empty() {
            return Err(ToolError::failed(format!(
                "{what} must not be empty; give a city name such as \"Paris\" or an airport code such as \"CDG\". \
                 If the user has not said which city, ask them"
            )));
        }
        let whole = key(&cleaned);
        let head = cleaned.split(',').next().map_or_else(String::new, key);
        for lookup in [&whole, &head] {
            if let Some(city) = find_city(lookup) {
                return Ok(Self { city, country: None });
            }
        }
        if let Some(city) = city_then_country(&whole) {
            return Ok(Self { city, country: None });
        }
        for lookup in [&whole, &head] {
            if let Some(country) = find_country(lookup)
                && let Some(city) = country.city()
            {
                return Ok(Self {
                    city,
                    country: Some(country),
                });
            }
        }
        let quoted = preview(&cleaned, QUOTE_CHARS);
        for lookup in [&whole, &head] {
            if let Some(region) = find_region(lookup) {
                let examples = if region.examples.is_empty() {
                    String::new()
                } else {
                    format!(" (for example {})", or_list(region.examples))
                };
                return Err(ToolError::failed(format!(
                    "{what} {quoted:?} is a region, not a city: give one specific city. Do not pick one yourself: \
                     ask the user which city in {name} they mean{examples}, then call the tool once per city",
                    name = region.name,
                )));
            }
        }
        if is_placeholder(&cleaned) {
            return Err(crate::missing::ask_back(
                &format!(
                    "{what} {quoted:?} looks like a placeholder, not a place: the user has not said which city. Do \
                     not call the tool with placeholder or example text"
                ),
                "Which city do you mean?",
            ));
        }
        let suggestions = suggest(&head);
        let hint = if suggestions.is_empty() {
            "The tools know about 80 major cities (by name or IATA code) and 50 countries. Do not guess or \
             substitute another place: ask the user which city they mean, or for a nearby major city"
                .to_owned()
        } else {
            format!(
                "Did you mean {}? Do not guess: unless the user clearly meant one of these, ask the user which \
                 city they mean",
                or_list(&suggestions)
            )
        };
        Err(ToolError::failed(format!(
            "{what} {quoted:?} is not a place these tools know. {hint}"
        )))
    }

    /// The name to show: "Tokyo, Japan".
    pub(crate) fn display_name(&self) -> String {
        format!("{}, {}", self.city.name, self.city.country)
    }

    /// A stable key for hashing: the same for every way of naming a city.
    pub(crate) fn key(&self) -> &'static str {
        self.city.airport
    }

    /// The main airport's IATA code.
    pub(crate) fn airport(&self) -> &'static str {
        self.city.airport
    }

    /// When the input named a country: what the tool did instead, for the
    /// model to pass on. `doing` completes "this is the weather in", say.
    pub(crate) fn note(&self, doing: &str) -> Option<String> {
        self.country.map(|country| {
            let role = if country.capital {
                "its capital"
            } else {
                "its main city"
            };
            format!(
                "{} is a country; {doing} {}, {role}. If the user meant another city there, ask them which one",
                country.name, self.city.name
            )
        })
    }

    /// The climate: mean temperature, seasonal swing, humidity, wetness
    /// and whether the place is in the southern hemisphere.
    pub(crate) fn climate(&self) -> (f64, f64, f64, f64, bool) {
        let city = self.city;
        (
            city.mean_temperature,
            city.seasonal_swing,
            city.humidity,
            city.wetness,
            city.latitude < 0.0,
        )
    }
}

/// "Tokyo Japan" (no comma): a city followed by the name of its country,
/// which has at most four words ("united states of america").
fn city_then_country(whole: &str) -> Option<&'static City> {
    whole.rmatch_indices(' ').take(4).find_map(|(at, _)| {
        let city = find_city(&whole[..at])?;
        let country = find_country(&whole[at + 1..])?;
        (country.name == city.country).then_some(city)
    })
}

/// Up to [`MAX_SUGGESTIONS`] cities or countries whose name, alias or code
/// is close to `lookup`: within a few edits (more for longer input), or
/// sharing a prefix with it. Best first, ties in table order.
fn suggest(lookup: &str) -> Vec<String> {
    let length = lookup.chars().count();
    if !(3..=MAX_FUZZY_CHARS).contains(&length) {
        return Vec::new();
    }
    // Edits allowed grow with the shorter of the two words, so a long
    // input is never "close" to a three-letter code.
    let allowed = |shorter: usize| match shorter {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let score = |candidate: &str| {
        let candidate_length = candidate.chars().count();
        let distance = edit_distance(lookup, candidate);
        let shares_prefix =
            candidate.starts_with(lookup) || (candidate_length >= 4 && lookup.starts_with(&format!("{candidate} ")));
        let distance = if shares_prefix { distance.min(1) } else { distance };
        (distance <= allowed(length.min(candidate_length))).then_some(distance)
    };
    let mut scored: Vec<(usize, usize, String)> = Vec::new();
    for (index, city) in CITIES.iter().enumerate() {
        if let Some(best) = city.keys().filter_map(|candidate| score(&candidate)).min() {
            scored.push((best, index, format!("{} ({})", city.name, city.country)));
        }
    }
    for (index, country) in crate::countries::COUNTRIES.iter().enumerate() {
        let keys = std::iter::once(key(country.name)).chain(country.aliases.iter().map(|a| (*a).to_owned()));
        if let Some(best) = keys.filter_map(|candidate| score(&candidate)).min() {
            scored.push((best, CITIES.len() + index, format!("{} (a country)", country.name)));
        }
    }
    scored.sort_by_key(|(best, index, _)| (*best, *index));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, _, name)| name)
        .collect()
}

/// `["a", "b", "c"]` -> `"a, b or c"`.
fn or_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [only] => only.as_ref().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(AsRef::as_ref).collect();
            format!("{} or {}", init.join(", "), last.as_ref())
        }
    }
}

/// Great-circle distance in kilometres between two places.
pub(crate) fn distance_km(origin: &Place, destination: &Place) -> f64 {
    let (a, b) = (origin.city, destination.city);
    haversine_km(a.latitude, a.longitude, b.latitude, b.longitude)
}

fn haversine_km(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    const EARTH_RADIUS_KM: f64 = 6371.0;
    let (phi1, phi2) = (lat1.to_radians(), lat2.to_radians());
    let d_phi = (lat2 - lat1).to_radians();
    let d_lambda = (lon2 - lon1).to_radians();
    let a = (d_phi / 2.0).sin().powi(2) + phi1.cos() * phi2.cos() * (d_lambda / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().atan2((1.0 - a).sqrt())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn city(input: &str) -> &'static str {
        let place = Place::resolve(input, "location").unwrap();
        assert_eq!(place.country, None, "{input} resolved through a country");
        place.city.name
    }

    fn error(input: &str) -> String {
        Place::resolve(input, "location").unwrap_err().to_string()
    }

    #[test]
    fn names_codes_and_aliases_resolve() {
        assert_eq!(city("NYC"), "New York");
        assert_eq!(city("new york"), "New York");
        assert_eq!(city("  New   York City "), "New York");
        assert_eq!(city("jfk"), "New York");
        assert_eq!(city("Tokyo, Japan"), "Tokyo");
        assert_eq!(city("Tokyo Japan"), "Tokyo");
        assert_eq!(city("New York, United States of America"), "New York");
        assert_eq!(city("TYO"), "Tokyo");
        assert_eq!(city("Sao Paulo"), "São Paulo");
        assert_eq!(city("ZÜRICH"), "Zurich");
        assert_eq!(city("Washington D.C."), "Washington");
        assert_eq!(city("LHR"), "London");
        assert_eq!(city("Tokyo?"), "Tokyo");
        assert_eq!(city("Oslo"), "Oslo");
    }

    #[test]
    fn countries_stand_for_their_capital_or_main_city() {
        for (country, capital) in [
            ("Australia", "Canberra"),
            ("Belarus", "Minsk"),
            ("Denmark", "Copenhagen"),
            ("Egypt", "Cairo"),
            ("France", "Paris"),
            ("Greece", "Athens"),
            ("Hungary", "Budapest"),
            ("the Netherlands", "Amsterdam"),
            ("USA", "Washington"),
            ("Turkey", "Ankara"),
        ] {
            let place = Place::resolve(country, "location").unwrap();
            assert_eq!(place.city.name, capital, "{country}");
            assert!(place.country.is_some(), "{country}");
        }
        let australia = Place::resolve("australia", "location").unwrap();
        assert_eq!(
            australia.note("this is the weather in").unwrap(),
            "Australia is a country; this is the weather in Canberra, its capital. \
             If the user meant another city there, ask them which one"
        );
        let south_africa = Place::resolve("South Africa", "destination").unwrap();
        assert_eq!(south_africa.city.name, "Johannesburg");
        assert!(
            south_africa
                .note("flights go to")
                .unwrap()
                .contains("Johannesburg, its main city")
        );
        assert_eq!(Place::resolve("Paris", "location").unwrap().note("x"), None);
    }

    #[test]
    fn regions_ask_for_a_specific_city() {
        let message = error("Caribbean");
        assert!(
            message.starts_with("location \"Caribbean\" is a region, not a city"),
            "{message}"
        );
        assert!(
            message.contains("ask the user which city in the Caribbean they mean"),
            "{message}"
        );
        let message = error("Europe");
        assert!(message.contains("(for example London, Paris or Rome)"), "{message}");
        assert!(error("the Middle East").contains("is a region"));
    }

    #[test]
    fn placeholders_are_refused() {
        for input in [
            "Your favorite city name or IATA airport code",
            "city name",
            "my favorite city",
            "unknown",
            "<city>",
            "user's city",
            "e.g. Paris",
            "N/A",
            "your city",
        ] {
            let message = error(input);
            assert!(
                message.contains("looks like a placeholder, not a place"),
                "{input}: {message}"
            );
            // Small models copy the example question into their reply.
            assert!(message.ends_with("for example: Which city do you mean?"), "{message}");
        }
    }

    #[test]
    fn unknown_places_are_refused_with_close_matches() {
        for (input, expected) in [
            ("Pari", "Paris (France)"),
            ("Tokio", "Tokyo (Japan)"),
            ("Londn", "London (United Kingdom)"),
        ] {
            let message = error(input);
            assert!(
                message.starts_with(&format!(
                    "location {input:?} is not a place these tools know. Did you mean {expected}"
                )),
                "{message}"
            );
            assert!(message.contains("ask the user which city they mean"), "{message}");
        }
        assert!(error("Australa").contains("Did you mean Australia (a country)"));
        assert!(error("Lond").contains("London (United Kingdom)"));
        // A long word is not close to a three-letter code ("kyoto" / "yto").
        assert!(!error("Kyoto").contains("Toronto"));
        // At most three suggestions.
        let message = error("Sant");
        let listed = message
            .split("Did you mean ")
            .nth(1)
            .unwrap()
            .split('?')
            .next()
            .unwrap();
        assert!(listed.matches(')').count() <= MAX_SUGGESTIONS, "{message}");
        let message = error("Springfield");
        assert!(!message.contains("Did you mean"), "{message}");
        assert!(
            message.contains("Do not guess or substitute another place"),
            "{message}"
        );
        let long = "q".repeat(10_000);
        let message = Place::resolve(&long, "origin").unwrap_err().to_string();
        assert!(message.len() < 600, "{message}");
        assert!(
            Place::resolve("   ", "origin")
                .unwrap_err()
                .to_string()
                .starts_with("origin must not be empty")
        );
    }

    #[test]
    fn table_is_consistent() {
        let mut seen = std::collections::HashMap::new();
        for city in CITIES {
            assert_eq!(city.airport.len(), 3);
            assert!(city.airport.bytes().all(|b| b.is_ascii_uppercase()), "{}", city.name);
            for alias in city.aliases {
                assert_eq!(key(alias), *alias, "{}: aliases are in key form", city.name);
            }
            assert!(!is_placeholder(city.name), "{}", city.name);
            // No name, code or alias is claimed by two cities.
            for name in city.keys() {
                if let Some(other) = seen.insert(name.clone(), city.name) {
                    assert_eq!(other, city.name, "{name}: {other} / {}", city.name);
                }
            }
        }
    }

    #[test]
    fn distances_are_plausible_and_symmetric() {
        let nyc = Place::resolve("NYC", "origin").unwrap();
        let london = Place::resolve("London", "destination").unwrap();
        let distance = distance_km(&nyc, &london);
        assert!((5500.0..5650.0).contains(&distance), "{distance}");
        assert!((distance_km(&london, &nyc) - distance).abs() < 1e-6);
        let france = Place::resolve("France", "destination").unwrap();
        assert!((300.0..400.0).contains(&distance_km(&london, &france)));
    }

    #[test]
    fn or_lists_read_naturally() {
        assert_eq!(or_list::<&str>(&[]), "");
        assert_eq!(or_list(&["a"]), "a");
        assert_eq!(or_list(&["a", "b", "c"]), "a, b or c");
    }
}
