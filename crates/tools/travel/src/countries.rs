//! Countries and regions people name instead of a city. A country stands
//! for its capital (or, where the capital has no entry, its main city) in
//! the city table; a region is too vague and the model must ask which city.

use crate::names::key;
use crate::places::{CITIES, City};

/// A country and the city that stands for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Country {
    /// Display name.
    pub(crate) name: &'static str,
    /// Other names, in [`key`] form.
    pub(crate) aliases: &'static [&'static str],
    /// The name of its city in [`CITIES`].
    pub(crate) city: &'static str,
    /// Whether that city is the capital (otherwise: the main city).
    pub(crate) capital: bool,
}

impl Country {
    /// Whether `lookup` (in [`key`] form, without a leading "the") names
    /// this country.
    pub(crate) fn matches(&self, lookup: &str) -> bool {
        key(self.name) == lookup || self.aliases.contains(&lookup)
    }

    /// The city that stands for the country.
    pub(crate) fn city(&self) -> Option<&'static City> {
        CITIES.iter().find(|city| city.name == self.city)
    }
}

macro_rules! countries {
    ($(($name:literal, [$($alias:literal),*], $city:literal, $capital:literal)),* $(,)?) => {
        &[$(Country { name: $name, aliases: &[$($alias),*], city: $city, capital: $capital }),*]
    };
}

/// Countries: name, aliases, the city standing for it, whether it is the
/// capital. City-states such as Singapore are cities, not listed here.
#[rustfmt::skip]
pub(crate) static COUNTRIES: &[Country] = countries![
    ("United States", ["usa", "us", "united states of america", "america"], "Washington", true),
    ("Canada", [], "Ottawa", true),
    ("Mexico", ["mexique"], "Mexico City", true),
    ("Cuba", [], "Havana", true),
    ("United Kingdom", ["uk", "great britain", "britain", "england", "gb"], "London", true),
    ("Ireland", ["eire"], "Dublin", true),
    ("France", [], "Paris", true),
    ("Germany", ["deutschland"], "Berlin", true),
    ("Netherlands", ["holland", "nederland"], "Amsterdam", true),
    ("Belgium", ["belgie", "belgique"], "Brussels", true),
    ("Spain", ["espana"], "Madrid", true),
    ("Portugal", [], "Lisbon", true),
    ("Italy", ["italia"], "Rome", true),
    ("Switzerland", ["schweiz", "suisse"], "Bern", true),
    ("Austria", ["osterreich"], "Vienna", true),
    ("Sweden", ["sverige"], "Stockholm", true),
    ("Norway", ["norge"], "Oslo", true),
    ("Denmark", ["danmark"], "Copenhagen", true),
    ("Finland", ["suomi"], "Helsinki", true),
    ("Iceland", [], "Reykjavik", true),
    ("Poland", ["polska"], "Warsaw", true),
    ("Czechia", ["czech republic"], "Prague", true),
    ("Hungary", ["magyarorszag"], "Budapest", true),
    ("Greece", ["hellas"], "Athens", true),
    ("Belarus", [], "Minsk", true),
    ("Ukraine", [], "Kyiv", true),
    ("Russia", ["russian federation"], "Moscow", true),
    ("Türkiye", ["turkey"], "Ankara", true),
    ("Egypt", [], "Cairo", true),
    ("Kenya", [], "Nairobi", true),
    ("Nigeria", [], "Lagos", false),
    ("South Africa", ["rsa"], "Johannesburg", false),
    ("United Arab Emirates", ["uae", "emirates"], "Abu Dhabi", true),
    ("Saudi Arabia", ["ksa"], "Riyadh", true),
    ("Qatar", [], "Doha", true),
    ("India", [], "Delhi", true),
    ("China", ["prc"], "Beijing", true),
    ("Japan", ["nippon"], "Tokyo", true),
    ("South Korea", ["korea", "republic of korea"], "Seoul", true),
    ("Thailand", [], "Bangkok", true),
    ("Vietnam", ["viet nam"], "Hanoi", true),
    ("Malaysia", [], "Kuala Lumpur", true),
    ("Indonesia", [], "Jakarta", true),
    ("Philippines", [], "Manila", true),
    ("Australia", [], "Canberra", true),
    ("New Zealand", ["nz", "aotearoa"], "Wellington", true),
    ("Brazil", ["brasil"], "Brasília", true),
    ("Argentina", [], "Buenos Aires", true),
    ("Chile", [], "Santiago", true),
    ("Peru", [], "Lima", true),
    ("Colombia", [], "Bogotá", true),
];

/// A region, continent or state: too wide for weather or flights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Display name, with "the" where English uses it ("the Caribbean").
    pub(crate) name: &'static str,
    /// Other names, in [`key`] form.
    pub(crate) aliases: &'static [&'static str],
    /// Cities of the table in the region, to offer as examples.
    pub(crate) examples: &'static [&'static str],
}

impl Region {
    /// Whether `lookup` (in [`key`] form, without a leading "the") names
    /// this region.
    pub(crate) fn matches(&self, lookup: &str) -> bool {
        self.keys().any(|name| name == lookup)
    }

    /// Every name of the region in [`key`] form, without a leading "the".
    fn keys(&self) -> impl Iterator<Item = String> + '_ {
        std::iter::once(without_article(&key(self.name)).to_owned())
            .chain(self.aliases.iter().map(|alias| (*alias).to_owned()))
    }
}

macro_rules! regions {
    ($(($name:literal, [$($alias:literal),*], [$($example:literal),*])),* $(,)?) => {
        &[$(Region { name: $name, aliases: &[$($alias),*], examples: &[$($example),*] }),*]
    };
}

/// Regions: name, aliases, example cities from the table.
#[rustfmt::skip]
pub(crate) static REGIONS: &[Region] = regions![
    ("Europe", ["eu", "european union"], ["London", "Paris", "Rome"]),
    ("Western Europe", [], ["Paris", "Amsterdam", "Brussels"]),
    ("Eastern Europe", [], ["Warsaw", "Prague", "Budapest"]),
    ("Scandinavia", ["nordics", "nordic countries"], ["Stockholm", "Oslo", "Copenhagen"]),
    ("the Baltics", ["baltic states"], []),
    ("the Balkans", [], ["Athens", "Istanbul"]),
    ("the Mediterranean", [], ["Barcelona", "Rome", "Athens"]),
    ("Asia", [], ["Tokyo", "Bangkok", "Singapore"]),
    ("East Asia", [], ["Tokyo", "Seoul", "Beijing"]),
    ("Southeast Asia", ["south east asia"], ["Bangkok", "Singapore", "Hanoi"]),
    ("South Asia", [], ["Delhi", "Mumbai"]),
    ("the Middle East", ["mideast"], ["Dubai", "Doha", "Cairo"]),
    ("Africa", [], ["Cairo", "Nairobi", "Johannesburg"]),
    ("North America", [], ["New York", "Toronto", "Mexico City"]),
    ("Central America", [], []),
    ("South America", [], ["São Paulo", "Buenos Aires", "Lima"]),
    ("Latin America", [], ["Mexico City", "São Paulo", "Buenos Aires"]),
    ("the Caribbean", ["caribbean islands", "west indies"], ["Havana"]),
    ("Oceania", ["australasia", "pacific islands"], ["Sydney", "Auckland"]),
    ("Antarctica", ["antarctic", "arctic", "north pole", "south pole"], []),
    ("California", [], ["Los Angeles", "San Francisco"]),
    ("Florida", [], ["Miami"]),
    ("Texas", [], ["Dallas"]),
    ("Hawaii", [], ["Honolulu"]),
];

/// The country `lookup` names, if any.
pub(crate) fn find_country(lookup: &str) -> Option<&'static Country> {
    let lookup = without_article(lookup);
    COUNTRIES.iter().find(|country| country.matches(lookup))
}

/// The region `lookup` names, if any.
pub(crate) fn find_region(lookup: &str) -> Option<&'static Region> {
    let lookup = without_article(lookup);
    REGIONS.iter().find(|region| region.matches(lookup))
}

/// `"the netherlands"` -> `"netherlands"`.
fn without_article(lookup: &str) -> &str {
    lookup.strip_prefix("the ").unwrap_or(lookup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::is_placeholder;
    use crate::places::find_city;

    #[test]
    fn every_country_and_example_has_its_city() {
        for country in COUNTRIES {
            assert!(country.city().is_some(), "{}: no city {}", country.name, country.city);
            for alias in country.aliases {
                assert_eq!(key(alias), *alias, "{}", country.name);
            }
        }
        for region in REGIONS {
            for example in region.examples {
                assert!(CITIES.iter().any(|city| city.name == *example), "{example}");
            }
            for alias in region.aliases {
                assert_eq!(key(alias), *alias, "{}", region.name);
            }
        }
    }

    #[test]
    fn names_are_unambiguous() {
        let countries = COUNTRIES.iter().flat_map(|country| {
            std::iter::once(key(country.name)).chain(country.aliases.iter().map(|a| (*a).to_owned()))
        });
        let regions = REGIONS.iter().flat_map(Region::keys);
        let mut seen = std::collections::HashSet::new();
        for name in countries.chain(regions) {
            assert!(seen.insert(name.clone()), "{name} is listed twice");
            // A country or region never shadows a city, nor looks like a placeholder.
            assert!(find_city(&name).is_none(), "{name} is also a city");
            assert!(!is_placeholder(&name), "{name} looks like a placeholder");
        }
    }

    #[test]
    fn countries_and_regions_are_found_with_or_without_the() {
        assert_eq!(find_country("netherlands").map(|c| c.city), Some("Amsterdam"));
        assert_eq!(find_country("the netherlands").map(|c| c.city), Some("Amsterdam"));
        assert_eq!(find_country("usa").map(|c| c.name), Some("United States"));
        assert_eq!(find_country("turkiye").map(|c| c.city), Some("Ankara"));
        assert_eq!(find_region("the caribbean").map(|r| r.name), Some("the Caribbean"));
        assert_eq!(find_region("caribbean").map(|r| r.name), Some("the Caribbean"));
        assert!(find_country("paris").is_none());
        assert!(find_region("france").is_none());
    }
}
