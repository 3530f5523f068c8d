//! Between MCP tool results and Agentry's tool outcomes.

use agent_core::{ToolError, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// An MCP `tools/call` result as the model should see it: text blocks as
/// they are, other content described in brackets, structured content as
/// JSON when there is no text; `isError` results become [`ToolError::Failed`].
pub(crate) fn outcome(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let text = result.content.iter().map(describe).collect::<Vec<_>>().join("\n");
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            result.structured_content.map_or_else(
                || "the tool failed without saying why".to_owned(),
                |value| value.to_string(),
            )
        } else {
            text
        };
        return Err(ToolError::failed(message));
    }
    match result.structured_content {
        Some(value) if result.content.is_empty() => Ok(ToolOutput::Json(value)),
        _ => Ok(ToolOutput::Text(text)),
    }
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len()),
        ContentBlock::Audio(audio) => format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len()),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                format!(
                    "[binary resource {uri}{}]",
                    mime_type.as_deref().map(|m| format!(", {m}")).unwrap_or_default()
                )
            }
            _ => "[a resource of an unsupported kind]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link: {} ({})]", link.uri, link.name),
        // Content types added to the protocol later.
        _ => "[content of an unsupported type]".to_owned(),
    }
}

/// A tool outcome as an MCP `tools/call` result: the text the model would
/// read, with `isError` set for a failure; a JSON object result is also
/// given as structured content.
pub(crate) fn call_result(outcome: &Result<ToolOutput, ToolError>) -> CallToolResult {
    match outcome {
        Ok(output) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(output.to_content())]);
            if let ToolOutput::Json(value @ Value::Object(_)) = output {
                result.structured_content = Some(value.clone());
            }
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn text_blocks_are_joined_and_others_described() {
        let output = outcome(result(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"}
        ]})));
        assert_eq!(
            output,
            Ok(ToolOutput::Text(
                "first\n[image: image/png, 8 bytes of base64]\ninside\n[resource link: file:///b (b)]".into()
            ))
        );
    }

    #[test]
    fn is_error_becomes_a_tool_error_with_the_text() {
        let error = outcome(result(
            json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
        ));
        assert_eq!(error, Err(ToolError::failed("no such city")));
        let error = outcome(result(json!({"content": [], "isError": true})));
        assert_eq!(error, Err(ToolError::failed("the tool failed without saying why")));
    }

    #[test]
    fn structured_content_alone_is_json() {
        let output = outcome(result(json!({"content": [], "structuredContent": {"t": 1}})));
        assert_eq!(output, Ok(ToolOutput::Json(json!({"t": 1}))));
    }

    #[test]
    fn outcomes_map_to_results() {
        let ok = call_result(&Ok(ToolOutput::Json(json!({"sum": 5}))));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"sum": 5})));
        assert_eq!(ok.content[0].as_text().map(|t| t.text.as_str()), Some("{\"sum\":5}"));
        let failed = call_result(&Err(ToolError::failed("bad")));
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(failed.content[0].as_text().map(|t| t.text.as_str()), Some("bad"));
    }
}
