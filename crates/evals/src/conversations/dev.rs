//! The dev split: tune on these. The figures expected are what the tools
//! return with today fixed at 2026-07-15 (`super::today`).

use super::Kind::{
    ChitChat, FailingTool, IterationLimit, Memory, MissingArgument, NoFittingTool, OneCall, RelativeDate, ThreeTools,
    TwoTools,
};
use super::expect::{ASK, CHAT, FAILS, MATH, call, calls, only};
use super::{Conversation, Expect, limited, turn};

/// The conversations.
pub const CONVERSATIONS: &[Conversation] = &[
    Conversation {
        name: "vienna",
        turns: &[
            turn("hey there :) hows your day going", &[ChitChat], CHAT),
            turn(
                "thinking of spending a few days in vienna. what's the weather doing there right now?",
                &[OneCall],
                only(&[call("get_weather", &["vienna"])], &["23.4"]),
            ),
            turn(
                "ok and how much to fly from there to amsterdam?",
                &[MissingArgument, Memory],
                ASK,
            ),
            turn(
                "the day after tomorrow",
                &[RelativeDate, Memory],
                calls(
                    &[call(
                        "get_flight_prices",
                        &["vienna|VIE", "amsterdam|AMS", "2026-07-17"],
                    )],
                    &["176"],
                ),
            ),
            turn("perfect, thats all I needed. cheers!", &[ChitChat], CHAT),
        ],
    },
    Conversation {
        name: "budget",
        turns: &[
            turn(
                "whats 1875 divided by 25",
                &[OneCall],
                only(&[call(MATH, &["75"])], &["75"]),
            ),
            turn(
                "multiply that by 12 pls",
                &[Memory],
                calls(&[call(MATH, &["900"])], &["900"]),
            ),
            turn(
                "now take the square root of minus 900 with the calculator",
                &[FailingTool, Memory],
                FAILS,
            ),
            turn(
                "ok forget that. what's 900 plus 15 percent?",
                &[OneCall],
                calls(&[call(MATH, &["1035"])], &["1035"]),
            ),
        ],
    },
    Conversation {
        name: "francs",
        turns: &[
            turn(
                "how many euros would I get for 640 US dollars?",
                &[OneCall],
                only(&[call("get_currency_exchange", &["USD", "EUR", "640"])], &["588.8"]),
            ),
            turn(
                "and the same amount in swiss francs?",
                &[Memory],
                calls(&[call("get_currency_exchange", &["USD", "CHF", "640"])], &["569.6"]),
            ),
            turn(
                "could you also book me a hotel room in zurich for saturday night?",
                &[NoFittingTool],
                Expect {
                    no_call: true,
                    mentions_failure: true,
                    ..Expect::ANY
                },
            ),
            turn(
                "no worries. what's the weather in zurich, and how much is 300 CHF in euros?",
                &[TwoTools],
                only(
                    &[
                        call("get_weather", &["zurich"]),
                        call("get_currency_exchange", &["CHF", "EUR", "300"]),
                    ],
                    &["17.3", "310.11"],
                ),
            ),
        ],
    },
    Conversation {
        name: "lisbon",
        turns: &[
            turn(
                "Flying berlin -> lisbon this saturday. can u check flight prices, lisbon's weather and what 500 euros is in dollars?",
                &[ThreeTools, RelativeDate],
                only(
                    &[
                        call("get_flight_prices", &["berlin|BER", "lisbon|LIS", "2026-07-18"]),
                        call("get_weather", &["lisbon"]),
                        call("get_currency_exchange", &["EUR", "USD", "500"]),
                    ],
                    &["244", "24.4", "543.48"],
                ),
            ),
            turn(
                "which of those flights is the cheapest one?",
                &[Memory],
                Expect {
                    answer_contains: &["244"],
                    ..Expect::ANY
                },
            ),
            turn(
                "and coming back the day after, lisbon to berlin?",
                &[Memory, RelativeDate],
                calls(
                    &[call("get_flight_prices", &["lisbon|LIS", "berlin|BER", "2026-07-19"])],
                    &["267"],
                ),
            ),
            turn("thanks so much!!", &[ChitChat], CHAT),
        ],
    },
    Conversation {
        name: "nordic",
        turns: &[
            turn("what's the weather like in Atlantis today?", &[FailingTool], FAILS),
            limited(
                "I want a proper comparison, one city at a time: weather in Oslo, then Helsinki, then Stockholm, then Copenhagen, then Reykjavik. Then tell me which one is warmest.",
                &[IterationLimit],
                calls(
                    &[call("get_weather", &["oslo"])],
                    &["oslo|helsinki|stockholm|copenhagen|reykjavik"],
                ),
                2,
            ),
            turn(
                "ok just oslo then, but in fahrenheit",
                &[OneCall, Memory],
                only(&[call("get_weather", &["oslo", "fahrenheit"])], &["61"]),
            ),
        ],
    },
    Conversation {
        name: "yen",
        turns: &[
            turn(
                "i've got a bunch of yen left over from japan, can you change it into pounds for me?",
                &[MissingArgument],
                ASK,
            ),
            turn(
                "it's 18000 yen",
                &[Memory],
                calls(&[call("get_currency_exchange", &["JPY", "GBP", "18000"])], &["93.86"]),
            ),
            turn(
                "we're splitting it four ways. how much yen is each share, and what's one share worth in US dollars?",
                &[TwoTools, Memory],
                calls(
                    &[
                        call(MATH, &["4500"]),
                        call("get_currency_exchange", &["JPY", "USD", "4500"]),
                    ],
                    &["4500|4,500", "29.7"],
                ),
            ),
            turn(
                "random q: who wrote pride and prejudice?",
                &[NoFittingTool],
                Expect {
                    no_call: true,
                    answer_contains: &["austen"],
                    ..Expect::ANY
                },
            ),
        ],
    },
    Conversation {
        name: "dublin",
        turns: &[
            turn(
                "is it raining in dublin rn?",
                &[OneCall],
                only(&[call("get_weather", &["dublin"])], &["rain"]),
            ),
            turn(
                "whats the cheapest flight from dublin to paris tomorrow",
                &[OneCall, RelativeDate],
                only(
                    &[call("get_flight_prices", &["dublin|DUB", "paris|CDG", "2026-07-16"])],
                    &["140"],
                ),
            ),
            turn(
                "and what would 3 of those tickets cost?",
                &[Memory],
                calls(&[call(MATH, &["420"])], &["420"]),
            ),
            turn(
                "haha ok. any tips for packing light for a weekend away?",
                &[ChitChat],
                CHAT,
            ),
        ],
    },
    Conversation {
        name: "toronto",
        turns: &[
            turn("Morning! Can you help me sort out a work trip?", &[ChitChat], CHAT),
            turn(
                "I'm flying out of Toronto. What would it cost to get to Chicago?",
                &[MissingArgument],
                ASK,
            ),
            turn(
                "next monday",
                &[RelativeDate, Memory],
                calls(
                    &[call("get_flight_prices", &["toronto|YYZ", "chicago|ORD", "2026-07-20"])],
                    &["137"],
                ),
            ),
            turn(
                "my company pays expenses in canadian dollars. what's that cheapest fare in CAD?",
                &[OneCall, Memory],
                calls(&[call("get_currency_exchange", &["USD", "CAD", "137"])], &["186.32"]),
            ),
            turn(
                "and how's the weather in chicago at the moment?",
                &[OneCall],
                only(&[call("get_weather", &["chicago"])], &["26.3"]),
            ),
        ],
    },
];
