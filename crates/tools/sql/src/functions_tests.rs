//! The replacements against SQLite's own functions, on random values of
//! every type, including text that is not valid UTF-8, in UTF-8 and UTF-16
//! databases.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use proptest::prelude::*;
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

use super::{Ends, install, position, trimmed};

/// Pieces random values are made of: ASCII, multi-byte characters, stray
/// lead and continuation bytes, NUL, hex digits.
const PIECES: &[&[u8]] = &[
    b"a",
    b"b",
    b" ",
    b"ab",
    b"x",
    "é".as_bytes(),
    "€".as_bytes(),
    "😀".as_bytes(),
    b"\xC3",
    b"\xA9",
    b"\x80",
    b"\xFF",
    b"\xE2\x82",
    b"\x00",
    b"1",
    b"f",
    b"0",
    b"-",
];

/// A value to bind, of any SQLite type.
#[derive(Debug, Clone)]
enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Value {
    fn bind(&self) -> ToSqlOutput<'_> {
        ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Integer(integer) => ValueRef::Integer(*integer),
            Self::Real(real) => ValueRef::Real(*real),
            Self::Text(text) => ValueRef::Text(text),
            Self::Blob(blob) => ValueRef::Blob(blob),
        })
    }
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(PIECES), 0..10).prop_map(|pieces| pieces.concat())
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => (-120_i64..120).prop_map(Value::Integer),
        1 => prop::sample::select(&[0.5, -1.25, 10.0, 1e20, 3.0e-7, 120.0][..]).prop_map(Value::Real),
        6 => bytes().prop_map(Value::Text),
        3 => bytes().prop_map(Value::Blob),
    ]
}

/// A result, comparable whatever its type.
#[derive(Debug, PartialEq)]
enum Seen {
    Null,
    Integer(i64),
    Real(u64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

fn call(connection: &Connection, sql: &str, arguments: &[Value]) -> Result<Seen, String> {
    let parameters: Vec<ToSqlOutput<'_>> = arguments.iter().map(Value::bind).collect();
    connection
        .prepare_cached(sql)
        .and_then(|mut statement| {
            statement.query_row(rusqlite::params_from_iter(&parameters), |row| {
                Ok(match row.get_ref(0)? {
                    ValueRef::Null => Seen::Null,
                    ValueRef::Integer(integer) => Seen::Integer(integer),
                    ValueRef::Real(real) => Seen::Real(real.to_bits()),
                    ValueRef::Text(text) => Seen::Text(text.to_vec()),
                    ValueRef::Blob(blob) => Seen::Blob(blob.to_vec()),
                })
            })
        })
        .map_err(|error| error.to_string())
}

/// A plain connection and one with the replacements, both in `encoding`.
fn pair(encoding: &str) -> (Connection, Connection) {
    let open = || {
        let connection = Connection::open_in_memory().unwrap();
        connection.pragma_update(None, "encoding", encoding).unwrap();
        connection
    };
    let replaced = open();
    install(&replaced, 1 << 20).unwrap();
    (open(), replaced)
}

const CALLS: &[&str] = &[
    "SELECT instr(?1, ?2)",
    "SELECT replace(?1, ?2, ?3)",
    "SELECT trim(?1, ?2)",
    "SELECT ltrim(?1, ?2)",
    "SELECT rtrim(?1, ?2)",
    "SELECT unhex(?1, ?2)",
];

fn same_as_built_in(encoding: &str) {
    let (plain, replaced) = pair(encoding);
    let config = ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(sql in prop::sample::select(CALLS), arguments in prop::collection::vec(value(), 3))| {
        let arguments = &arguments[..sql.matches('?').count()];
        prop_assert_eq!(call(&replaced, sql, arguments), call(&plain, sql, arguments), "{} {:?}", sql, arguments);
    });
}

#[test]
fn replacements_match_the_built_ins_in_utf8() {
    same_as_built_in("UTF-8");
}

#[test]
fn replacements_match_the_built_ins_in_utf16() {
    same_as_built_in("UTF-16le");
}

#[test]
fn instr_counts_characters_from_one() {
    assert_eq!(position(b"hello", b"l", true), 3);
    assert_eq!(position("héllo".as_bytes(), b"l", true), 3);
    assert_eq!(position("héllo".as_bytes(), b"l", false), 4);
    assert_eq!(position(b"hello", b"", true), 1);
    assert_eq!(position(b"hello", b"z", true), 0);
    assert_eq!(position(b"", b"z", true), 0);
    // A needle starting with a continuation byte matches only at the start.
    assert_eq!(position(b"\xA9a\xA9", b"\xA9", true), 1);
    assert_eq!(position("é".as_bytes(), b"\xA9", true), 0);
}

#[test]
fn trims_take_the_first_matching_character_of_the_set() {
    assert_eq!(trimmed(b"  ab  ", b" ", Ends::Both), Some(2..4));
    assert_eq!(trimmed(b"  ab  ", b" ", Ends::Left), Some(2..6));
    assert_eq!(trimmed(b"  ab  ", b" ", Ends::Right), Some(0..4));
    assert_eq!(trimmed(b"abc", b"", Ends::Both), Some(0..3));
    assert_eq!(trimmed("ééaé".as_bytes(), "é".as_bytes(), Ends::Both), Some(4..5));
    // "\xC3" alone (before a non-continuation byte) and "é" both match at
    // the start of "é": whichever the set lists first is removed.
    assert_eq!(trimmed("éx".as_bytes(), b"\xC3 \xC3\xA9", Ends::Left), Some(1..3));
    assert_eq!(trimmed("éx".as_bytes(), b"\xC3\xA9\xC3 ", Ends::Left), Some(2..3));
}

#[test]
fn long_arguments_take_linear_time() {
    let (_, replaced) = pair("UTF-8");
    let a = |count: usize| Value::Text(vec![b'a'; count]);
    let with = |count: usize, last: u8| {
        let mut text = vec![b'a'; count];
        text.push(last);
        Value::Text(text)
    };
    let started = Instant::now();
    assert_eq!(
        call(&replaced, "SELECT instr(?1, ?2)", &[a(1 << 20), with(1 << 19, b'b')]),
        Ok(Seen::Integer(0))
    );
    let set = Value::Text([vec![b'b'; 1 << 18], vec![b'a']].concat());
    assert_eq!(
        call(&replaced, "SELECT length(ltrim(?1, ?2))", &[a(1 << 19), set]),
        Ok(Seen::Integer(0))
    );
    assert_eq!(
        call(
            &replaced,
            "SELECT length(replace(?1, ?2, 'x'))",
            &[a(1 << 20), with(1 << 19, b'b')]
        ),
        Ok(Seen::Integer(1 << 20))
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let error = call(&replaced, "SELECT replace(?1, 'a', ?2)", &[a(1 << 10), a(1 << 11)]).unwrap_err();
    assert!(error.contains("string or blob too big"), "{error}");
}
