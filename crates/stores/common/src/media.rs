//! Media kept once per store, by content hash.
//!
//! A conversation that sends the same 5 MiB screenshot in every turn would
//! store it in every message, as base64. Instead, [`EncodedMessage`](crate::EncodedMessage)
//! writes each inline attachment as a reference ([`MediaSource::Stored`],
//! its SHA-256) and hands the bytes over as a [`MediaBlob`], which a store
//! keeps once; loading puts the bytes back ([`restore_media`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use agent_core::{Attachment, MediaSource, Message, StoreError};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One distinct content: its hash, type and bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct MediaBlob {
    /// The SHA-256 of `data`, in lowercase hexadecimal.
    pub sha256: String,
    /// Its MIME type.
    pub mime_type: String,
    /// The bytes.
    pub data: Arc<[u8]>,
}

impl std::fmt::Debug for MediaBlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MediaBlob({}, {} bytes, {})",
            self.mime_type,
            self.data.len(),
            &self.sha256[..12.min(self.sha256.len())]
        )
    }
}

/// The SHA-256 of `data`, in lowercase hexadecimal.
pub fn content_hash(data: &[u8]) -> String {
    use std::fmt::Write as _;

    let digest = Sha256::digest(data);
    digest.iter().fold(String::with_capacity(64), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

/// `message` with each inline attachment replaced by a reference to its
/// hash, and the blobs (each content once); `None` when it holds no
/// inline attachment (nothing to change).
pub fn externalise(message: &Message) -> Option<(Message, Vec<MediaBlob>)> {
    if !message
        .attachments()
        .iter()
        .any(|attachment| attachment.bytes().is_some())
    {
        return None;
    }
    let mut message = message.clone();
    let mut blobs: Vec<MediaBlob> = Vec::new();
    for attachment in message.attachments_mut().into_iter().flatten() {
        store_once(attachment, &mut blobs);
    }
    Some((message, blobs))
}

/// Makes an inline `attachment` a reference to its hash, its bytes added
/// to `blobs` unless there already; whether it was inline.
fn store_once(attachment: &mut Attachment, blobs: &mut Vec<MediaBlob>) -> bool {
    let MediaSource::Inline { data } = &attachment.source else {
        return false;
    };
    let sha256 = content_hash(data);
    if !blobs.iter().any(|blob| blob.sha256 == sha256) {
        blobs.push(MediaBlob {
            sha256: sha256.clone(),
            mime_type: attachment.mime_type.clone(),
            data: Arc::clone(data),
        });
    }
    attachment.source = MediaSource::Stored { sha256 };
    true
}

/// The hashes the stored references of `messages` name.
pub fn stored_hashes(messages: &[Message]) -> BTreeSet<String> {
    messages
        .iter()
        .flat_map(Message::attachments)
        .filter_map(|attachment| match &attachment.source {
            MediaSource::Stored { sha256 } => Some(sha256.clone()),
            _ => None,
        })
        .collect()
}

/// Puts the bytes of `blobs` (hash -> bytes) back into the stored
/// references of `messages` (of conversation `name`).
///
/// # Errors
///
/// [`StoreError::Corrupt`](agent_core::StoreError) naming the hash of a
/// reference whose bytes the store does not hold, or whose bytes do not
/// have that hash.
pub fn restore_media<S: std::hash::BuildHasher>(
    name: &str,
    messages: &mut [Message],
    blobs: &HashMap<String, Arc<[u8]>, S>,
) -> Result<(), StoreError> {
    for message in messages.iter_mut() {
        for attachment in message.attachments_mut().into_iter().flatten() {
            let MediaSource::Stored { sha256 } = &attachment.source else {
                continue;
            };
            let data = blobs.get(sha256).ok_or_else(|| {
                StoreError::corrupt(format!(
                    "conversation `{name}` refers to the attachment {sha256}, which the store does not hold"
                ))
            })?;
            attachment.source = MediaSource::Inline { data: Arc::clone(data) };
        }
    }
    Ok(())
}

/// A run checkpoint (opaque JSON: a run's state, with its conversation)
/// with each inline attachment in it replaced by a reference to its hash,
/// as [`externalise`] does for a message, and the blobs (each content
/// once). An attachment is any object that reads as one.
pub fn externalise_value(value: &mut Value) -> Vec<MediaBlob> {
    let mut blobs: Vec<MediaBlob> = Vec::new();
    visit_attachments(value, &mut |attachment| store_once(attachment, &mut blobs));
    blobs
}

/// A checkpoint as the JSON text a store keeps, its attachments
/// references ([`externalise_value`]), and their blobs.
///
/// # Errors
///
/// [`StoreError::Backend`](agent_core::StoreError) when it cannot be
/// written as JSON.
pub fn encode_checkpoint(name: &str, checkpoint: &Value) -> Result<(String, Vec<MediaBlob>), StoreError> {
    let mut checkpoint = checkpoint.clone();
    let media = externalise_value(&mut checkpoint);
    let body = serde_json::to_string(&checkpoint).map_err(|error| {
        StoreError::backend(format!(
            "could not encode the run checkpoint of conversation `{name}`: {error}"
        ))
    })?;
    Ok((body, media))
}

/// The hashes the stored references in a checkpoint name.
pub fn stored_hashes_in(value: &Value) -> BTreeSet<String> {
    let mut hashes = BTreeSet::new();
    let mut value = value.clone();
    visit_attachments(&mut value, &mut |attachment| {
        if let MediaSource::Stored { sha256 } = &attachment.source {
            hashes.insert(sha256.clone());
        }
        false
    });
    hashes
}

/// Puts the bytes of `blobs` back into the stored references of the
/// checkpoint of conversation `name`.
///
/// # Errors
///
/// [`StoreError::Corrupt`](agent_core::StoreError) naming the hash of a
/// reference whose bytes the store does not hold.
pub fn restore_value<S: std::hash::BuildHasher>(
    name: &str,
    value: &mut Value,
    blobs: &HashMap<String, Arc<[u8]>, S>,
) -> Result<(), StoreError> {
    let mut missing = None;
    visit_attachments(value, &mut |attachment| {
        let MediaSource::Stored { sha256 } = &attachment.source else {
            return false;
        };
        if let Some(data) = blobs.get(sha256) {
            attachment.source = MediaSource::Inline { data: Arc::clone(data) };
            true
        } else {
            missing.get_or_insert_with(|| sha256.clone());
            false
        }
    });
    match missing {
        Some(sha256) => Err(StoreError::corrupt(format!(
            "the run checkpoint of conversation `{name}` refers to the attachment {sha256}, which the store does not hold"
        ))),
        None => Ok(()),
    }
}

/// Calls `change` on every object of `value` that reads as an attachment
/// (it has a `source`); one it changed (answering `true`) is written back.
fn visit_attachments(value: &mut Value, change: &mut dyn FnMut(&mut Attachment) -> bool) {
    match value {
        Value::Object(object) => {
            if object.contains_key("source")
                && let Ok(mut attachment) = serde_json::from_value::<Attachment>(Value::Object(object.clone()))
            {
                if change(&mut attachment)
                    && let Ok(Value::Object(written)) = serde_json::to_value(&attachment)
                {
                    *object = written;
                }
                return;
            }
            for item in object.values_mut() {
                visit_attachments(item, change);
            }
        }
        Value::Array(items) => {
            for item in items {
                visit_attachments(item, change);
            }
        }
        _ => {}
    }
}

/// Checks that `data` read back for `sha256` has that hash.
///
/// # Errors
///
/// [`StoreError::Corrupt`](agent_core::StoreError) when it does not.
pub fn verified(sha256: &str, data: Vec<u8>) -> Result<Arc<[u8]>, StoreError> {
    if content_hash(&data) == sha256 {
        Ok(data.into())
    } else {
        Err(StoreError::corrupt(format!(
            "the stored attachment {sha256} does not match its hash"
        )))
    }
}

#[cfg(test)]
mod tests {
    use agent_core::Attachment;

    use super::*;

    const PNG_HEADER: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

    fn image() -> Attachment {
        Attachment::from_bytes(PNG_HEADER.to_vec(), None, None).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_checkpoint_keeps_references_and_gets_its_bytes_back() {
        let message = Message::user_with("twice", vec![image(), image()]);
        let original = serde_json::json!({"request": {"messages": [message, Message::assistant("ok")]},
                                          "tool_arguments": {"source": "the web"}});
        let mut checkpoint = original.clone();
        let blobs = externalise_value(&mut checkpoint);
        assert_eq!(blobs.len(), 1);
        let text = checkpoint.to_string();
        assert!(!text.contains("\"data\""), "{text}");
        assert_eq!(stored_hashes_in(&checkpoint).len(), 1);
        assert_eq!(checkpoint["tool_arguments"], original["tool_arguments"]);

        let mut missing = checkpoint.clone();
        let error = restore_value("c", &mut missing, &HashMap::new()).expect_err("no bytes");
        assert!(error.to_string().contains(&blobs[0].sha256), "{error}");

        let held: HashMap<String, Arc<[u8]>> = blobs
            .iter()
            .map(|blob| (blob.sha256.clone(), Arc::clone(&blob.data)))
            .collect();
        restore_value("c", &mut checkpoint, &held).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(checkpoint, original);
    }

    #[test]
    fn inline_media_go_out_once_by_hash_and_come_back() {
        let message = Message::user_with("twice", vec![image(), image()]);
        let (stored, blobs) = externalise(&message).unwrap_or_else(|| panic!("inline media"));
        assert_eq!(blobs.len(), 1);
        assert!(!serde_json::to_string(&stored).unwrap_or_default().contains("iVBOR"));
        let hashes = stored_hashes(std::slice::from_ref(&stored));
        assert_eq!(hashes.into_iter().collect::<Vec<_>>(), [blobs[0].sha256.clone()]);
        let mut loaded = vec![stored];
        let held = HashMap::from([(blobs[0].sha256.clone(), Arc::clone(&blobs[0].data))]);
        restore_media("chat", &mut loaded, &held).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded[0], message);
        assert!(externalise(&Message::user("no media")).is_none());
    }

    #[test]
    fn a_reference_without_its_bytes_or_with_other_bytes_is_a_corrupt_store() {
        let (stored, blobs) = externalise(&Message::user_with("x", vec![image()])).unwrap_or_else(|| panic!("media"));
        let error = restore_media("chat", &mut [stored], &HashMap::new()).expect_err("missing");
        assert!(error.to_string().contains(&blobs[0].sha256), "{error}");
        assert!(verified(&blobs[0].sha256, b"other".to_vec()).is_err());
        assert!(verified(&blobs[0].sha256, PNG_HEADER.to_vec()).is_ok());
    }
}
