//! Token usage, normalised across providers.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens used by one or more model calls.
///
/// Normalised: `input_tokens` counts every prompt token, cached or not;
/// `cache_read_tokens` and `cache_write_tokens` say how many of them were read
/// from or written to a prompt cache. `reasoning_tokens` are part of
/// `output_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens, including reasoning tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens served from a cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to a cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Generated tokens spent on hidden reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Usage with only input and output tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(mut self, rhs: Usage) -> Usage {
        self += rhs;
        self
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cache_read_tokens += rhs.cache_read_tokens;
        self.cache_write_tokens += rhs.cache_write_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_field_by_field() {
        let a = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 4,
            cache_write_tokens: 1,
            reasoning_tokens: 2,
        };
        let total: Usage = [a, a, Usage::new(1, 1)].into_iter().sum();
        assert_eq!(total.input_tokens, 21);
        assert_eq!(total.output_tokens, 11);
        assert_eq!(total.cache_read_tokens, 8);
        assert_eq!(total.cache_write_tokens, 2);
        assert_eq!(total.reasoning_tokens, 4);
        assert_eq!(total.total_tokens(), 32);
    }
}
