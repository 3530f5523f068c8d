//! Message content as OpenAI's API writes it: a string, or a list of parts
//! (`text`, `image_url`, `input_audio`, `file`), read into the text and
//! the attachments of a user message.
//!
//! An image by `https://` URL stays a URL (the provider fetches it; the
//! server does not); a `data:` URL, `input_audio` data and a `file`'s
//! `file_data` are decoded and their type checked against their bytes.
//! Anything else is a 400 naming the part.

use agent_core::{Attachment, ImageDetail, decode_base64, mime_of_name};
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// A message's content: a string, or parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Content {
    /// Text.
    Text(String),
    /// Parts, each a JSON object with a `type`.
    Parts(Vec<Value>),
}

impl Content {
    /// The text (the text parts joined by newlines) and the attachments, in
    /// order; `at` names the content in errors (`messages[2].content`).
    pub(crate) fn into_parts(self, at: &str) -> Result<(String, Vec<Attachment>), ApiError> {
        let parts = match self {
            Self::Text(text) => return Ok((text, Vec::new())),
            Self::Parts(parts) => parts,
        };
        let mut texts = Vec::new();
        let mut attachments = Vec::new();
        for (index, part) in parts.iter().enumerate() {
            let at = format!("{at}[{index}]");
            let invalid = |message: String| ApiError::InvalidRequest(format!("{at}: {message}"));
            let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
            match kind {
                "text" => texts.push(string(part, "text").ok_or_else(|| invalid("a text part needs `text`".into()))?),
                "image_url" => attachments.push(image(part).map_err(invalid)?),
                "input_audio" => attachments.push(audio(part).map_err(invalid)?),
                "file" => attachments.push(file(part).map_err(invalid)?),
                other => {
                    return Err(invalid(format!(
                        "content parts of type `{other}` are not supported; send text, image_url, input_audio or file"
                    )));
                }
            }
        }
        Ok((texts.join("\n"), attachments))
    }

    /// The text only; `at` names the content in errors. Media are refused:
    /// only user messages carry them.
    pub(crate) fn into_text(self, at: &str) -> Result<String, ApiError> {
        let (text, attachments) = self.into_parts(at)?;
        if attachments.is_empty() {
            Ok(text)
        } else {
            Err(ApiError::InvalidRequest(format!(
                "{at}: only user messages may carry images, audio or files"
            )))
        }
    }
}

fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// `image_url`: `{"url": "https://..." | "data:image/png;base64,...", "detail"?}`.
fn image(part: &Value) -> Result<Attachment, String> {
    let body = part.get("image_url").ok_or("an image_url part needs `image_url`")?;
    let url = string(body, "url").ok_or("`image_url` needs `url`")?;
    let attachment = if url.starts_with("data:") {
        from_data_url(&url, None)?
    } else if url.starts_with("https://") || url.starts_with("http://") {
        Attachment::from_url(url.clone(), mime_of_name(&url).unwrap_or("image/*")).map_err(|error| error.to_string())?
    } else {
        return Err("`image_url.url` must be an http(s) URL or a data URL".to_owned());
    };
    if attachment.kind != agent_core::MediaKind::Image {
        return Err(format!("`image_url` holds {}, not an image", attachment.describe()));
    }
    let detail = match body.get("detail").and_then(Value::as_str) {
        None => None,
        Some("auto") => Some(ImageDetail::Auto),
        Some("low") => Some(ImageDetail::Low),
        Some("high") => Some(ImageDetail::High),
        Some(other) => return Err(format!("`detail` is `{other}`; expected auto, low or high")),
    };
    Ok(match detail {
        Some(detail) => attachment.with_detail(detail),
        None => attachment,
    })
}

/// `input_audio`: `{"data": base64, "format": "wav" | "mp3"}`.
fn audio(part: &Value) -> Result<Attachment, String> {
    let body = part
        .get("input_audio")
        .ok_or("an input_audio part needs `input_audio`")?;
    let data = string(body, "data").ok_or("`input_audio` needs `data`")?;
    let mime = match body.get("format").and_then(Value::as_str) {
        Some("wav") => "audio/wav",
        Some("mp3") => "audio/mpeg",
        Some(other) => return Err(format!("`format` is `{other}`; expected wav or mp3")),
        None => return Err("`input_audio` needs `format`".to_owned()),
    };
    let bytes = decode_base64(&data).ok_or("`input_audio.data` is not base64")?;
    Attachment::from_bytes(bytes, Some(mime), None).map_err(|error| error.to_string())
}

/// `file`: `{"file_data": "data:application/pdf;base64,...", "filename"?}`.
fn file(part: &Value) -> Result<Attachment, String> {
    let body = part.get("file").ok_or("a file part needs `file`")?;
    if body.get("file_id").is_some() && body.get("file_data").is_none() {
        return Err("`file_id` is not supported (the server keeps no files); send `file_data`".to_owned());
    }
    let data = string(body, "file_data").ok_or("`file` needs `file_data`")?;
    let name = string(body, "filename");
    if data.starts_with("data:") {
        return from_data_url(&data, name);
    }
    // Bare base64: the file name says what it is.
    let bytes = decode_base64(&data).ok_or("`file_data` is neither a data URL nor base64")?;
    Attachment::from_named_bytes(bytes, name).map_err(|error| error.to_string())
}

/// `data:MIME;base64,DATA` as an attachment of that declared type.
fn from_data_url(url: &str, name: Option<String>) -> Result<Attachment, String> {
    let rest = url.strip_prefix("data:").unwrap_or(url);
    let (header, data) = rest.split_once(',').ok_or("the data URL has no `,`")?;
    let Some(mime) = header.strip_suffix(";base64") else {
        return Err("the data URL must be base64 (`data:TYPE;base64,...`)".to_owned());
    };
    let bytes = decode_base64(data).ok_or("the data URL's data is not base64")?;
    let declared = (!mime.is_empty()).then_some(mime);
    Attachment::from_bytes(bytes, declared, name).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use agent_core::{MediaKind, encode_base64};
    use serde_json::json;

    use super::*;

    fn parts(value: Value) -> Result<(String, Vec<Attachment>), ApiError> {
        let content: Content = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
        content.into_parts("messages[0].content")
    }

    fn png_data_url() -> String {
        format!("data:image/png;base64,{}", encode_base64(agent_testing::media::PNG))
    }

    #[test]
    fn every_openai_part_is_read() {
        let pdf = format!(
            "data:application/pdf;base64,{}",
            encode_base64(agent_testing::media::PDF)
        );
        let (text, attachments) = parts(json!([
            {"type": "text", "text": "Compare these."},
            {"type": "image_url", "image_url": {"url": png_data_url(), "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
            {"type": "input_audio", "input_audio": {"data": encode_base64(agent_testing::media::WAV), "format": "wav"}},
            {"type": "file", "file": {"file_data": pdf, "filename": "report.pdf"}},
            {"type": "text", "text": "Thanks."}
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(text, "Compare these.\nThanks.");
        let kinds: Vec<(MediaKind, &str)> = attachments.iter().map(|a| (a.kind, a.mime_type.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (MediaKind::Image, "image/png"),
                (MediaKind::Image, "image/jpeg"),
                (MediaKind::Audio, "audio/wav"),
                (MediaKind::Document, "application/pdf")
            ]
        );
        assert_eq!(attachments[0].detail, Some(ImageDetail::Low));
        assert_eq!(attachments[1].url(), Some("https://x.test/cat.jpg"));
        assert_eq!(attachments[3].name.as_deref(), Some("report.pdf"));
    }

    #[test]
    fn a_bad_part_is_a_400_naming_it() {
        let lying = format!("data:image/jpeg;base64,{}", encode_base64(agent_testing::media::PNG));
        let cases = [
            (
                json!([{"type": "image_url", "image_url": {"url": lying}}]),
                "[0]: the attachment is declared as image/jpeg but its content is image/png",
            ),
            (
                json!([{"type": "text", "text": "a"}, {"type": "video_url"}]),
                "[1]: content parts of type `video_url` are not supported",
            ),
            (
                json!([{"type": "image_url", "image_url": {"url": "ftp://x/a.png"}}]),
                "http(s) URL or a data URL",
            ),
            (
                json!([{"type": "file", "file": {"file_id": "file-1"}}]),
                "`file_id` is not supported",
            ),
            (
                json!([{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "ogg"}}]),
                "expected wav or mp3",
            ),
            (
                json!([{"type": "image_url", "image_url": {"url": "data:image/png,plain"}}]),
                "must be base64",
            ),
        ];
        for (value, expected) in cases {
            let error = parts(value).expect_err(expected).to_string();
            assert!(error.contains(expected), "{error}");
            assert!(error.contains("messages[0].content"), "{error}");
        }
    }

    #[test]
    fn only_user_messages_carry_media() {
        let content: Content =
            serde_json::from_value(json!([{"type": "image_url", "image_url": {"url": png_data_url()}}]))
                .unwrap_or_else(|e| panic!("{e}"));
        let error = content
            .into_text("messages[1].content")
            .expect_err("media on an assistant message");
        assert!(error.to_string().contains("only user messages"), "{error}");
    }
}
