//! A small table of major cities: names, IATA airport and metropolitan
//! codes, coordinates and a rough climate. Places not in the table still
//! get deterministic, plausible data derived from their name.

use agent_core::ToolError;

use crate::dice::Dice;

/// A city the tools know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct City {
    /// Display name.
    pub(crate) name: &'static str,
    pub(crate) country: &'static str,
    /// The main airport's IATA code.
    pub(crate) airport: &'static str,
    /// Other names and codes, lower case: metropolitan codes, other
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
    ("Washington", "United States", "IAD", ["was", "dca", "washington dc", "washington d.c.", "dc"], 38.91, -77.04, 14.5, 12.0, 64.0, 0.35),
    ("Dallas", "United States", "DFW", [], 32.78, -96.80, 19.5, 10.5, 60.0, 0.25),
    ("Atlanta", "United States", "ATL", [], 33.75, -84.39, 17.5, 9.5, 67.0, 0.35),
    ("Denver", "United States", "DEN", [], 39.74, -104.99, 10.5, 11.0, 50.0, 0.20),
    ("Las Vegas", "United States", "LAS", ["vegas"], 36.17, -115.14, 20.5, 12.5, 30.0, 0.05),
    ("Honolulu", "United States", "HNL", [], 21.31, -157.86, 25.5, 2.0, 70.0, 0.25),
    ("Toronto", "Canada", "YYZ", ["yto"], 43.65, -79.38, 9.0, 13.5, 70.0, 0.35),
    ("Vancouver", "Canada", "YVR", [], 49.28, -123.12, 11.0, 7.0, 75.0, 0.50), ( "Mexico City", "Mexico", "MEX", ["ciudad de mexico", "ciudad de méxico", "cdmx"], 19.43, -99.13, 17.0, 3.0, 55.0, 0.30),
    ("London", "United Kingdom", "LHR", ["lon", "lgw", "stn"], 51.51, -0.13, 11.5, 6.5, 75.0, 0.45),
    ("Paris", "France", "CDG", ["par", "ory"], 48.86, 2.35, 12.5, 8.0, 72.0, 0.40),
    ("Berlin", "Germany", "BER", [], 52.52, 13.40, 10.0, 9.5, 72.0, 0.35), ("Frankfurt", "Germany", "FRA", [], 50.11, 8.68, 10.5, 9.0, 72.0, 0.35), ( "Munich", "Germany", "MUC", ["münchen", "muenchen"], 48.14, 11.58, 9.0, 9.5, 74.0, 0.40),
    ("Amsterdam", "Netherlands", "AMS", [], 52.37, 4.90, 10.5, 7.0, 80.0, 0.45),
    ("Madrid", "Spain", "MAD", [], 40.42, -3.70, 15.0, 10.0, 57.0, 0.20), ("Barcelona", "Spain", "BCN", [], 41.39, 2.17, 16.5, 7.5, 70.0, 0.25), ( "Rome", "Italy", "FCO", ["rom", "roma"], 41.90, 12.50, 15.5, 8.5, 70.0, 0.25),
    ("Milan", "Italy", "MXP", ["mil", "milano", "lin"], 45.46, 9.19, 13.0, 10.5, 74.0, 0.35),
    ("Zurich", "Switzerland", "ZRH", ["zürich"], 47.38, 8.54, 9.5, 9.0, 76.0, 0.40),
    ("Vienna", "Austria", "VIE", ["wien"], 48.21, 16.37, 11.0, 10.5, 70.0, 0.35),
    ("Dublin", "Ireland", "DUB", [], 53.35, -6.26, 10.0, 5.0, 82.0, 0.50), ( "Lisbon", "Portugal", "LIS", ["lisboa"], 38.72, -9.14, 17.5, 6.0, 70.0, 0.25),
    ("Stockholm", "Sweden", "ARN", ["sto"], 59.33, 18.07, 7.5, 10.5, 75.0, 0.35),
    ("Copenhagen", "Denmark", "CPH", ["københavn"], 55.68, 12.57, 9.0, 8.5, 79.0, 0.40),
    ("Reykjavik", "Iceland", "KEF", ["reykjavík"], 64.15, -21.94, 5.0, 5.5, 78.0, 0.50),
    ("Istanbul", "Türkiye", "IST", ["saw"], 41.01, 28.98, 15.0, 9.5, 72.0, 0.30),
    ("Dubai", "United Arab Emirates", "DXB", [], 25.20, 55.27, 28.0, 7.5, 55.0, 0.03),
    ("Cairo", "Egypt", "CAI", [], 30.04, 31.24, 22.5, 7.5, 55.0, 0.02), ( "Johannesburg", "South Africa", "JNB", ["joburg"], -26.20, 28.05, 16.0, 5.0, 55.0, 0.25),
    ("Nairobi", "Kenya", "NBO", [], -1.29, 36.82, 18.5, 1.5, 65.0, 0.30), ( "Mumbai", "India", "BOM", ["bombay"], 19.08, 72.88, 27.5, 2.5, 75.0, 0.35),
    ("Delhi", "India", "DEL", ["new delhi"], 28.61, 77.21, 25.0, 9.0, 60.0, 0.20),
    ("Bangkok", "Thailand", "BKK", ["dmk"], 13.76, 100.50, 29.0, 2.0, 75.0, 0.40),
    ("Singapore", "Singapore", "SIN", [], 1.35, 103.82, 27.5, 1.0, 83.0, 0.55), ("Hong Kong", "China", "HKG", [], 22.32, 114.17, 23.5, 5.5, 78.0, 0.40), ( "Beijing", "China", "PEK", ["bjs", "pkx", "peking"], 39.90, 116.41, 13.0, 15.0, 55.0, 0.20),
    ("Shanghai", "China", "PVG", ["sha"], 31.23, 121.47, 17.0, 11.0, 75.0, 0.40),
    ("Seoul", "South Korea", "ICN", ["sel", "gmp"], 37.57, 126.98, 12.5, 14.0, 65.0, 0.30),
    ("Tokyo", "Japan", "HND", ["tyo", "nrt"], 35.68, 139.69, 16.0, 10.0, 65.0, 0.35),
    ("Osaka", "Japan", "KIX", ["osa", "itm"], 34.69, 135.50, 17.0, 10.0, 65.0, 0.35),
    ("Sydney", "Australia", "SYD", [], -33.87, 151.21, 18.5, 5.0, 68.0, 0.35), ( "Melbourne", "Australia", "MEL", [], -37.81, 144.96, 15.0, 5.0, 67.0, 0.35),
    ("Auckland", "New Zealand", "AKL", [], -36.85, 174.76, 15.5, 4.0, 78.0, 0.45),
    ("São Paulo", "Brazil", "GRU", ["sao paulo", "sao", "cgh"], -23.55, -46.63, 20.0, 3.5, 75.0, 0.40),
    ("Rio de Janeiro", "Brazil", "GIG", ["rio", "sdu"], -22.91, -43.17, 24.0, 3.0, 78.0, 0.35),
    ("Buenos Aires", "Argentina", "EZE", ["bue", "aep"], -34.60, -58.38, 18.0, 6.5, 72.0, 0.30),
];

/// A place as the tools understand it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Place {
    /// A city from the table.
    Known(&'static City),
    /// Anything else, by its cleaned-up name.
    Unknown(String),
}

impl Place {
    /// Resolves what the model wrote: a city name, an alias, or an IATA
    /// airport or metropolitan code, ignoring case, spacing, and a trailing
    /// ", country" or ", state". Empty input is an error.
    pub(crate) fn resolve(input: &str, what: &str) -> Result<Self, ToolError> {
        let cleaned = input.split_whitespace().collect::<Vec<_>>().join(" ");
        if cleaned.is_empty() {
            return Err(ToolError::failed(format!(
                "{what} must not be empty; give a city name such as \"Paris\" or an airport code such as \"CDG\""
            )));
        }
        let whole = cleaned.to_lowercase();
        let head = whole.split(',').next().unwrap_or(&whole).trim().to_owned();
        for candidate in [&whole, &head] {
            if let Some(city) = CITIES.iter().find(|city| city.matches(candidate)) {
                return Ok(Self::Known(city));
            }
        }
        Ok(Self::Unknown(cleaned))
    }

    /// The name to show.
    pub(crate) fn display_name(&self) -> String {
        match self {
            Self::Known(city) => format!("{}, {}", city.name, city.country),
            Self::Unknown(name) => name.clone(),
        }
    }

    /// A stable key for hashing: the same for every way of naming a city.
    pub(crate) fn key(&self) -> String {
        match self {
            Self::Known(city) => city.airport.to_owned(),
            Self::Unknown(name) => name.to_lowercase(),
        }
    }

    /// The main airport's code; for unknown places, a made-up three-letter
    /// code from the name's letters.
    pub(crate) fn airport(&self) -> String {
        match self {
            Self::Known(city) => city.airport.to_owned(),
            Self::Unknown(name) => {
                let mut code: String = name
                    .chars()
                    .filter(char::is_ascii_alphabetic)
                    .take(3)
                    .collect::<String>()
                    .to_ascii_uppercase();
                while code.len() < 3 {
                    code.push('X');
                }
                code
            }
        }
    }

    /// The climate: mean temperature, seasonal swing, humidity, wetness
    /// and whether the place is in the southern hemisphere. Unknown places
    /// get a temperate climate varied by their name.
    pub(crate) fn climate(&self) -> (f64, f64, f64, f64, bool) {
        match self {
            Self::Known(city) => (
                city.mean_temperature,
                city.seasonal_swing,
                city.humidity,
                city.wetness,
                city.latitude < 0.0,
            ),
            Self::Unknown(_) => {
                let mut dice = Dice::new(&["climate", &self.key()]);
                (
                    dice.range(6.0, 24.0),
                    dice.range(3.0, 11.0),
                    dice.range(50.0, 80.0),
                    dice.range(0.1, 0.5),
                    false,
                )
            }
        }
    }
}

impl City {
    fn matches(&self, lower: &str) -> bool {
        self.name.to_lowercase() == lower || self.airport.eq_ignore_ascii_case(lower) || self.aliases.contains(&lower)
    }
}

/// Great-circle distance in kilometres between two known cities, or a
/// stable made-up distance (400 to 12,000 km) when either is unknown.
pub(crate) fn distance_km(origin: &Place, destination: &Place) -> f64 {
    if let (Place::Known(a), Place::Known(b)) = (origin, destination) {
        return haversine_km(a.latitude, a.longitude, b.latitude, b.longitude);
    }
    let (first, second) = {
        let (a, b) = (origin.key(), destination.key());
        if a <= b { (a, b) } else { (b, a) }
    };
    Dice::new(&["distance", &first, &second]).range(400.0, 12_000.0)
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
#[allow(clippy::unwrap_used, clippy::float_cmp)]
mod tests {
    use super::*;

    fn city(input: &str) -> &'static str {
        match Place::resolve(input, "location").unwrap() {
            Place::Known(city) => city.name,
            Place::Unknown(name) => panic!("{input} resolved to unknown {name}"),
        }
    }

    #[test]
    fn names_codes_and_aliases_resolve() {
        assert_eq!(city("NYC"), "New York");
        assert_eq!(city("new york"), "New York");
        assert_eq!(city("  New   York City "), "New York");
        assert_eq!(city("jfk"), "New York");
        assert_eq!(city("Tokyo, Japan"), "Tokyo");
        assert_eq!(city("TYO"), "Tokyo");
        assert_eq!(city("Sao Paulo"), "São Paulo");
        assert_eq!(city("LHR"), "London");
    }

    #[test]
    fn unknown_places_keep_their_name() {
        assert_eq!(
            Place::resolve(" Springfield ", "location").unwrap(),
            Place::Unknown("Springfield".into())
        );
        assert_eq!(Place::Unknown("Springfield".into()).airport(), "SPR");
        assert_eq!(Place::Unknown("Ée".into()).airport(), "EXX");
        assert!(
            Place::resolve("   ", "origin")
                .unwrap_err()
                .to_string()
                .starts_with("origin must not be empty")
        );
    }

    #[test]
    fn table_is_consistent() {
        for (index, city) in CITIES.iter().enumerate() {
            assert_eq!(city.airport.len(), 3);
            assert!(
                city.aliases.iter().all(|alias| alias.to_lowercase() == *alias),
                "{}",
                city.name
            );
            // No name, code or alias is claimed by two cities.
            for other in &CITIES[index + 1..] {
                assert!(
                    !other.matches(&city.name.to_lowercase()),
                    "{} / {}",
                    city.name,
                    other.name
                );
                assert!(
                    !other.matches(&city.airport.to_lowercase()),
                    "{} / {}",
                    city.name,
                    other.name
                );
                for alias in city.aliases {
                    assert!(!other.matches(alias), "{alias}: {} / {}", city.name, other.name);
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
        let nowhere = Place::resolve("Atlantis", "destination").unwrap();
        assert_eq!(distance_km(&nyc, &nowhere), distance_km(&nowhere, &nyc));
        assert!((400.0..12_000.0).contains(&distance_km(&nyc, &nowhere)));
    }
}
