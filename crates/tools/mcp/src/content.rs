//! Between MCP tool results and Agentry's tool outcomes.

use agent_core::{Attachment, MediaKind, ToolError, ToolOutput, decode_base64};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// An MCP `tools/call` result as the model should see it: text blocks as
/// they are; images, audio and binary embedded resources as attachments
/// ([`ToolOutput::Media`]); other content (and media whose bytes are not
/// what they say) described in brackets; structured content as JSON when
/// there is no text; `isError` results become [`ToolError::Failed`].
pub(crate) fn outcome(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut attachments = Vec::new();
    let mut texts = Vec::new();
    for block in &result.content {
        match media(block) {
            Some(Ok(attachment)) => attachments.push(attachment),
            Some(Err(refused)) => texts.push(refused),
            None => texts.push(describe(block)),
        }
    }
    let text = texts.join("\n");
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
        _ if !attachments.is_empty() => Ok(ToolOutput::Media { text, attachments }),
        _ => Ok(ToolOutput::Text(text)),
    }
}

/// The attachment an image, audio or binary resource block holds; `None`
/// for other blocks; `Err` with a bracketed note when its data is not
/// base64 or not of the type it declares.
fn media(block: &ContentBlock) -> Option<Result<Attachment, String>> {
    let (data, mime_type, name) = match block {
        ContentBlock::Image(image) => (&image.data, Some(image.mime_type.as_str()), None),
        ContentBlock::Audio(audio) => (&audio.data, Some(audio.mime_type.as_str()), None),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents {
                uri, mime_type, blob, ..
            } => {
                let name = uri
                    .rsplit('/')
                    .next()
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned);
                (blob, mime_type.as_deref(), name)
            }
            _ => return None,
        },
        _ => return None,
    };
    let declared = mime_type.unwrap_or("unknown type");
    Some(
        decode_base64(data)
            .ok_or_else(|| format!("[{declared} content that is not base64]"))
            .and_then(|bytes| {
                Attachment::from_bytes(bytes, mime_type, name)
                    .map_err(|error| format!("[{declared} content refused: {error}]"))
            }),
    )
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
            let mut blocks = vec![ContentBlock::text(output.to_content())];
            blocks.extend(output.attachments().iter().filter_map(block_of));
            let mut result = CallToolResult::success(blocks);
            if let ToolOutput::Json(value @ Value::Object(_)) = output {
                result.structured_content = Some(value.clone());
            }
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

/// An attachment as an MCP content block: an image or audio block, a
/// document as an embedded binary resource; `None` when its bytes are not
/// here (given by URL: the URL goes as a resource link's text instead).
fn block_of(attachment: &Attachment) -> Option<ContentBlock> {
    let data = attachment.base64()?;
    Some(match attachment.kind {
        MediaKind::Image => ContentBlock::image(data, attachment.mime_type.clone()),
        MediaKind::Audio => ContentBlock::audio(data, attachment.mime_type.clone()),
        MediaKind::Document => ContentBlock::resource(ResourceContents::BlobResourceContents {
            uri: format!("attachment:///{}", attachment.name.as_deref().unwrap_or("document")),
            mime_type: Some(attachment.mime_type.clone()),
            blob: data,
            meta: None,
        }),
    })
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
        // "hello" is no PNG: the block is described, not attached.
        let output = outcome(result(json!({"content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"}
        ]})));
        let Ok(ToolOutput::Text(text)) = output else {
            panic!("{output:?}");
        };
        assert!(text.starts_with("first\n[image/png content refused: "), "{text}");
        assert!(text.ends_with("]\ninside\n[resource link: file:///b (b)]"), "{text}");
    }

    #[test]
    fn images_audio_and_binary_resources_come_in_as_attachments_and_go_out_as_blocks() {
        let png = agent_core::encode_base64(agent_testing::media::PNG);
        let pdf = agent_core::encode_base64(agent_testing::media::PDF);
        let output = outcome(result(json!({"content": [
            {"type": "text", "text": "The chart and the report."},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///tmp/report.pdf", "mimeType": "application/pdf", "blob": pdf}}
        ]})))
        .unwrap_or_else(|e| panic!("{e}"));
        let ToolOutput::Media { text, attachments } = &output else {
            panic!("{output:?}");
        };
        assert_eq!(text, "The chart and the report.");
        assert_eq!(attachments[0], agent_testing::media::png());
        assert_eq!(attachments[1].name.as_deref(), Some("report.pdf"));
        assert_eq!(attachments[1].kind, MediaKind::Document);

        // And back: a tool of ours served over MCP returns the same blocks.
        let served = call_result(&Ok(output));
        let value = serde_json::to_value(&served).unwrap_or_default();
        assert_eq!(value["content"][1]["type"], "image");
        assert_eq!(value["content"][1]["mimeType"], "image/png");
        assert_eq!(value["content"][2]["resource"]["mimeType"], "application/pdf");
        assert_eq!(outcome(served).ok().map(|o| o.attachments().len()), Some(2));
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
