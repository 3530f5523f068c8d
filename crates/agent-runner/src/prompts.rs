//! The system prompts the runner builds from `agent-prompts`' built-in templates.

use agent_core::ToolDefinition;
use agent_prompts::{builtin, render_tool_list, tool_names};

/// The result of a call left unrun because the run paused for the user's
/// approval (the record of a paused run; resuming runs or denies it instead).
pub(crate) const AWAITING_APPROVAL_RESULT: &str =
    "Not run: the run paused for the user's approval of this reply's calls.";

/// The instruction sent with a forced final answer.
pub(crate) fn forced_answer_instruction() -> String {
    render(builtin::FORCED_FINAL_ANSWER, &[])
        .unwrap_or_else(|| "Do not call any more tools. Answer the user now from what you already know.".to_owned())
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
