//! The test split: held out. Never tune the pipeline on these
//! conversations; only report them.

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

const ANY: Expect = Expect {
    calls: &[],
    no_call: false,
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

const CANNOT: &[&str] = &[
    "can't|cannot|can not|not able|unable|don't have|do not have|not possible|sorry|no tool|couldn't|could not",
];

/// The conversations.
pub const CONVERSATIONS: &[Conversation] = &[
    Conversation {
        name: "barcelona-plans",
        kinds: &["chit-chat", "one call", "memory", "relative date"],
        turns: &[
            Turn {
                user: "good morning :) I'm planning a trip, can you help me out?",
                expect: CHAT,
            },
            Turn {
                user: "how's the weather in barcelona right now",
                expect: calls(&[call("get_weather", &["barcelona"])], &[]),
            },
            Turn {
                user: "and flights from paris to barcelona next friday?",
                expect: calls(&[call("get_flight_prices", &["paris", "barcelona", "2026-06-05"])], &[]),
            },
            Turn {
                user: "convert 300 usd to eur",
                expect: calls(&[call("get_currency_exchange", &["usd", "eur", "300"])], &[]),
            },
            Turn {
                user: "great, thanks a lot",
                expect: CHAT,
            },
        ],
    },
    Conversation {
        name: "sums",
        kinds: &["one call", "memory", "iteration limit"],
        turns: &[
            Turn {
                user: "what's 7391 plus 12648",
                expect: calls(&[call("math", &[])], &["20039|20,039"]),
            },
            Turn {
                user: "multiply that by 3",
                expect: calls(&[call("math", &["3"])], &["60117|60,117"]),
            },
            Turn {
                user: "start from 9, add 1, times 7, minus 4, divide by 2, plus 11, times 10, minus 5, divide by 5, \
                       plus 2, times 6 and finally minus 3. use the calculator for every step",
                expect: calls(&[call("math", &[])], &[]),
            },
        ],
    },
    Conversation {
        name: "nordics",
        kinds: &["several calls", "one call"],
        turns: &[
            Turn {
                user: "weather in oslo, stockholm and helsinki pls",
                expect: calls(
                    &[
                        call("get_weather", &["oslo"]),
                        call("get_weather", &["stockholm"]),
                        call("get_weather", &["helsinki"]),
                    ],
                    &[],
                ),
            },
            Turn {
                user: "how many swedish krona is 100 euros",
                expect: calls(&[call("get_currency_exchange", &["eur", "sek|krona", "100"])], &[]),
            },
            Turn {
                user: "what's the cheapest flight from oslo to helsinki on 2026-06-10",
                expect: calls(&[call("get_flight_prices", &["oslo", "helsinki", "2026-06-10"])], &[]),
            },
        ],
    },
    Conversation {
        name: "madrid-from-somewhere",
        kinds: &["missing argument", "memory", "failing tool", "no fitting tool"],
        turns: &[
            Turn {
                user: "how much is it to fly to madrid?",
                expect: Expect {
                    asks: true,
                    ..CHAT
                },
            },
            Turn {
                user: "from new york, on june 20",
                expect: calls(&[call("get_flight_prices", &["new york|nyc|jfk", "madrid", "2026-06-20"])], &[]),
            },
            Turn {
                user: "and what's the temperature on mars right now",
                expect: Expect {
                    answer_any: CANNOT,
                    ..ANY
                },
            },
            Turn {
                user: "can you order me a pizza",
                expect: Expect {
                    answer_any: CANNOT,
                    ..CHAT
                },
            },
        ],
    },
    Conversation {
        name: "dublin-mix",
        kinds: &["chit-chat", "several calls", "relative date", "one call"],
        turns: &[
            Turn {
                user: "hey there",
                expect: CHAT,
            },
            Turn {
                user: "what's 18 percent of 2350?",
                expect: calls(&[call("math", &[])], &["423"]),
            },
            Turn {
                user: "and the weather in dublin, plus flights from dublin to london tomorrow",
                expect: calls(
                    &[
                        call("get_weather", &["dublin"]),
                        call("get_flight_prices", &["dublin", "london", "2026-06-02"]),
                    ],
                    &[],
                ),
            },
            Turn {
                user: "thanks!",
                expect: CHAT,
            },
        ],
    },
];
