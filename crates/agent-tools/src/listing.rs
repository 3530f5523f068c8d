//! What a [`ToolBox`] offers, listed for people and programs: each tool
//! with its domain and schema ([`ToolBox::listing`]), or as text
//! ([`ToolBox::describe`]); and the approvals that name no tool
//! ([`ToolBox::unknown_approvals`]).

use std::fmt::Write as _;

use agent_core::ToolDefinition;
use serde::Serialize;

use crate::ToolBox;

/// One tool as a listing shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolListing {
    /// The domain (provider) it belongs to.
    pub domain: String,
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: serde_json::Value,
}

impl ToolBox {
    /// Every tool with its domain and schema.
    pub fn listing(&self) -> Vec<ToolListing> {
        self.providers()
            .into_iter()
            .flat_map(|provider| {
                provider
                    .tools()
                    .into_iter()
                    .map(move |tool: ToolDefinition| ToolListing {
                        domain: provider.name().to_owned(),
                        name: tool.name,
                        description: tool.description,
                        input_schema: (*tool.input_schema).clone(),
                    })
            })
            .collect()
    }

    /// The listing as people read it: each domain, its tools with their
    /// arguments (`b?` for an optional one) and the first sentence of their
    /// description. Empty without a domain.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for provider in self.providers() {
            let _ = writeln!(out, "{} — {}", provider.name(), provider.description());
            for tool in provider.tools() {
                let _ = writeln!(out, "  {}({})", tool.name, arguments(&tool.input_schema));
                let _ = writeln!(out, "      {}", first_sentence(&tool.description));
            }
        }
        out
    }

    /// The tools that must wait for approval but are no enabled tool of the
    /// box, in name order: a typo there would let a tool's calls run
    /// unapproved, so a program that reads the names from a file refuses
    /// these.
    pub fn unknown_approvals(&self) -> Vec<String> {
        let enabled = self.shared_definitions();
        let mut unknown: Vec<String> = self
            .approvals()
            .chain(self.conditional_approvals())
            .filter(|name| !enabled.iter().any(|tool| tool.name == *name))
            .map(str::to_owned)
            .collect();
        unknown.sort();
        unknown.dedup();
        unknown
    }
}

/// `a, b?` from an object schema: required arguments plain, optional ones with `?`.
fn arguments(schema: &serde_json::Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|properties| {
            properties
                .keys()
                .map(|name| {
                    if required.contains(&name.as_str()) {
                        name.clone()
                    } else {
                        format!("{name}?")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_core::{ToolContext, ToolError};
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::{ToolSet, TypedTool};

    /// Arguments of `fly`.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code, reason = "only the schema is read")]
    struct Fly {
        /// Where from.
        origin: String,
        /// When.
        date: Option<String>,
    }

    fn travel() -> ToolBox {
        let set = ToolSet::new("travel", "Trips").tool(TypedTool::new(
            "fly",
            "Finds flights. Cheapest first.",
            |_: Fly, _: ToolContext| async { Ok::<_, ToolError>("none") },
        ));
        ToolBox::builder()
            .provider(Arc::new(set))
            .require_approval(["fly", "sail"])
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_listing_names_each_tool_its_domain_and_its_arguments() {
        let tools = travel();
        assert_eq!(tools.domains(), ["travel"]);
        let listing = tools.listing();
        assert_eq!(
            (listing[0].domain.as_str(), listing[0].name.as_str()),
            ("travel", "fly")
        );
        assert_eq!(
            tools.describe(),
            "travel — Trips\n  fly(origin, date?)\n      Finds flights.\n"
        );
    }

    #[test]
    fn an_approval_of_no_enabled_tool_is_named() {
        assert_eq!(travel().unknown_approvals(), ["sail"]);
    }
}
