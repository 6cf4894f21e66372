//! Names: how a table of a database is named in the engine, and which database names are
//! valid.
//!
//! The engine stores table `t` of database `db` under the name `db.t`; a database name holds
//! no `.`, so the first `.` of an engine name separates the two. A name without `.` is a table
//! outside any database (embedded use and tests). Errors name tables the engine's way
//! (`"db.t"`); [`user_message`] rewrites them as a client of `db` wrote them (`"t"`).

use crate::error::{Result, StorageError};

/// The engine's name for table `table` of database `db`.
pub fn qualified(db: &str, table: &str) -> String {
    format!("{db}.{table}")
}

/// Splits an engine table name into (database, table); `None` for a table outside any
/// database.
pub fn split(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
}

/// An engine message as a client of `db` should read it: the engine names table `t` of `db`
/// `"db.t"`, the client wrote `"t"`.
pub fn user_message(db: &str, msg: &str) -> String {
    msg.replace(&format!("\"{db}."), "\"")
}

/// Checks a database name: what [`tempora_model::validate_name`] allows (not empty, at most
/// 1024 bytes, not `time`, not starting with `__`), without `.` or control characters.
pub fn validate_database(name: &str) -> Result<()> {
    let reason = match tempora_model::validate_name(name) {
        Err(tempora_model::ModelError::InvalidName { reason, .. }) => Some(reason),
        Err(e) => return Err(e.into()),
        Ok(()) if name.contains('.') => Some("a database name must not contain '.'"),
        Ok(()) if name.chars().any(char::is_control) => {
            Some("a database name must not contain control characters")
        }
        Ok(()) => None,
    };
    match reason {
        Some(reason) => Err(StorageError::InvalidDatabase {
            name: name.chars().take(64).collect(),
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_messages_drop_the_database() {
        let name = qualified("db", "cpu.load");
        assert_eq!(name, "db.cpu.load");
        assert_eq!(
            split(&name),
            Some(("db", "cpu.load")),
            "the first '.' splits"
        );
        assert_eq!(split("cpu"), None, "a table outside any database");
        assert_eq!(
            user_message(
                "db",
                r#"field "v" has type string but table "db.cpu" has it as float"#
            ),
            r#"field "v" has type string but table "cpu" has it as float"#
        );
        assert_eq!(
            user_message("db", r#"table "other.cpu""#),
            r#"table "other.cpu""#
        );
    }
}
