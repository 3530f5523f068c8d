//! [`PromptSource`]: anything that loads templates by name, and
//! [`LayeredSource`], which asks several sources in turn.

use std::sync::Arc;

use crate::error::PromptError;
use crate::template::PromptTemplate;

/// Loads parsed templates by name.
///
/// Implemented by [`PromptStore`](crate::PromptStore) (files),
/// [`Builtins`](crate::builtin::Builtins) (embedded templates) and
/// [`LayeredSource`] (the first of several that has the name).
pub trait PromptSource: Send + Sync {
    /// The template called `name`.
    ///
    /// A source that does not have it returns [`PromptError::NotFound`]
    /// naming where it looked.
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError>;
}

impl<T: PromptSource + ?Sized> PromptSource for Arc<T> {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        (**self).load(name)
    }
}

impl<T: PromptSource + ?Sized> PromptSource for Box<T> {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        (**self).load(name)
    }
}

impl<T: PromptSource + ?Sized> PromptSource for &T {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        (**self).load(name)
    }
}

/// Several sources asked in order; the first that has the name wins.
///
/// Only "not found" falls through to the next source: a malformed template
/// or an unreadable file is reported at once, so a broken override never
/// silently falls back to a default. When no source has the name, the error
/// lists every place searched.
///
/// ```
/// use agent_prompts::{LayeredSource, PromptSource, builtin};
///
/// let source = LayeredSource::new().with(builtin::Builtins);
/// let template = source.load(builtin::FORCED_FINAL_ANSWER)?;
/// assert!(template.required_variables().is_empty());
/// # Ok::<(), agent_prompts::PromptError>(())
/// ```
#[derive(Clone, Default)]
pub struct LayeredSource {
    layers: Vec<Arc<dyn PromptSource>>,
}

impl LayeredSource {
    /// No layers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a layer, asked after the ones already added.
    pub fn with(mut self, source: impl PromptSource + 'static) -> Self {
        self.layers.push(Arc::new(source));
        self
    }

    /// Adds a shared layer, asked after the ones already added.
    pub fn with_shared(mut self, source: Arc<dyn PromptSource>) -> Self {
        self.layers.push(source);
        self
    }

    /// How many layers there are.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl std::fmt::Debug for LayeredSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayeredSource")
            .field("layers", &self.layers.len())
            .finish()
    }
}

impl PromptSource for LayeredSource {
    fn load(&self, name: &str) -> Result<Arc<PromptTemplate>, PromptError> {
        let mut searched = Vec::new();
        for layer in &self.layers {
            match layer.load(name) {
                Ok(template) => return Ok(template),
                Err(PromptError::NotFound { searched: more, .. }) => searched.extend(more),
                Err(other) => return Err(other),
            }
        }
        Err(PromptError::NotFound {
            name: name.to_owned(),
            searched,
        })
    }
}
