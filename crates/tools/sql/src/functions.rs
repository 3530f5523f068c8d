//! Replacements for the SQLite string functions whose built-in cost grows
//! with the *product* of their arguments' lengths: `instr(X, Y)`,
//! `replace(X, Y, Z)`, `trim(X, Y)`, `ltrim(X, Y)`, `rtrim(X, Y)` and
//! `unhex(X, Y)`.
//!
//! SQLite checks the time limit and interrupts only between the steps of
//! its virtual machine, never inside a function call, and the built-ins
//! compare the pattern (or the character set) at every position of the
//! value: one `ltrim` of a 512 KiB value by a 256 KiB set runs for minutes,
//! `instr` and `replace` over 1 MiB values for tens of seconds, whatever
//! the time limit. The replacements give the same results (a property
//! test compares them with the built-ins) in time linear in the lengths:
//! `memmem` searches, and a set lookup per character for the trims.
//!
//! What they do not reimplement, they hand to SQLite's own function on a
//! private in-memory connection, when its worst-case work (the product of
//! the lengths) is within [`BUILT_IN_BUDGET`], and refuse otherwise, with
//! an error that says so: `unhex(X, Y)`, the text of a REAL (SQLite's own
//! formatting), a BLOB read as text in a UTF-16 database (decoded as
//! UTF-16), and trim sets of malformed UTF-8.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use memchr::memmem;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::limits::Limit;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, Error, ffi};

/// The most work, as the product of two arguments' lengths in bytes, that
/// a call may hand to SQLite's own implementation: milliseconds at most.
const BUILT_IN_BUDGET: usize = 1 << 24;

/// How many different character lengths a trim set may have for the
/// linear trim; UTF-8 has four, more come only from malformed text.
const MAX_TRIM_LENGTHS: usize = 8;

/// The length charged for a number, which SQLite turns into short text.
const NUMBER_BYTES: usize = 32;

/// A call refused because SQLite's own implementation would run too long.
#[derive(Debug, thiserror::Error)]
#[error(
    "{call} is too expensive on arguments this long: SQLite's implementation would make about {work} byte \
     comparisons in one step, more than the {BUILT_IN_BUDGET} allowed; shorten the arguments, e.g. with substr()"
)]
struct TooExpensive {
    call: &'static str,
    work: usize,
}

/// Which ends a trim works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    Left,
    Right,
    Both,
}

/// A function's result. Text is bytes: SQLite's text need not be UTF-8.
#[derive(Debug, Clone, PartialEq)]
enum Output {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl From<ValueRef<'_>> for Output {
    fn from(value: ValueRef<'_>) -> Self {
        match value {
            ValueRef::Null => Self::Null,
            ValueRef::Integer(integer) => Self::Integer(integer),
            ValueRef::Real(real) => Self::Real(real),
            ValueRef::Text(text) => Self::Text(text.to_vec()),
            ValueRef::Blob(blob) => Self::Blob(blob.to_vec()),
        }
    }
}

impl ToSql for Output {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Integer(integer) => ValueRef::Integer(*integer),
            Self::Real(real) => ValueRef::Real(*real),
            Self::Text(text) => ValueRef::Text(text),
            Self::Blob(blob) => ValueRef::Blob(blob),
        }))
    }
}

/// What the replacements share on one connection.
struct Functions {
    /// The database's text encoding, as `PRAGMA encoding` names it.
    encoding: String,
    /// The connection's value length limit.
    max_length: usize,
    /// The private connection for SQLite's own implementations, opened on
    /// first use.
    built_in: Mutex<Option<Connection>>,
}

/// Replaces the functions on `connection`, whose values are limited to
/// `max_length` bytes.
pub(crate) fn install(connection: &Connection, max_length: usize) -> rusqlite::Result<()> {
    let encoding: String = connection.pragma_query_value(None, "encoding", |row| row.get(0))?;
    let functions = Arc::new(Functions {
        encoding,
        max_length,
        built_in: Mutex::new(None),
    });
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    let shared = Arc::clone(&functions);
    connection.create_scalar_function("instr", 2, flags, move |context| shared.instr(context))?;
    let shared = Arc::clone(&functions);
    connection.create_scalar_function("replace", 3, flags, move |context| shared.replace(context))?;
    for (name, ends) in [("trim", Ends::Both), ("ltrim", Ends::Left), ("rtrim", Ends::Right)] {
        let shared = Arc::clone(&functions);
        connection.create_scalar_function(name, 2, flags, move |context| shared.trim(context, name, ends))?;
    }
    connection.create_scalar_function("unhex", 2, flags, move |context| functions.unhex(context))?;
    Ok(())
}

impl Functions {
    /// `instr(X, Y)`: where `Y` first occurs in `X`, counted in characters
    /// (in bytes when both are BLOBs), from 1; 0 when it does not occur.
    fn instr(&self, context: &Context<'_>) -> rusqlite::Result<Output> {
        let (haystack, needle) = (context.get_raw(0), context.get_raw(1));
        if matches!(haystack, ValueRef::Null) || matches!(needle, ValueRef::Null) {
            return Ok(Output::Null);
        }
        if let (ValueRef::Blob(haystack), ValueRef::Blob(needle)) = (haystack, needle) {
            return Ok(Output::Integer(position(haystack, needle, false)));
        }
        if self.decodes_blobs(&[haystack, needle]) {
            return self.built_in(context, "instr", "instr(X, Y)", work(haystack, needle));
        }
        let (Some(haystack), Some(needle)) = (self.text(haystack)?, self.text(needle)?) else {
            return Ok(Output::Null);
        };
        Ok(Output::Integer(position(&haystack, &needle, true)))
    }

    /// `replace(X, Y, Z)`: `X` with every occurrence of `Y` replaced by `Z`,
    /// left to right, byte for byte.
    fn replace(&self, context: &Context<'_>) -> rusqlite::Result<Output> {
        let (value, pattern, replacement) = (context.get_raw(0), context.get_raw(1), context.get_raw(2));
        if self.decodes_blobs(&[value, pattern, replacement]) {
            return self.built_in(context, "replace", "replace(X, Y, Z)", work(value, pattern));
        }
        let Some(value) = self.text(value)? else {
            return Ok(Output::Null);
        };
        let Some(pattern) = self.text(pattern)? else {
            return Ok(Output::Null);
        };
        // SQLite reads the pattern up to its first NUL: an empty pattern.
        if pattern.first().is_none_or(|&byte| byte == 0) {
            return Ok(Output::Text(value.into_owned()));
        }
        let Some(replacement) = self.text(replacement)? else {
            return Ok(Output::Null);
        };
        let finder = memmem::Finder::new(&pattern);
        let count = finder.find_iter(&value).count();
        let length = (value.len() - count * pattern.len()).saturating_add(count.saturating_mul(replacement.len()));
        if length > self.max_length {
            return Err(too_big());
        }
        let mut output = Vec::with_capacity(length);
        let mut copied = 0;
        for at in finder.find_iter(&value) {
            output.extend_from_slice(&value[copied..at]);
            output.extend_from_slice(&replacement);
            copied = at + pattern.len();
        }
        output.extend_from_slice(&value[copied..]);
        Ok(Output::Text(output))
    }

    /// `trim(X, Y)`, `ltrim(X, Y)`, `rtrim(X, Y)`: `X` without the
    /// characters of `Y` at its start, end or both.
    fn trim(&self, context: &Context<'_>, name: &'static str, ends: Ends) -> rusqlite::Result<Output> {
        let call = match ends {
            Ends::Both => "trim(X, Y)",
            Ends::Left => "ltrim(X, Y)",
            Ends::Right => "rtrim(X, Y)",
        };
        let (value, set) = (context.get_raw(0), context.get_raw(1));
        if self.decodes_blobs(&[value, set]) {
            return self.built_in(context, name, call, work(value, set));
        }
        let Some(value) = self.text(value)? else {
            return Ok(Output::Null);
        };
        let Some(set) = self.text(set)? else {
            return Ok(Output::Null);
        };
        // SQLite reads the set up to its first NUL.
        let set = &set[..set.iter().position(|&byte| byte == 0).unwrap_or(set.len())];
        match trimmed(&value, set, ends) {
            Some(kept) => Ok(Output::Text(value[kept].to_vec())),
            None => self.built_in(context, name, call, value.len().saturating_mul(set.len())),
        }
    }

    /// `unhex(X, Y)`: SQLite's own, whose work is the number of non-hex
    /// characters in `X` times the length of `Y`, when that is small.
    fn unhex(&self, context: &Context<'_>) -> rusqlite::Result<Output> {
        let (hex, allowed) = (context.get_raw(0), context.get_raw(1));
        let others = match hex {
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                bytes.iter().filter(|byte| !byte.is_ascii_hexdigit()).count()
            }
            other => size(other),
        };
        self.built_in(context, "unhex", "unhex(X, Y)", others.saturating_mul(size(allowed)))
    }

    /// Whether reading one of `values` as text needs SQLite: in a UTF-16
    /// database, a BLOB read as text is decoded as UTF-16.
    fn decodes_blobs(&self, values: &[ValueRef<'_>]) -> bool {
        self.encoding != "UTF-8" && values.iter().any(|value| matches!(value, ValueRef::Blob(_)))
    }

    /// `value` as text, as `sqlite3_value_text` gives it; `None` for NULL.
    /// Not for a BLOB in a UTF-16 database (see [`Self::decodes_blobs`]).
    fn text<'a>(&self, value: ValueRef<'a>) -> rusqlite::Result<Option<Cow<'a, [u8]>>> {
        Ok(match value {
            ValueRef::Null => None,
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Some(Cow::Borrowed(bytes)),
            ValueRef::Integer(integer) => Some(Cow::Owned(integer.to_string().into_bytes())),
            ValueRef::Real(_) => self.with_built_in(|connection| {
                connection
                    .prepare_cached("SELECT CAST(?1 AS TEXT)")?
                    .query_row([ToSqlOutput::Borrowed(value)], |row| match row.get_ref(0)? {
                        ValueRef::Text(text) => Ok(Some(Cow::Owned(text.to_vec()))),
                        _ => Ok(None),
                    })
            })?,
        })
    }

    /// Runs SQLite's own `name` on the call's arguments, if its worst-case
    /// `work` is within the budget; refuses the call otherwise.
    fn built_in(&self, context: &Context<'_>, name: &str, call: &'static str, work: usize) -> rusqlite::Result<Output> {
        if work > BUILT_IN_BUDGET {
            return Err(Error::UserFunctionError(Box::new(TooExpensive { call, work })));
        }
        let arguments: Vec<ToSqlOutput<'_>> = (0..context.len())
            .map(|index| ToSqlOutput::Borrowed(context.get_raw(index)))
            .collect();
        let placeholders: Vec<String> = (1..=arguments.len()).map(|index| format!("?{index}")).collect();
        let sql = format!("SELECT {name}({})", placeholders.join(", "));
        self.with_built_in(|connection| {
            connection
                .prepare_cached(&sql)?
                .query_row(rusqlite::params_from_iter(&arguments), |row| {
                    Ok(Output::from(row.get_ref(0)?))
                })
        })
    }

    /// Runs `work` on the private connection, opening it on first use with
    /// the database's encoding and value length limit.
    fn with_built_in<T>(&self, work: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        let mut slot = self.built_in.lock().unwrap_or_else(PoisonError::into_inner);
        let connection = if let Some(connection) = slot.as_mut() {
            connection
        } else {
            let connection = Connection::open_in_memory()?;
            connection.pragma_update(None, "encoding", &self.encoding)?;
            connection.set_limit(
                Limit::SQLITE_LIMIT_LENGTH,
                i32::try_from(self.max_length).unwrap_or(i32::MAX),
            )?;
            slot.insert(connection)
        };
        work(connection)
    }
}

/// SQLite's "string or blob too big" error.
fn too_big() -> Error {
    Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_TOOBIG),
        Some("string or blob too big".to_owned()),
    )
}

/// About how many bytes `value` has as text.
fn size(value: ValueRef<'_>) -> usize {
    match value {
        ValueRef::Null => 0,
        ValueRef::Integer(_) | ValueRef::Real(_) => NUMBER_BYTES,
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => bytes.len(),
    }
}

/// The worst-case work of a built-in that compares `pattern` at every
/// position of `value`.
fn work(value: ValueRef<'_>, pattern: ValueRef<'_>) -> usize {
    size(value).saturating_mul(size(pattern))
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// `instr`'s answer: 1 + how many characters (bytes, unless `text`) come
/// before the first occurrence of `needle` in `haystack`; 0 if there is
/// none; 1 for an empty needle. Like SQLite, in text a match counts only
/// at the start of the value or where a byte is not a UTF-8 continuation
/// byte.
fn position(haystack: &[u8], needle: &[u8], text: bool) -> i64 {
    let Some(&first) = needle.first() else {
        return 1;
    };
    let found = if text && is_continuation(first) {
        haystack.starts_with(needle).then_some(0)
    } else {
        memmem::find(haystack, needle)
    };
    let before = match found {
        None => return 0,
        Some(0) => 0,
        Some(at) if text => 1 + haystack[1..at].iter().filter(|&&byte| !is_continuation(byte)).count(),
        Some(at) => at,
    };
    i64::try_from(before).map_or(i64::MAX, |before| before + 1)
}

/// `set` split into characters as SQLite splits it: a byte of 0xC0 or
/// more with the continuation bytes after it, or any other single byte.
fn characters(set: &[u8]) -> Vec<&[u8]> {
    let mut characters = Vec::new();
    let mut at = 0;
    while at < set.len() {
        let start = at;
        at += 1;
        if set[start] >= 0xC0 {
            while at < set.len() && is_continuation(set[at]) {
                at += 1;
            }
        }
        characters.push(&set[start..at]);
    }
    characters
}

/// The range of `value` that trimming the characters of `set` from `ends`
/// keeps, as SQLite's trim computes it: at each step it removes the first
/// character of `set`, in order, that matches. `None` when `set` has
/// characters of too many different lengths (malformed UTF-8 only).
fn trimmed(value: &[u8], set: &[u8], ends: Ends) -> Option<Range<usize>> {
    let characters = characters(set);
    let (mut start, mut end) = (0, value.len());
    let (left, right) = (ends != Ends::Right, ends != Ends::Left);
    if characters.iter().all(|character| character.len() == 1) {
        let mut table = [false; 256];
        for character in &characters {
            table[usize::from(character[0])] = true;
        }
        while left && start < end && table[usize::from(value[start])] {
            start += 1;
        }
        while right && end > start && table[usize::from(value[end - 1])] {
            end -= 1;
        }
        return Some(start..end);
    }
    let mut lengths: Vec<usize> = characters.iter().map(|character| character.len()).collect();
    lengths.sort_unstable();
    lengths.dedup();
    if lengths.len() > MAX_TRIM_LENGTHS {
        return None;
    }
    let mut order: HashMap<&[u8], usize> = HashMap::new();
    for (index, character) in characters.iter().enumerate() {
        order.entry(character).or_insert(index);
    }
    // The length of the first character of `set` that `piece` matches.
    let first_match = |piece: &dyn Fn(usize) -> Option<Range<usize>>| {
        lengths
            .iter()
            .filter_map(|&length| {
                let range = piece(length)?;
                order.get(&value[range]).map(|&index| (index, length))
            })
            .min()
            .map(|(_, length)| length)
    };
    if left {
        while let Some(length) = first_match(&|length| (end - start >= length).then(|| start..start + length)) {
            start += length;
        }
    }
    if right {
        while let Some(length) = first_match(&|length| (end - start >= length).then(|| end - length..end)) {
            end -= length;
        }
    }
    Some(start..end)
}

#[cfg(test)]
#[path = "functions_tests.rs"]
mod tests;
