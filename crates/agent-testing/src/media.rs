//! Small, valid media files for tests: a 1x1 PNG, a one-page PDF and a
//! silent WAV, as bytes and as [`Attachment`]s.

use agent_core::Attachment;

/// A 1x1 transparent PNG (67 bytes).
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A one-page PDF with no content.
pub const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/MediaBox[0 0 3 3]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// A WAV header with no samples (8 kHz, mono, 16-bit).
pub const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 36, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0, 0, 1, 0, 1, 0, 0x40,
    0x1F, 0, 0, 0x80, 0x3E, 0, 0, 2, 0, 16, 0, b'd', b'a', b't', b'a', 0, 0, 0, 0,
];

/// [`PNG`] as an attachment.
pub fn png() -> Attachment {
    inline(PNG, "image/png", None)
}

/// [`PDF`] as an attachment named `report.pdf`.
pub fn pdf() -> Attachment {
    inline(PDF, "application/pdf", Some("report.pdf"))
}

/// [`WAV`] as an attachment.
pub fn wav() -> Attachment {
    inline(WAV, "audio/wav", None)
}

/// An image given by URL.
pub fn png_url() -> Attachment {
    match Attachment::from_url("https://images.example.com/cat.png", "image/png") {
        Ok(attachment) => attachment,
        Err(error) => panic!("the fixture URL is an image: {error}"),
    }
}

fn inline(bytes: &[u8], mime_type: &str, name: Option<&str>) -> Attachment {
    match Attachment::from_bytes(bytes.to_vec(), Some(mime_type), name.map(str::to_owned)) {
        Ok(attachment) => attachment,
        Err(error) => panic!("the {mime_type} fixture is valid: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use agent_core::MediaKind;

    use super::*;

    #[test]
    fn the_fixtures_are_what_they_say() {
        assert_eq!((png().kind, png().size), (MediaKind::Image, 67));
        assert_eq!(pdf().kind, MediaKind::Document);
        assert_eq!(wav().mime_type, "audio/wav");
        assert_eq!(png_url().url(), Some("https://images.example.com/cat.png"));
    }
}
