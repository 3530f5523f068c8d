//! [`AttachmentDownloads`]: attachments given by URL downloaded under the
//! web tools' policy (`[tools.web] fetch_attachment_urls`), each URL once.

use std::collections::VecDeque;
use std::sync::Mutex;

use agent_core::{Attachment, Message};

use crate::{WebConfig, WebError, WebTools};

/// How many downloads are kept for the next model calls.
const KEPT: usize = 16;
/// The most bytes they may hold together.
const KEPT_BYTES: u64 = 64 * 1024 * 1024;

/// Downloads the attachments given by URL in a conversation
/// ([`download_all`](Self::download_all)), through
/// [`WebTools::download_attachment`]: the URL policy (no private
/// addresses unless allowed, every redirect checked), the size limit, the
/// type sniffed. The latest downloads are kept, so that the model calls of
/// a run, which resend the conversation, fetch each URL once.
#[derive(Debug)]
pub struct AttachmentDownloads {
    tools: WebTools,
    kept: Mutex<VecDeque<(String, Attachment)>>,
}

impl AttachmentDownloads {
    /// Downloads under `config`'s rules.
    ///
    /// # Errors
    ///
    /// An invalid `config` ([`WebTools::new`]).
    pub fn new(config: &WebConfig) -> Result<Self, WebError> {
        Ok(Self::with_tools(WebTools::new(config)?))
    }

    /// Downloads with `tools`.
    pub fn with_tools(tools: WebTools) -> Self {
        Self {
            tools,
            kept: Mutex::new(VecDeque::new()),
        }
    }

    /// Replaces every attachment given by URL in `messages` (user messages
    /// and tool results) with its download. One that cannot be downloaded
    /// stays a URL (the provider takes it, or refuses it by name); the
    /// answer says why, one line per URL.
    pub async fn download_all(&self, messages: &mut [Message]) -> Vec<String> {
        let mut failures = Vec::new();
        for message in messages.iter_mut() {
            let Some(attachments) = message.attachments_mut() else {
                continue;
            };
            for attachment in attachments.iter_mut() {
                let Some(url) = attachment.url().map(str::to_owned) else {
                    continue;
                };
                if let Some(kept) = self.kept(&url) {
                    *attachment = kept;
                    continue;
                }
                match self.tools.download_attachment(attachment).await {
                    Ok(downloaded) => {
                        self.keep(url, &downloaded);
                        *attachment = downloaded;
                    }
                    Err(error) => failures.push(error.to_string()),
                }
            }
        }
        failures
    }

    fn kept(&self, url: &str) -> Option<Attachment> {
        let kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter()
            .find(|(at, _)| at == url)
            .map(|(_, attachment)| attachment.clone())
    }

    fn keep(&self, url: String, attachment: &Attachment) {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.push_back((url, attachment.clone()));
        while kept.len() > KEPT || kept.iter().map(|(_, attachment)| attachment.size).sum::<u64>() > KEPT_BYTES {
            kept.pop_front();
        }
    }
}
