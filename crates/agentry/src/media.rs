//! Attachments from files: what `agentry run --attach FILE` sends; and,
//! with the `web` feature, attachments given by URL downloaded before each
//! model call ([`DownloadAttachmentUrls`], `[tools.web]
//! fetch_attachment_urls`).
//!
//! The declared type comes from the file's extension, the actual one from
//! its bytes ([`Attachment::from_bytes`]): they must agree, so a `.png` that
//! holds a JPEG, or an executable named `.pdf`, is refused before anything
//! is sent.
//!
//! ```
//! use agentry::media::{AttachError, attachment_from_file};
//!
//! let dir = tempfile::tempdir()?;
//! let notes = dir.path().join("notes.md");
//! std::fs::write(&notes, "# Groceries\n- milk\n")?;
//! let attachment = attachment_from_file(&notes)?;
//! assert_eq!(attachment.mime_type, "text/markdown");
//! assert_eq!(attachment.name.as_deref(), Some("notes.md"));
//!
//! let fake = dir.path().join("photo.png");
//! std::fs::write(&fake, "not a picture")?;
//! assert!(matches!(attachment_from_file(&fake), Err(AttachError::Media { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};

use crate::core::{Attachment, MediaError};

/// A file that cannot be attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// It cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its content is not what its name says, or of no kind a model reads.
    #[error("{} cannot be attached: {source}", path.display())]
    Media {
        /// The file.
        path: PathBuf,
        /// Why.
        source: MediaError,
    },
}

/// The MIME type a file's extension declares, for the kinds a model reads
/// ([`mime_of_name`](crate::core::mime_of_name)).
pub fn mime_of_extension(path: &Path) -> Option<&'static str> {
    crate::core::mime_of_name(path.file_name()?.to_str()?)
}

/// The file at `path` as an attachment named after it.
///
/// # Errors
///
/// [`AttachError::Io`] when it cannot be read, [`AttachError::Media`] when
/// its bytes are not of the type its extension declares or of no kind a
/// model reads.
pub fn attachment_from_file(path: &Path) -> Result<Attachment, AttachError> {
    let bytes = std::fs::read(path).map_err(|source| AttachError::Io {
        path: path.to_owned(),
        source,
    })?;
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned());
    Attachment::from_named_bytes(bytes, name).map_err(|source| AttachError::Media {
        path: path.to_owned(),
        source,
    })
}

/// Every file of `paths` (relative ones to `cwd`) as an attachment, in order.
///
/// # Errors
///
/// The first file that cannot be attached.
pub fn attachments_from_files(paths: &[PathBuf], cwd: &Path) -> Result<Vec<Attachment>, AttachError> {
    paths.iter().map(|path| attachment_from_file(&cwd.join(path))).collect()
}

/// A [`RunHook`](crate::runner::RunHook) that downloads, before each model
/// call, the attachments given by URL in the request (under the web tools'
/// URL policy and size limit, each URL once: [`AttachmentDownloads`](agent_tools_web::AttachmentDownloads)),
/// so that the provider gets their bytes. The conversation keeps the
/// URLs. One that cannot be downloaded goes as its URL, with a warning
/// saying why.
#[cfg(feature = "web")]
#[derive(Debug)]
pub struct DownloadAttachmentUrls(agent_tools_web::AttachmentDownloads);

#[cfg(feature = "web")]
impl DownloadAttachmentUrls {
    /// Downloads with `downloads`.
    pub fn new(downloads: agent_tools_web::AttachmentDownloads) -> Self {
        Self(downloads)
    }
}

#[cfg(feature = "web")]
#[async_trait::async_trait]
impl crate::runner::RunHook for DownloadAttachmentUrls {
    async fn before_model(&self, request: &mut crate::core::ChatRequest) {
        for reason in self.0.download_all(&mut request.messages).await {
            tracing::warn!(%reason, "an attachment could not be downloaded; it goes to the provider as its URL");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_attached_by_their_bytes_and_refused_when_the_name_lies() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let png = dir.path().join("dot.png");
        std::fs::write(&png, agent_testing::media::PNG).expect("written");
        let lying = dir.path().join("dot.pdf");
        std::fs::write(&lying, agent_testing::media::PNG).expect("written");
        let attached = attachments_from_files(&[PathBuf::from("dot.png")], dir.path()).expect("attached");
        assert_eq!(attached[0].mime_type, "image/png");
        let error = attachment_from_file(&lying).expect_err("a png is no pdf").to_string();
        assert!(
            error.contains("dot.pdf cannot be attached") && error.contains("declared as application/pdf"),
            "{error}"
        );
        let missing = attachment_from_file(&dir.path().join("none.png")).expect_err("missing");
        assert!(matches!(missing, AttachError::Io { .. }), "{missing}");
        assert_eq!(mime_of_extension(Path::new("a.JPG")), Some("image/jpeg"));
        assert_eq!(mime_of_extension(Path::new("a.exe")), None);
    }
}
