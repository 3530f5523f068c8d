use serde_json::json;

use super::*;
use crate::{Message, ToolResult};

/// A 1x1 PNG's first bytes (signature and header).
pub(crate) const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0];
const PDF: &[u8] = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n";

#[test]
fn the_type_is_sniffed_from_the_bytes_and_must_match_the_declared_one() {
    let png = Attachment::from_bytes(PNG.to_vec(), None, None).expect("a png");
    assert_eq!(
        (png.kind, png.mime_type.as_str(), png.size),
        (MediaKind::Image, "image/png", 33)
    );
    let jpeg = Attachment::from_bytes(JPEG.to_vec(), Some("image/JPG"), None).expect("an alias of jpeg");
    assert_eq!(jpeg.mime_type, "image/jpeg");
    let pdf = Attachment::from_bytes(PDF.to_vec(), Some("application/pdf"), Some("a.pdf".into())).expect("a pdf");
    assert_eq!((pdf.kind, pdf.name.as_deref()), (MediaKind::Document, Some("a.pdf")));

    let mismatch = Attachment::from_bytes(JPEG.to_vec(), Some("image/png"), None).expect_err("a jpeg is no png");
    assert_eq!(
        mismatch,
        MediaError::TypeMismatch {
            declared: "image/png".into(),
            sniffed: "image/jpeg".into()
        }
    );
    assert!(
        mismatch
            .to_string()
            .contains("declared as image/png but its content is image/jpeg")
    );
}

#[test]
fn a_text_document_is_declared_and_must_be_text() {
    let notes = Attachment::from_bytes(b"# Notes\nBuy milk.".to_vec(), Some("text/markdown"), None).expect("text");
    assert_eq!(
        (notes.kind, notes.mime_type.as_str()),
        (MediaKind::Document, "text/markdown")
    );
    let binary = Attachment::from_bytes(vec![0xff, 0xfe, 0x00, 0x81], Some("text/plain"), None);
    assert!(matches!(binary, Err(MediaError::TypeMismatch { .. })), "{binary:?}");
    let unknown = Attachment::from_bytes(b"just bytes".to_vec(), None, None);
    assert!(matches!(unknown, Err(MediaError::UnsupportedType(_))), "{unknown:?}");
    let zip = Attachment::from_bytes(b"PK\x03\x04\x14\0\0\0\x08\0".to_vec(), None, None);
    assert!(matches!(zip, Err(MediaError::UnsupportedType(mime)) if mime == "application/zip"));
}

#[test]
fn debug_shows_the_type_and_size_never_the_bytes_nor_a_url_query() {
    let png = Attachment::from_bytes(PNG.to_vec(), None, None).expect("a png");
    let shown = format!("{png:?} {:?}", Message::user_with("look", vec![png.clone()]));
    assert!(shown.contains("Attachment(image/png, 33 bytes, inline)"), "{shown}");
    let data = png.base64().expect("inline");
    assert!(!shown.contains(&data[..12]), "{shown}");
    let signed = Attachment::from_url("https://cdn.example.com/a.png?X-Signature=secret", "image/png").expect("url");
    let shown = format!("{signed:?}");
    assert_eq!(shown, "Attachment(image/png, 0 bytes, url(https://cdn.example.com))");
}

#[test]
fn an_attachment_serialises_flat_with_base64_bytes_and_reads_back() {
    let png = Attachment::from_bytes(PNG.to_vec(), None, None)
        .expect("a png")
        .with_detail(ImageDetail::High);
    let value = serde_json::to_value(&png).expect("serialises");
    assert_eq!(value["kind"], "image");
    assert_eq!(value["source"], "inline");
    assert_eq!(value["detail"], "high");
    assert_eq!(
        decode_base64(value["data"].as_str().expect("base64")).as_deref(),
        Some(PNG)
    );
    assert_eq!(serde_json::from_value::<Attachment>(value).expect("reads back"), png);
    let stored = json!({"kind": "image", "mime_type": "image/png", "size": 33, "source": "stored", "sha256": "ab"});
    let stored: Attachment = serde_json::from_value(stored).expect("a stored reference");
    assert_eq!(stored.source, MediaSource::Stored { sha256: "ab".into() });
    let bad = json!({"kind": "image", "mime_type": "image/png", "source": "inline", "data": "not base64!"});
    assert!(serde_json::from_value::<Attachment>(bad).is_err());
    assert_eq!(png.data_url().expect("inline")[..22], *"data:image/png;base64,");
}

#[test]
fn messages_without_attachments_serialise_exactly_as_before() {
    assert_eq!(
        serde_json::to_value(Message::user("hi")).expect("serialises"),
        json!({"role": "user", "content": "hi"})
    );
    let old: Message = serde_json::from_value(json!({"role": "user", "content": "hi"})).expect("an old message");
    assert_eq!(old, Message::user("hi"));
    let result = ToolResult::success("c1", "lookup", "42");
    assert_eq!(
        serde_json::to_value(Message::Tool(result.clone())).expect("serialises"),
        json!({"role": "tool", "call_id": "c1", "name": "lookup", "content": "42", "is_error": false})
    );
    let with = Message::user_with(
        "look",
        vec![Attachment::from_url("https://x.test/a.png", "image/png").expect("url")],
    );
    let value = serde_json::to_value(&with).expect("serialises");
    assert_eq!(value["attachments"][0]["url"], "https://x.test/a.png");
    assert_eq!(serde_json::from_value::<Message>(value).expect("reads back"), with);
    assert_eq!(with.attachments().len(), 1);
}

#[test]
fn mime_names_are_normalised_and_kinds_told() {
    assert_eq!(normalise_mime("Image/JPG; q=1"), "image/jpeg");
    assert_eq!(normalise_mime("audio/x-wav"), "audio/wav");
    assert_eq!(MediaKind::of_mime("audio/mpeg"), Some(MediaKind::Audio));
    assert_eq!(MediaKind::of_mime("text/csv"), Some(MediaKind::Document));
    assert_eq!(MediaKind::of_mime("application/zip"), None);
    let png = Attachment::from_bytes(PNG.to_vec(), None, None).expect("a png");
    assert_eq!(png.describe(), "an image (image/png)");
}

#[test]
fn limits_refuse_what_is_larger_and_name_the_provider() {
    let limits = MediaLimits {
        max_image_bytes: 40,
        max_document_bytes: 1_000,
        max_audio_bytes: 0,
    };
    let png = Attachment::from_bytes(PNG.to_vec(), None, None).expect("a png");
    assert!(limits.check(&png, "openai").is_ok());
    let tight = MediaLimits {
        max_image_bytes: 10,
        ..limits
    };
    let error = tight.check(&png, "openai").expect_err("too large");
    assert_eq!(
        error.to_string(),
        "the image attachment is 33 bytes; openai takes at most 10 bytes"
    );
    let error: crate::LlmError = error.into();
    assert_eq!(error.kind, crate::LlmErrorKind::UnsupportedInput);
    let url = Attachment::from_url("https://x.test/a.png", "image/png").expect("url");
    assert!(tight.check(&url, "openai").is_ok());
    let refusal = crate::unsupported_attachment(&png, "in a tool result", "ollama");
    assert_eq!(
        refusal.message,
        "ollama cannot take an image (image/png) in a tool result"
    );
}

#[test]
fn the_signatures_of_every_kind_are_told_apart() {
    let cases: [(&[u8], Option<&str>); 12] = [
        (b"\x89PNG\r\n\x1a\n....", Some("image/png")),
        (&[0xFF, 0xD8, 0xFF, 0xDB], Some("image/jpeg")),
        (b"GIF89a..", Some("image/gif")),
        (b"RIFF\0\0\0\0WEBPVP8 ", Some("image/webp")),
        (b"RIFF\0\0\0\0WAVEfmt ", Some("audio/wav")),
        (b"%PDF-1.7", Some("application/pdf")),
        (b"ID3\x04\0\0", Some("audio/mpeg")),
        (b"OggS\0\x02", Some("audio/ogg")),
        (b"fLaC\0\0", Some("audio/flac")),
        (b"\0\0\0\x20ftypM4A ", Some("audio/m4a")),
        (b"\x7fELF\x02", Some("application/x-executable")),
        (b"RIFF", None),
    ];
    for (bytes, expected) in cases {
        assert_eq!(sniff(bytes), expected, "{bytes:?}");
    }
    assert_eq!(sniff(b""), None);
}
