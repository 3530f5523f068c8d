//! The dev split: tune on these.

use super::{Call, Conversation, Expect, Turn};

const fn call(tool: &'static str, args: &'static [&'static str]) -> Call {
    Call { tool, args, fails: false }
}

const CHAT: Expect = Expect {
    calls: &[],
    no_call: true,
    asks: false,
    answer_any: &[],
};

const fn calls(calls: &'static [Call], answer_any: &'static [&'static str]) -> Expect {
    Expect {
        calls,
        no_call: false,
        asks: false,
        answer_any,
    }
}

/// Turns that only need an answer with no invented figure.
const ANY: Expect = Expect {
    calls: &[],
    no_call: false,
    asks: false,
    answer_any: &[],
};

const CANNOT: &[&str] = &[
    "can't|cannot|can not|not able|unable|don't have|do not have|not possible|sorry|no tool|couldn't|could not",
];

/// The conversations.
pub const CONVERSATIONS: &[Conversation] = &[
    Conversation {
        name: "lisbon-weekend",
        kinds: &["chit-chat", "one call", "memory", "relative date"],
        turns: &[
            Turn {
                user: "hiya! quick q, what sort of stuff can u do?",
                expect: CHAT,
            },
            Turn {
                user: "ok so whats the weather like in lisbon atm",
                expect: calls(&[call("get_weather", &["lisbon|lisboa"])], &[]),
            },
            Turn {
                user: "nice. any flights from london to there tomorrow?",
                expect: calls(&[call("get_flight_prices", &["london", "lisbon|lisboa", "2026-06-02"])], &[]),
            },
            Turn {
                user: "how much is 250 pounds in euros",
                expect: calls(&[call("get_currency_exchange", &["gbp|pound", "eur", "250"])], &[]),
            },
            Turn {
                user: "thanks, that's all for now",
                expect: CHAT,
            },
        ],
    },
    Conversation {
        name: "homework",
        kinds: &["one call", "memory"],
        turns: &[
            Turn {
                user: "can you work out 4821 times 37 for me",
                expect: calls(&[call("math", &[])], &["178377|178,377"]),
            },
            Turn {
                user: "now subtract 9999 from that",
                expect: calls(&[call("math", &["9999"])], &["168378|168,378"]),
            },
            Turn {
                user: "and divide the result by 6",
                expect: calls(&[call("math", &["6"])], &["28063|28,063"]),
            },
            Turn {
                user: "cheers mate",
                expect: CHAT,
            },
        ],
    },
    Conversation {
        name: "flight-needs-details",
        kinds: &["missing argument", "memory", "one call"],
        turns: &[
            Turn {
                user: "I need a flight price",
                expect: Expect {
                    asks: true,
                    ..CHAT
                },
            },
            Turn {
                user: "from berlin to rome, on 2026-06-12",
                expect: calls(&[call("get_flight_prices", &["berlin", "rome|roma", "2026-06-12"])], &[]),
            },
            Turn {
                user: "what about the weather in rome",
                expect: calls(&[call("get_weather", &["rome|roma"])], &[]),
            },
            Turn {
                user: "convert 80 euros to dollars pls",
                expect: calls(&[call("get_currency_exchange", &["eur", "usd|dollar", "80"])], &[]),
            },
        ],
    },
    Conversation {
        name: "two-at-once",
        kinds: &["several calls"],
        turns: &[
            Turn {
                user: "what's the weather in tokyo and in seoul?",
                expect: calls(&[call("get_weather", &["tokyo"]), call("get_weather", &["seoul"])], &[]),
            },
            Turn {
                user: "also convert 10000 yen to usd, and what is 15% of 240?",
                expect: calls(
                    &[call("get_currency_exchange", &["jpy|yen", "usd", "10000"]), call("math", &[])],
                    &["36"],
                ),
            },
            Turn {
                user: "thx",
                expect: CHAT,
            },
        ],
    },
    Conversation {
        name: "atlantis-and-hotels",
        kinds: &["failing tool", "no fitting tool"],
        turns: &[
            Turn {
                user: "weather in atlantis please",
                expect: Expect {
                    answer_any: CANNOT,
                    ..ANY
                },
            },
            Turn {
                user: "ok then, can you book me a hotel room in paris?",
                expect: Expect {
                    answer_any: CANNOT,
                    ..CHAT
                },
            },
            Turn {
                user: "what's the capital of australia",
                expect: Expect {
                    answer_any: &["canberra"],
                    ..CHAT
                },
            },
        ],
    },
    Conversation {
        name: "long-chain",
        kinds: &["iteration limit", "failing tool"],
        turns: &[
            Turn {
                user: "divide 500 by your secret number",
                expect: calls(
                    &[Call {
                        tool: "divide_by_secret_number",
                        args: &["500"],
                        fails: true,
                    }],
                    &[],
                ),
            },
            Turn {
                user: "take 2 plus 3, multiply by 4, add 7, divide by 3, square it, subtract 1, double it, add 100, \
                       divide by 5, take away 8, triple it, then add 1. do each step with the calculator",
                expect: calls(&[call("math", &[])], &[]),
            },
        ],
    },
    Conversation {
        name: "aussie-dollars",
        kinds: &["memory", "one call", "chit-chat"],
        turns: &[
            Turn {
                user: "i've got 1200 australian dollars saved up for my trip",
                expect: ANY,
            },
            Turn {
                user: "how much is that in new zealand dollars",
                expect: calls(&[call("get_currency_exchange", &["aud|australian", "nzd|new zealand", "1200"])], &[]),
            },
            Turn {
                user: "and in japanese yen?",
                expect: calls(&[call("get_currency_exchange", &["aud|australian", "jpy|yen", "1200"])], &[]),
            },
            Turn {
                user: "what's the weather like in auckland",
                expect: calls(&[call("get_weather", &["auckland"])], &[]),
            },
            Turn {
                user: "bye!",
                expect: CHAT,
            },
        ],
    },
];
