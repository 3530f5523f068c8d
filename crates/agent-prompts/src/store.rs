//! [`PromptStore`]: templates loaded from a directory and cached.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use crate::builtin::Builtins;
use crate::error::{PromptError, SearchLocation};
use crate::source::{LayeredSource, PromptSource};
use crate::template::PromptTemplate;

/// File extensions tried, in order, for a template name.
pub const EXTENSIONS: [&str; 2] = ["md", "txt"];

/// Templates read from a directory: `NAME.md`, else `NAME.txt`.
///
/// Each template is read and parsed once, on first use, then shared from a
/// thread-safe cache. Names may contain `/` for subdirectories
/// (`agents/travel`), but never `..` or an absolute path.
///
/// ```no_run
/// use agent_prompts::{PromptSource, PromptStore};
///
/// let store = PromptStore::new("prompts");
/// let system = store.load("system")?.render([("agent_name", "Ada")])?;
/// # Ok::<(), agent_prompts::PromptError>(())
/// ```
#[derive(Debug)]
pub struct PromptStore {
    directory: PathBuf,
    cache: RwLock<HashMap<String, Arc<PromptTemplate>>>,
}

impl PromptStore {
    /// A store reading from `directory` (not touched until the first load).
    pub fn new(directory: impl Into<PathBuf>) -> Self {
        Self {
            directory: directory.into(),
            cache: RwLock::new(HashMap::new()),
        }
    }

    /// A [`LayeredSource`]: this directory first, the built-in templates as fallback.
    pub fn with_builtin_fallback(directory: impl Into<PathBuf>) -> LayeredSource {
        LayeredSource::new().with(Self::new(directory)).with(Builtins)
    }

    /// The directory templates are read from.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// How many templates are cached.
    pub fn cached_len(&self) -> usize {
        self.cache.read().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Forgets every cached template, so the next loads read the files again.
    pub fn clear_cache(&self) {
        self.cache.write().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn read(&self, name: &str) -> Result<PromptTemplate, PromptError> {
        let mut tried = Vec::with_capacity(EXTENSIONS.len());
        for extension in EXTENSIONS {
            let file_name = format!("{name}.{extension}");
            let path = self.directory.join(&file_name);
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    return PromptTemplate::parse(text).map_err(|e| e.with_origin(format!("`{}`", path.display())));
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => tried.push(file_name),
                Err(error) => {
                    return Err(PromptError::Io {
                        path,
                        source: Arc::new(error),
                    });
                }
            }
        }
        Err(PromptError::NotFound {
            name: name.to_owned(),
            searched: vec![SearchLocation::Directory {
                path: self.directory.clone(),
                tried,
            }],
        })
    }
}

/// Whether `name` is a safe relative template name.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('\0')
        && !name.contains('\\')
        && name
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
        && Path::new(name).components().all(|c| matches!(c, Component::Normal(_)))
}

impl PromptSource for PromptStore {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        if !is_valid_name(name) {
            return Err(PromptError::InvalidName { name: name.to_owned() });
        }
        if let Some(template) = self.cache.read().unwrap_or_else(PoisonError::into_inner).get(name) {
            return Ok(Arc::clone(template));
        }
        // Read outside the lock; if two threads race, the first insert wins
        // and both get the same shared template.
        let template = Arc::new(self.read(name)?);
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(cache.entry(name.to_owned()).or_insert(template)))
    }
}

#[cfg(test)]
mod tests {
    use super::is_valid_name;

    #[test]
    fn names_must_be_relative_and_plain() {
        assert!(is_valid_name("greeting"));
        assert!(is_valid_name("agents/travel"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("../secret"));
        assert!(!is_valid_name("/etc/passwd"));
        assert!(!is_valid_name("a/./b"));
        assert!(!is_valid_name("a\\b"));
    }
}
