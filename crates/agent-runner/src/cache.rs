//! [`ToolResultCache`]: successful results of idempotent tools, reused by
//! later calls with the same arguments.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agent_core::{ToolCall, ToolContext};
use serde_json::{Map, Value};

use crate::history::{call_key, canonical_json};

/// Results of tools that declare a [`CachePolicy`](agent_core::CachePolicy),
/// so that a repeated call with canonically equal arguments (same name, same
/// values whatever the key order or whitespace) is answered without running
/// the tool.
///
/// - Every run has its own cache, empty at the start (a resumed run too). To
///   share one between runs, e.g. the turns of one chat session, pass it to
///   [`AgentBuilder::tool_cache`](crate::AgentBuilder::tool_cache); clones
///   share the same entries.
/// - Only successful results are stored; a failed call runs again next time.
/// - An entry expires `ttl` after the call that produced it (the tool's
///   policy when it ran); an expired entry is never served.
/// - Entries are scoped to the caller: the key holds the context's user id,
///   roles and attributes, so a cache shared between callers never answers
///   one with a result computed for another (and role checks made when the
///   tool ran still hold).
/// - At most `max_entries` entries ([`DEFAULT_MAX_ENTRIES`](Self::DEFAULT_MAX_ENTRIES)
///   unless set): when full, expired entries are dropped first, then the
///   oldest. Results are stored as the model received them, before
///   `max_tool_result_bytes` cuts them.
///
/// The cache lives outside the serialisable [`RunState`](crate::RunState):
/// a saved run does not carry it.
#[derive(Clone)]
pub struct ToolResultCache {
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    max_entries: usize,
}

#[derive(Debug)]
struct Entry {
    content: String,
    stored: Instant,
    expires: Instant,
}

impl ToolResultCache {
    /// How many entries a cache holds unless told otherwise.
    pub const DEFAULT_MAX_ENTRIES: usize = 256;

    /// An empty cache of [`DEFAULT_MAX_ENTRIES`](Self::DEFAULT_MAX_ENTRIES).
    pub fn new() -> Self {
        Self::with_max_entries(Self::DEFAULT_MAX_ENTRIES)
    }

    /// An empty cache holding at most `max_entries` results (0 stores
    /// nothing, which turns caching off).
    pub fn with_max_entries(max_entries: usize) -> Self {
        Self {
            entries: Arc::new(Mutex::new(HashMap::new())),
            max_entries,
        }
    }

    /// The most entries it holds.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Entries stored, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Drops every entry.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The stored result for `key`, unless it has expired (an expired entry
    /// is dropped).
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        self.get_at(key, Instant::now())
    }

    /// Stores a successful result for `ttl`.
    pub(crate) fn insert(&self, key: String, content: String, ttl: Duration) {
        self.insert_at(key, content, ttl, Instant::now());
    }

    fn get_at(&self, key: &str, now: Instant) -> Option<String> {
        let mut entries = self.lock();
        let entry = entries.get(key)?;
        if now < entry.expires {
            return Some(entry.content.clone());
        }
        entries.remove(key);
        None
    }

    fn insert_at(&self, key: String, content: String, ttl: Duration, now: Instant) {
        if self.max_entries == 0 {
            return;
        }
        // A TTL too large for the clock is capped at about a century.
        let Some(expires) = now
            .checked_add(ttl)
            .or_else(|| now.checked_add(Duration::from_secs(u64::from(u32::MAX))))
        else {
            return;
        };
        let mut entries = self.lock();
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            entries.retain(|_, entry| now < entry.expires);
            if entries.len() >= self.max_entries {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.stored)
                    .map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    entries.remove(&oldest);
                }
            }
        }
        entries.insert(
            key,
            Entry {
                content,
                stored: now,
                expires,
            },
        );
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        // No code that can panic runs under the lock; recover if it ever did.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for ToolResultCache {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolResultCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolResultCache")
            .field("entries", &self.len())
            .field("max_entries", &self.max_entries)
            .finish()
    }
}

/// The part of a cache key that says who is asking: the context's user id,
/// roles and attributes, canonical JSON.
pub(crate) fn caller_scope(context: &ToolContext) -> String {
    let mut scope = Map::new();
    scope.insert(
        "user".to_owned(),
        context.user_id.clone().map_or(Value::Null, Value::String),
    );
    scope.insert(
        "roles".to_owned(),
        context.roles.iter().cloned().map(Value::String).collect(),
    );
    scope.insert(
        "attributes".to_owned(),
        Value::Object(context.attributes.clone().into_iter().collect()),
    );
    canonical_json(&Value::Object(scope))
}

/// The cache key of `call` made by the caller of `scope`: the scope, the
/// tool name and the canonical arguments.
pub(crate) fn cache_key(scope: &str, call: &ToolCall) -> String {
    let mut key = String::with_capacity(scope.len() + call.name.len() + 32);
    key.push_str(scope);
    key.push('\u{0}');
    key.push_str(&call_key(call));
    key
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TTL: Duration = Duration::from_secs(10);

    #[test]
    fn entries_expire_after_their_ttl() {
        let cache = ToolResultCache::new();
        let start = Instant::now();
        cache.insert_at("k".into(), "v".into(), TTL, start);
        assert_eq!(cache.get_at("k", start + TTL / 2).as_deref(), Some("v"));
        assert_eq!(cache.get_at("k", start + TTL), None);
        assert!(cache.is_empty(), "an expired entry is dropped when looked up");
    }

    #[test]
    fn a_full_cache_drops_expired_entries_then_the_oldest() {
        let cache = ToolResultCache::with_max_entries(2);
        let start = Instant::now();
        cache.insert_at("old".into(), "1".into(), TTL, start);
        cache.insert_at("new".into(), "2".into(), TTL, start + Duration::from_secs(1));
        cache.insert_at("third".into(), "3".into(), TTL, start + Duration::from_secs(2));
        assert_eq!(cache.len(), 2);
        let now = start + Duration::from_secs(3);
        assert_eq!(cache.get_at("old", now), None);
        assert_eq!(cache.get_at("new", now).as_deref(), Some("2"));

        // Expired entries go before live ones, however old.
        let cache = ToolResultCache::with_max_entries(2);
        cache.insert_at("live".into(), "1".into(), TTL, start);
        cache.insert_at(
            "short".into(),
            "2".into(),
            Duration::from_secs(1),
            start + Duration::from_secs(1),
        );
        cache.insert_at("third".into(), "3".into(), TTL, start + Duration::from_secs(5));
        let now = start + Duration::from_secs(6);
        assert_eq!(cache.get_at("live", now).as_deref(), Some("1"));
        assert_eq!(cache.get_at("third", now).as_deref(), Some("3"));
    }

    #[test]
    fn zero_entries_store_nothing_and_clones_share_entries() {
        let off = ToolResultCache::with_max_entries(0);
        off.insert("k".into(), "v".into(), TTL);
        assert!(off.is_empty());
        let cache = ToolResultCache::new();
        cache.clone().insert("k".into(), "v".into(), TTL);
        assert_eq!(cache.get("k").as_deref(), Some("v"));
        cache.clear();
        assert!(cache.is_empty());
    }

    #[test]
    fn keys_ignore_key_order_but_not_values_tools_or_callers() {
        let scope = caller_scope(&ToolContext::new());
        let key = |name: &str, arguments| cache_key(&scope, &ToolCall::new("id", name, arguments));
        assert_eq!(key("t", json!({"a": 1, "b": 2})), key("t", json!({"b": 2, "a": 1})));
        assert_ne!(key("t", json!({"a": 1})), key("t", json!({"a": 2})));
        assert_ne!(key("t", json!({"a": 1})), key("u", json!({"a": 1})));

        let call = ToolCall::new("id", "t", json!({}));
        let alice = caller_scope(&ToolContext::new().with_user("alice").with_role("admin"));
        let bob = caller_scope(&ToolContext::new().with_user("bob").with_role("admin"));
        let alice_user = caller_scope(&ToolContext::new().with_user("alice"));
        assert_ne!(cache_key(&alice, &call), cache_key(&bob, &call));
        assert_ne!(cache_key(&alice, &call), cache_key(&alice_user, &call));
        assert_eq!(
            caller_scope(&ToolContext::new().with_attribute("x", 1).with_attribute("a", 2)),
            caller_scope(&ToolContext::new().with_attribute("a", 2).with_attribute("x", 1)),
        );
    }
}
