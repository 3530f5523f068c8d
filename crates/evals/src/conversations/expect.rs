//! Shorthands the splits write their expectations with.

use super::{Call, Expect};

/// One expected call.
pub(super) const fn call(tool: &'static str, args_contain: &'static [&'static str]) -> Call {
    Call { tool, args_contain }
}

/// Either math tool.
pub(super) const MATH: &str = "calculator|arithmetic";

/// No tool, no figure the user did not write.
pub(super) const CHAT: Expect = Expect {
    no_call: true,
    ..Expect::ANY
};

/// A question back, no call.
pub(super) const ASK: Expect = Expect {
    asks: true,
    ..Expect::ANY
};

/// These calls, the answer containing these texts.
pub(super) const fn calls(calls: &'static [Call], answer_contains: &'static [&'static str]) -> Expect {
    Expect {
        calls,
        answer_contains,
        ..Expect::ANY
    }
}

/// These calls and no other successful one, the answer containing these texts.
pub(super) const fn only(calls: &'static [Call], answer_contains: &'static [&'static str]) -> Expect {
    Expect {
        calls,
        only_these: true,
        answer_contains,
        ..Expect::ANY
    }
}

/// The tool fails: no successful call, and the answer says it could not.
pub(super) const FAILS: Expect = Expect {
    only_these: true,
    mentions_failure: true,
    ..Expect::ANY
};
