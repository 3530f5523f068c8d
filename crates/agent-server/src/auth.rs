//! API keys: kept as SHA-256 hashes, presented as bearer tokens, compared
//! in constant time, and never logged.

use std::fmt;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How a stored key starts: `sha256:` and 64 hexadecimal digits.
pub const HASH_PREFIX: &str = "sha256:";

/// The stored form of `key`: `sha256:` and the hex SHA-256 of its bytes
/// (what `printf %s KEY | sha256sum` prints).
pub fn hash_key(key: &str) -> String {
    format!("{HASH_PREFIX}{}", hex(&Sha256::digest(key.as_bytes())))
}

/// The API keys a server accepts, as hashes: the keys themselves are never
/// stored or shown.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiKeys {
    hashes: Vec<[u8; 32]>,
}

/// A stored key that is not `sha256:` and 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("API key {index} is not a SHA-256 hash: expected `sha256:` and 64 hex digits (got {shown})")]
pub struct KeyFormatError {
    /// Its position in the list, from 0.
    pub index: usize,
    /// What it looked like, cut so that a key pasted by mistake is not shown.
    pub shown: String,
}

impl ApiKeys {
    /// Keys from their stored forms ([`hash_key`]).
    ///
    /// # Errors
    ///
    /// [`KeyFormatError`] for the first entry that is not a hash; a plain
    /// key is refused rather than hashed, so that none sits in a file.
    pub fn from_hashes<I, S>(hashes: I) -> Result<Self, KeyFormatError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut parsed = Vec::new();
        for (index, stored) in hashes.into_iter().enumerate() {
            let stored = stored.as_ref().trim();
            let digest = stored
                .strip_prefix(HASH_PREFIX)
                .and_then(parse_hex)
                .ok_or_else(|| KeyFormatError {
                    index,
                    shown: shown(stored),
                })?;
            parsed.push(digest);
        }
        Ok(Self { hashes: parsed })
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// The identity of `presented` when it is one of the keys: its hash,
    /// which names the key in limits and logs without revealing it.
    pub fn identify(&self, presented: &str) -> Option<KeyId> {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Every stored hash is compared, in constant time each.
        let mut found = None;
        for stored in &self.hashes {
            if bool::from(stored.ct_eq(&digest)) {
                found = Some(KeyId(*stored));
            }
        }
        found
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKeys({} key(s))", self.hashes.len())
    }
}

/// A key that was accepted, known by its hash.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; 32]);

impl KeyId {
    /// Sixteen hex digits of the key's hash: what the server stores with a
    /// key's sessions to tell whose they are. It reveals nothing of the key.
    pub fn tag(&self) -> String {
        hex(&self.0[..8])
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight hex digits of the hash tell keys apart in logs.
        write!(f, "KeyId({})", &hex(&self.0)[..8])
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut digest = [0_u8; 32];
    for (slot, pair) in digest.iter_mut().zip(text.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).ok()?;
        *slot = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(digest)
}

fn shown(stored: &str) -> String {
    let start: String = stored.chars().take(10).collect();
    format!("`{start}…`, {} characters", stored.chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashed_key_is_accepted_and_others_are_not() {
        // printf %s secret-key | sha256sum
        assert_eq!(
            hash_key("secret-key"),
            "sha256:85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa"
        );
        let keys = ApiKeys::from_hashes([hash_key("secret-key"), hash_key("other")]).unwrap_or_else(|e| panic!("{e}"));
        assert!(keys.identify("secret-key").is_some());
        assert!(keys.identify("other").is_some());
        assert_ne!(keys.identify("secret-key"), keys.identify("other"));
        assert!(keys.identify("secret-kez").is_none());
        assert!(keys.identify("").is_none());
    }

    #[test]
    fn a_plain_key_in_the_list_is_refused_without_showing_it() {
        let error = ApiKeys::from_hashes([hash_key("a"), "sk-live-0123456789abcdef".to_owned()]).err();
        let error = error.map(|e| (e.index, e.to_string()));
        assert!(
            matches!(&error, Some((1, text)) if !text.contains("0123456789abcdef")),
            "{error:?}"
        );
    }

    #[test]
    fn debug_output_shows_no_key_material() {
        let keys = ApiKeys::from_hashes([hash_key("secret-key")]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(format!("{keys:?}"), "ApiKeys(1 key(s))");
        let id = keys
            .identify("secret-key")
            .map(|id| format!("{id:?}"))
            .unwrap_or_default();
        assert_eq!(id.len(), "KeyId(12345678)".len());
    }
}
