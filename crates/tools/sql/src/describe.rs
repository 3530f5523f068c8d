//! `describe_database`: tables and views, their columns and types, primary
//! and foreign keys, and row counts, read through the same guarded
//! connection as any query.

use agent_core::ToolError;
use serde::Serialize;

use crate::guard::Guarded;
use crate::query::explain;

/// What `describe_database` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatabaseDescription {
    /// Tables and views, by name.
    pub tables: Vec<TableDescription>,
}

/// One table or view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableDescription {
    /// Its name.
    pub name: String,
    /// `table` or `view`.
    pub kind: String,
    /// How many rows it has (tables only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_count: Option<u64>,
    /// The primary key's columns, in key order; empty when there is none.
    pub primary_key: Vec<String>,
    /// The columns, in order.
    pub columns: Vec<ColumnDescription>,
    /// References to other tables.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign_keys: Vec<ForeignKey>,
}

/// One column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnDescription {
    /// Its name.
    pub name: String,
    /// The declared type (`INTEGER`, `TEXT`, `REAL`, `BLOB`, `NUMERIC`, ...),
    /// empty when none was declared.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// Whether it is part of the primary key.
    pub primary_key: bool,
    /// The default value's SQL, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A foreign key: `columns` of this table reference `references_columns`
/// of `references_table`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForeignKey {
    /// The referencing columns.
    pub columns: Vec<String>,
    /// The referenced table.
    pub references_table: String,
    /// The referenced columns (empty: the referenced table's primary key).
    pub references_columns: Vec<String>,
}

/// Names and kinds of the user's tables and views, by name.
pub(crate) fn list_tables(guarded: &Guarded) -> Result<Vec<(String, String)>, rusqlite::Error> {
    let mut statement = guarded.connection.prepare(
        "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' \
         ESCAPE '\\' ORDER BY name",
    )?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

/// Describes every table and view.
pub(crate) fn describe(guarded: &Guarded, timeout_ms: u64) -> Result<DatabaseDescription, ToolError> {
    let failed = |error: rusqlite::Error| explain(guarded, &error, timeout_ms);
    let mut tables = Vec::new();
    for (name, kind) in list_tables(guarded).map_err(failed)? {
        let mut columns = Vec::new();
        let mut key: Vec<(i64, String)> = Vec::new();
        let mut statement = guarded
            .connection
            .prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1) ORDER BY cid")
            .map_err(failed)?;
        let mut rows = statement.query([&name]).map_err(failed)?;
        while let Some(row) = rows.next().map_err(failed)? {
            let column: String = row.get(0).map_err(failed)?;
            let position: i64 = row.get(4).map_err(failed)?;
            if position > 0 {
                key.push((position, column.clone()));
            }
            columns.push(ColumnDescription {
                data_type: row.get::<_, Option<String>>(1).map_err(failed)?.unwrap_or_default(),
                nullable: row.get::<_, i64>(2).map_err(failed)? == 0 && position == 0,
                primary_key: position > 0,
                default: row.get(3).map_err(failed)?,
                name: column,
            });
        }
        key.sort();

        let row_count = if kind == "table" {
            let sql = format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\""));
            let count: i64 = guarded
                .connection
                .query_row(&sql, [], |row| row.get(0))
                .map_err(failed)?;
            Some(u64::try_from(count).unwrap_or(0))
        } else {
            None
        };

        tables.push(TableDescription {
            foreign_keys: foreign_keys(guarded, &name).map_err(failed)?,
            name,
            kind,
            row_count,
            primary_key: key.into_iter().map(|(_, column)| column).collect(),
            columns,
        });
    }
    Ok(DatabaseDescription { tables })
}

fn foreign_keys(guarded: &Guarded, table: &str) -> Result<Vec<ForeignKey>, rusqlite::Error> {
    let mut statement = guarded
        .connection
        .prepare("SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq")?;
    let mut keys: Vec<(i64, ForeignKey)> = Vec::new();
    let mut rows = statement.query([table])?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let from: String = row.get(2)?;
        let to: Option<String> = row.get(3)?;
        match keys.last_mut() {
            Some((last, key)) if *last == id => {
                key.columns.push(from);
                key.references_columns.extend(to);
            }
            _ => keys.push((
                id,
                ForeignKey {
                    columns: vec![from],
                    references_table: row.get(1)?,
                    references_columns: to.into_iter().collect(),
                },
            )),
        }
    }
    Ok(keys.into_iter().map(|(_, key)| key).collect())
}
