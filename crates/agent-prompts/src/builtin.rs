//! Built-in templates, embedded in the binary.
//!
//! | name | variables |
//! | --- | --- |
//! | [`ZERO_SHOT_CLASSIFICATION`] | `categories`, `text` |
//! | [`FEW_SHOT_CLASSIFICATION`] | `categories`, `examples`, `text` |
//! | [`JSON_EXTRACTION`] | `schema`, `text` |
//! | [`QUESTION_ANSWERING`] | `context`, `question` |
//! | [`TOOL_USE`] | `agent_name`, `agent_description`, `instructions` |
//! | [`REACT`] | `tools`, `tool_names` |
//! | [`TOOL_CALL_PROTOCOL`] | `tools` |
//! | [`FORCED_FINAL_ANSWER`] | none |
//! | [`SUMMARISE_CONVERSATION`] | `conversation` |
//!
//! `tools` is meant to be filled with [`render_tool_list`](crate::render_tool_list)
//! and `tool_names` with [`tool_names`](crate::tool_names).
//!
//! ```
//! use agent_prompts::builtin;
//!
//! let template = builtin::get(builtin::QUESTION_ANSWERING)?;
//! let prompt = template.render([("context", "Paris is in France."), ("question", "Where is Paris?")])?;
//! assert!(prompt.contains("Where is Paris?"));
//! # Ok::<(), agent_prompts::PromptError>(())
//! ```

use std::sync::{Arc, OnceLock};

use crate::error::{PromptError, SearchLocation};
use crate::source::PromptSource;
use crate::template::PromptTemplate;

/// Classify a text into one of several categories, without examples.
pub const ZERO_SHOT_CLASSIFICATION: &str = "zero_shot_classification";
/// Classify a text into one of several categories, with labelled examples.
pub const FEW_SHOT_CLASSIFICATION: &str = "few_shot_classification";
/// Extract JSON matching a JSON Schema from a text.
pub const JSON_EXTRACTION: &str = "json_extraction";
/// Answer a question from a given context only.
pub const QUESTION_ANSWERING: &str = "question_answering";
/// The system prompt of a tool-using agent: its name, description and custom instructions.
pub const TOOL_USE: &str = "tool_use";
/// The ReAct format: Thought / Action / Action Input / Observation / Final Answer.
pub const REACT: &str = "react";
/// The text tool-call protocol: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks.
pub const TOOL_CALL_PROTOCOL: &str = "tool_call_protocol";
/// Sent when the iteration limit is reached: answer from what is known, call no tools.
pub const FORCED_FINAL_ANSWER: &str = "forced_final_answer";
/// Summarise the oldest part of a conversation so that the summary can replace
/// it when the conversation no longer fits in the model's context window.
pub const SUMMARISE_CONVERSATION: &str = "summarise_conversation";

/// Every built-in template: name and text.
const TEMPLATES: [(&str, &str); 9] = [
    (
        ZERO_SHOT_CLASSIFICATION,
        include_str!("../templates/zero_shot_classification.md"),
    ),
    (
        FEW_SHOT_CLASSIFICATION,
        include_str!("../templates/few_shot_classification.md"),
    ),
    (JSON_EXTRACTION, include_str!("../templates/json_extraction.md")),
    (QUESTION_ANSWERING, include_str!("../templates/question_answering.md")),
    (TOOL_USE, include_str!("../templates/tool_use.md")),
    (REACT, include_str!("../templates/react.md")),
    (TOOL_CALL_PROTOCOL, include_str!("../templates/tool_call_protocol.md")),
    (FORCED_FINAL_ANSWER, include_str!("../templates/forced_final_answer.md")),
    (
        SUMMARISE_CONVERSATION,
        include_str!("../templates/summarise_conversation.md"),
    ),
];

/// Parsed templates, one cell per entry of [`TEMPLATES`].
static PARSED: [OnceLock<Result<Arc<PromptTemplate>, PromptError>>; TEMPLATES.len()] =
    [const { OnceLock::new() }; TEMPLATES.len()];

/// The names of all built-in templates.
pub fn names() -> impl Iterator<Item = &'static str> {
    TEMPLATES.iter().map(|(name, _)| *name)
}

/// The raw text of a built-in template.
pub fn source(name: &str) -> Option<&'static str> {
    TEMPLATES.iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// The built-in template called `name`, parsed once and shared.
pub fn get(name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
    let Some(index) = TEMPLATES.iter().position(|(n, _)| *n == name) else {
        return Err(PromptError::NotFound {
            name: name.to_owned(),
            searched: vec![SearchLocation::Builtins {
                available: names().map(str::to_owned).collect(),
            }],
        });
    };
    let (_, text) = TEMPLATES[index];
    PARSED[index]
        .get_or_init(|| {
            PromptTemplate::parse(text)
                .map(Arc::new)
                .map_err(|e| e.with_origin(format!("built-in template `{name}`")))
        })
        .clone()
}

/// The built-in templates as a [`PromptSource`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtins;

impl PromptSource for Builtins {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses_with_the_documented_variables() {
        let expected: [(&str, &[&str]); 9] = [
            (ZERO_SHOT_CLASSIFICATION, &["categories", "text"]),
            (FEW_SHOT_CLASSIFICATION, &["categories", "examples", "text"]),
            (JSON_EXTRACTION, &["schema", "text"]),
            (QUESTION_ANSWERING, &["context", "question"]),
            (TOOL_USE, &["agent_name", "agent_description", "instructions"]),
            (REACT, &["tools", "tool_names"]),
            (TOOL_CALL_PROTOCOL, &["tools"]),
            (FORCED_FINAL_ANSWER, &[]),
            (SUMMARISE_CONVERSATION, &["conversation"]),
        ];
        for (name, variables) in expected {
            let template = get(name).expect("built-in parses");
            assert_eq!(template.required_variables(), variables, "{name}");
        }
        assert_eq!(names().count(), expected.len());
    }

    #[test]
    fn builtins_are_parsed_once() {
        let a = get(REACT).expect("react");
        let b = get(REACT).expect("react");
        assert!(Arc::ptr_eq(&a, &b));
    }
}
