//! The test split: held out. Do not read it to tune, and do not tune on
//! its results; tune on the dev split. The figures expected are what the
//! tools return with today fixed at 2026-07-15 (`super::today`).

use super::Kind::{
    ChitChat, FailingTool, IterationLimit, Memory, MissingArgument, NoFittingTool, OneCall, RelativeDate, ThreeTools,
    TwoTools,
};
use super::expect::{ASK, CHAT, FAILS, MATH, call, calls, only};
use super::{Conversation, Expect, limited, turn};

/// The conversations.
pub const CONVERSATIONS: &[Conversation] = &[
    Conversation {
        name: "t1",
        turns: &[
            turn(
                "hello hello! long day at work, just wanna plan something fun lol",
                &[ChitChat],
                CHAT,
            ),
            turn(
                "wats the temprature in bangkok",
                &[OneCall],
                only(&[call("get_weather", &["bangkok"])], &["30.3"]),
            ),
            turn(
                "and in seoul?",
                &[OneCall, Memory],
                calls(&[call("get_weather", &["seoul"])], &["25.1"]),
            ),
            turn(
                "any flights between the two the day after tomorrow?",
                &[Memory, RelativeDate],
                calls(
                    &[call("get_flight_prices", &["bangkok|BKK", "seoul|ICN", "2026-07-17"])],
                    &["459|464"],
                ),
            ),
            turn("great, thanks a bunch", &[ChitChat], CHAT),
        ],
    },
    Conversation {
        name: "t2",
        turns: &[
            turn(
                "my living room is 4.2 by 5.5 metres, how many square metres is that?",
                &[OneCall],
                only(&[call(MATH, &["23.1"])], &["23.1"]),
            ),
            turn(
                "flooring is 38 dollars a square metre, what does the whole room come to?",
                &[Memory],
                calls(&[call(MATH, &["877.8"])], &["877.8"]),
            ),
            turn(
                "what's that in euros?",
                &[OneCall, Memory],
                calls(&[call("get_currency_exchange", &["USD", "EUR", "877.8"])], &["807.58"]),
            ),
            turn(
                "just for fun, divide that total by zero on the calculator",
                &[FailingTool, Memory],
                FAILS,
            ),
        ],
    },
    Conversation {
        name: "t3",
        turns: &[
            turn("I want to fly to mexico city", &[MissingArgument], ASK),
            turn(
                "from los angeles, a week from today",
                &[Memory, RelativeDate],
                calls(
                    &[call(
                        "get_flight_prices",
                        &["los angeles|LAX", "mexico city|MEX", "2026-07-22"],
                    )],
                    &["238"],
                ),
            ),
            turn(
                "nice. what's the weather there, how many pesos is 1200 dollars, and what's 1200 divided by 7?",
                &[ThreeTools, Memory],
                only(
                    &[
                        call("get_weather", &["mexico city"]),
                        call("get_currency_exchange", &["USD", "MXN", "1200"]),
                        call(MATH, &["171.43"]),
                    ],
                    &["20520|20,520"],
                ),
            ),
            turn(
                "can you call me an uber to LAX?",
                &[NoFittingTool],
                Expect {
                    no_call: true,
                    mentions_failure: true,
                    ..Expect::ANY
                },
            ),
        ],
    },
    Conversation {
        name: "t4",
        turns: &[
            limited(
                "step by step please: check the weather in Cairo, then Nairobi, then Lagos, then Johannesburg, and after that convert 2000 rand to dollars",
                &[IterationLimit],
                calls(
                    &[call("get_weather", &["cairo"])],
                    &["cairo|nairobi|lagos|johannesburg"],
                ),
                2,
            ),
            turn("whats the weather in gotham city", &[FailingTool], FAILS),
            turn(
                "fine, how much is 75 quid in euros",
                &[OneCall],
                only(&[call("get_currency_exchange", &["GBP", "EUR", "75"])], &["87.34"]),
            ),
        ],
    },
    Conversation {
        name: "t5",
        turns: &[
            turn(
                "how warm is it in melbourne, and what do flights from there to sydney cost on august 3?",
                &[TwoTools],
                only(
                    &[
                        call("get_weather", &["melbourne"]),
                        call("get_flight_prices", &["melbourne|MEL", "sydney|SYD", "2026-08-03"]),
                    ],
                    &["12.2", "123"],
                ),
            ),
            turn(
                "what about the weather in auckland",
                &[OneCall],
                only(&[call("get_weather", &["auckland"])], &["10.7"]),
            ),
            turn(
                "can you explain what jet lag actually is?",
                &[NoFittingTool],
                Expect {
                    no_call: true,
                    answer_contains: &["time zone|timezone|time-zone|circadian|body clock|internal clock|sleep"],
                    ..Expect::ANY
                },
            ),
        ],
    },
    Conversation {
        name: "t6",
        turns: &[
            turn(
                "i need some korean won for my exchange semester, can you convert my money?",
                &[MissingArgument],
                ASK,
            ),
            turn(
                "2,500 canadian dollars",
                &[Memory],
                calls(
                    &[call("get_currency_exchange", &["CAD", "KRW", "2500"])],
                    &["2472426.47"],
                ),
            ),
            turn("sweet, thank you so much!", &[ChitChat], CHAT),
        ],
    },
];
