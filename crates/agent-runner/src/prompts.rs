//! Every text the runner writes for the model: the system prompts it builds
//! from `agent-prompts`' built-in templates, the forced-answer and summary
//! requests, and the results and markers it puts in place of a tool's
//! output (a call not run, an interrupted or elided or truncated result).
//! Kept in one file so that they can be read, and tuned, together.

use agent_core::ToolDefinition;
use agent_prompts::{builtin, render_tool_list, tool_names};

/// The result of a call left unrun because the run paused for the user's
/// approval (the record of a paused run; resuming runs or denies it instead).
pub(crate) const AWAITING_APPROVAL_RESULT: &str =
    "Not run: the run paused for the user's approval of this reply's calls.";

/// The result of a call whose run was interrupted (a crash, a cancelled
/// run) before it returned.
pub const INTERRUPTED_RESULT: &str = "The tool call was interrupted before it returned a result.";

/// How the content of a summary message starts; what follows is the model's
/// summary of the messages it replaced.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n";

/// How the marker of an elided tool result starts.
pub(crate) const ELIDED_PREFIX: &str = "[tool result elided: ";

/// The marker that replaces a tool result of `bytes` bytes.
pub(crate) fn elision_marker(bytes: usize) -> String {
    format!("{ELIDED_PREFIX}{bytes} bytes]")
}

/// The line appended to a tool result cut to its first `kept` of `total` bytes.
pub(crate) fn truncation_marker(total: usize, kept: usize) -> String {
    format!("\n[truncated: the result was {total} bytes; only the first {kept} are shown]")
}

/// The result of a call that did not run, for `reason`.
pub(crate) fn not_run(reason: &str) -> String {
    format!("Not run: {reason}.")
}

/// What the history keeps in place of an answer the output guardrail
/// `name` withheld.
pub(crate) fn withheld_answer(name: &str) -> String {
    format!("(This answer was withheld by the guardrail `{name}`.)")
}

/// What the model (and the record) get in place of a tool result the
/// guardrail `name` blocked.
pub(crate) fn withheld_result(name: &str) -> String {
    format!("Withheld: the guardrail `{name}` blocked this tool result.")
}

/// The result of call `tool` of a reply that asked for `wanted` calls when
/// at most `cap` run per reply.
pub(crate) fn over_call_cap(tool: &str, wanted: usize, cap: usize) -> String {
    format!(
        "Not run: the reply asked for {wanted} tool calls and at most {cap} run per reply; \
         `{tool}` was past the limit. Ask for fewer calls at a time."
    )
}

/// The result of call `tool` whose arguments `raw` are not JSON.
pub(crate) fn unreadable_arguments(tool: &str, raw: &str) -> String {
    format!("invalid arguments for `{tool}`: not valid JSON: {raw}. Call the tool again with a JSON object.")
}

/// The instruction sent with a forced final answer, in the user's voice:
/// small local models repeat an instruction about "the user" back as
/// their answer (docs/local-models.md).
pub(crate) fn forced_answer_instruction() -> String {
    render(builtin::FORCED_FINAL_ANSWER, &[])
        .unwrap_or_else(|| "No more tool calls. Answer me now from the results above.".to_owned())
}

/// The transient request of a grounding re-ask: answer again from the
/// turn's tool results (`lines`, one per call), stating no other figure.
pub(crate) fn restated_results(lines: &[String]) -> String {
    let mut request = String::from(
        "Answer my last message again, using only these tool results. Do not state any number, \
         date or price that is not in them or in my words:",
    );
    for line in lines {
        request.push_str("\n- ");
        request.push_str(line);
    }
    request
}

/// The transient request after a reply that only repeated calls already
/// answered: the calls made (`name(arguments)`), then the user's
/// `question` again, where a small model reads what is still to be done.
pub(crate) fn repeated_calls_reminder(calls: &[String], question: &str) -> String {
    format!(
        "Those calls were already made and their results are above: {}. Make only the calls still \
         needed, or answer from the results. My question was: {question}",
        calls.join(", ")
    )
}

/// The transient request after a reply whose tool call the provider could
/// not use: the `problem` in the provider's words, and what to do instead.
/// The detail of a run whose final answer was cut at the token limit.
pub(crate) fn cut_off_answer(max_tokens: Option<u32>) -> String {
    let limit = max_tokens.map_or_else(|| "the model's limit".to_owned(), |max| format!("max_tokens = {max}"));
    format!(
        "the answer was cut off at the token limit ({limit}): it is incomplete; raise max_tokens or ask for a shorter answer"
    )
}

pub(crate) fn malformed_call_correction(problem: &str) -> String {
    let problem = problem.trim().trim_end_matches('.');
    format!(
        "Your last tool call was malformed and did not run: {problem}. Write the call again as a function \
         call whose arguments are a JSON object matching the tool's schema, or answer me in text."
    )
}

/// The answer that replaces one the grounding check could not accept:
/// what the tools returned (`lines`), or that nothing could be looked up,
/// and why when a call's `failure` says it plainly.
pub(crate) fn replaced_answer(lines: &[String], failure: Option<&str>) -> String {
    match (lines, failure) {
        ([], Some(failure)) => format!("I could not look that up: {failure}."),
        ([], None) => "I could not look that up.".to_owned(),
        ([line], _) => line.clone(),
        (lines, _) => format!("Here is what I found:\n- {}", lines.join("\n- ")),
    }
}

/// The answer of a run a budget stopped before the model answered: what
/// the tools returned (`lines`, one per call), or that it could not finish.
pub(crate) fn unfinished_answer(lines: &[String]) -> String {
    match lines {
        [] => "I could not finish looking that up.".to_owned(),
        [line] => format!("I could not finish, but here is what I found: {line}"),
        lines => format!(
            "I could not finish, but here is what I found:\n- {}",
            lines.join("\n- ")
        ),
    }
}

/// The user message of a summary request: the built-in
/// `summarise_conversation` template around `conversation` (the messages
/// to summarise, written out).
pub(crate) fn summary_request(conversation: &str) -> String {
    render(builtin::SUMMARISE_CONVERSATION, &[("conversation", conversation)]).unwrap_or_else(|| {
        format!(
            "Summarise the conversation below so that the summary can replace it.\n\n<conversation>\n{conversation}\n</conversation>"
        )
    })
}

/// The system prompt of a text-protocol agent: who it is, its instructions,
/// its tools written out for people, and how to call them.
pub(crate) fn text_protocol_system(
    name: &str,
    description: &str,
    instructions: &str,
    tools: &[ToolDefinition],
) -> String {
    let rendered_tools = render_tool_list(tools);
    let identity = render(
        builtin::TOOL_USE,
        &[
            ("agent_name", name),
            ("agent_description", description),
            ("instructions", instructions),
        ],
    );
    let protocol = render(builtin::TOOL_CALL_PROTOCOL, &[("tools", &rendered_tools)]);
    match (identity, protocol) {
        (Some(identity), Some(protocol)) => format!("{}\n\n{}", identity.trim_end(), protocol.trim_end()),
        _ => format!("You are {name}. {description}\n\n{instructions}\n\nTools:\n{rendered_tools}"),
    }
}

/// The system prompt of a ReAct agent.
pub(crate) fn react_system(instructions: &str, tools: &[ToolDefinition]) -> String {
    let rendered_tools = render_tool_list(tools);
    let names = tool_names(tools);
    let react = render(builtin::REACT, &[("tools", &rendered_tools), ("tool_names", &names)])
        .unwrap_or_else(|| format!("Tools:\n{rendered_tools}\nUse Thought / Action / Action Input / Final Answer."));
    if instructions.trim().is_empty() {
        react
    } else {
        format!("{}\n\n{}", instructions.trim_end(), react.trim_end())
    }
}

/// Renders a built-in template; `None` only if the shipped template and the
/// variables given here disagree, which the tests below rule out.
fn render(name: &str, vars: &[(&str, &str)]) -> Option<String> {
    let template = builtin::get(name).ok()?;
    template.render(vars.iter().copied()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition::new(
            "calculator",
            "Evaluates arithmetic.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        )]
    }

    #[test]
    fn every_builtin_the_runner_uses_renders_with_the_variables_it_gives() {
        assert!(render(builtin::FORCED_FINAL_ANSWER, &[]).is_some());
        let summary = summary_request("[user] hi");
        assert_eq!(
            Some(summary.clone()),
            render(builtin::SUMMARISE_CONVERSATION, &[("conversation", "[user] hi")])
        );
        assert!(
            summary.contains("<conversation>\n[user] hi\n</conversation>"),
            "{summary}"
        );
        let system = text_protocol_system("Calc", "Does sums.", "Be brief.", &tools());
        assert!(system.starts_with("You are Calc. Does sums."), "{system}");
        assert!(system.contains("Be brief."));
        assert!(system.contains("- calculator: Evaluates arithmetic."));
        assert!(system.contains("expression (string, required)"));
        assert!(system.contains("<tool_call>"));
        let react = react_system("Be brief.", &tools());
        assert!(
            react.contains("Action: the tool to use, one of [calculator]"),
            "{react}"
        );
        assert!(react.starts_with("Be brief."));
    }
}
