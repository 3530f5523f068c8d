//! The ten scripted turns of the conversation.

/// One scripted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoTurn {
    /// What the user says.
    pub prompt: &'static str,
    /// What it shows.
    pub shows: &'static str,
}

/// The ten turns, in order.
pub const TURNS: [DemoTurn; 10] = [
    DemoTurn {
        prompt: "What do you do?",
        shows: "an answer without tools",
    },
    DemoTurn {
        prompt: "What's the weather in Tokyo?",
        shows: "a tool call",
    },
    DemoTurn {
        prompt: "What's the weather in my favorite city?",
        shows: "a question for missing information",
    },
    DemoTurn {
        prompt: "My favorite city is New York",
        shows: "memory of the conversation",
    },
    DemoTurn {
        prompt: "How much is a flight from NYC to Paris?",
        shows: "a question for the missing date",
    },
    DemoTurn {
        prompt: "It's June 15",
        shows: "the date filled in from the conversation",
    },
    DemoTurn {
        prompt: "I want to go from London to Tokyo next month, what's the weather there and how much is the flight?",
        shows: "two tools",
    },
    DemoTurn {
        prompt: "Plan a trip from NYC to Paris: weather, flight price and how many euros 1000 dollars buys",
        shows: "three tools",
    },
    DemoTurn {
        prompt: "Tell me the weather in Australia, Belarus, Caribbean, Denmark, Egypt, France, Greece and Hungary",
        shows: "the iteration limit and the forced answer",
    },
    DemoTurn {
        prompt: "Divide 17 by the secret number!",
        shows: "a tool error handled",
    },
];

/// The turn (0-based) that shows the iteration limit.
pub const LIMIT_TURN: usize = 8;
