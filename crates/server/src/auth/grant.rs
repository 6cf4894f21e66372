//! What a token may do: read (queries, SHOW), write (line protocol, INSERT, DELETE,
//! UPDATE) in the databases it names, or everything (admin: DDL, DROP, tokens, models,
//! settings). Write does not imply read (a Telegraf token need not read); admin implies both.

use std::collections::BTreeSet;

/// A permission a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    Read,
    Write,
    Admin,
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Admin => "admin",
        })
    }
}

/// One token's name and permissions (`*` in a database list: every database).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    pub name: String,
    pub read: BTreeSet<String>,
    pub write: BTreeSet<String>,
    pub admin: bool,
}

impl Grant {
    /// A grant from the command line's lists (`--read db1,db2 --write db1 --admin`).
    pub fn parse(name: &str, read: &str, write: &str, admin: bool) -> Result<Grant, String> {
        let list = |s: &str| -> Result<BTreeSet<String>, String> {
            s.split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(
                    |d| match d == "*" || tempora_storage::catalog::validate_database(d).is_ok() {
                        true => Ok(d.to_string()),
                        false => Err(format!("{d:?} is not a database name")),
                    },
                )
                .collect()
        };
        let g = Grant {
            name: name.to_string(),
            read: list(read)?,
            write: list(write)?,
            admin,
        };
        if !g.admin && g.read.is_empty() && g.write.is_empty() {
            return Err(format!(
                "token {name:?} would allow nothing: give --read, --write or --admin"
            ));
        }
        Ok(g)
    }

    /// Whether the grant allows `p` on database `db` (`None`: a request of no database,
    /// which only admin covers unless it only reads).
    pub fn allows(&self, p: Permission, db: Option<&str>) -> bool {
        if self.admin {
            return true;
        }
        let has = |set: &BTreeSet<String>| match db {
            Some(d) => set.contains(d) || set.contains("*"),
            None => !set.is_empty(),
        };
        match p {
            Permission::Read => has(&self.read),
            Permission::Write => has(&self.write),
            Permission::Admin => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_allow_what_they_name_and_nothing_else() {
        let g = Grant::parse("grafana", "db1, db2", "db1", false).unwrap();
        let cases = [
            ("read db1", Permission::Read, Some("db1"), true),
            ("read db2", Permission::Read, Some("db2"), true),
            ("read another", Permission::Read, Some("db3"), false),
            ("write db1", Permission::Write, Some("db1"), true),
            (
                "write db2: read only there",
                Permission::Write,
                Some("db2"),
                false,
            ),
            ("admin", Permission::Admin, Some("db1"), false),
            ("a read of no database", Permission::Read, None, true),
        ];
        for (name, p, db, want) in cases {
            assert_eq!(g.allows(p, db), want, "{name}");
        }
        let admin = Grant::parse("ops", "", "", true).unwrap();
        assert!(
            admin.allows(Permission::Admin, None) && admin.allows(Permission::Write, Some("x"))
        );
        let all = Grant::parse("reader", "*", "", false).unwrap();
        assert!(all.allows(Permission::Read, Some("anything")));
        assert!(!all.allows(Permission::Write, Some("anything")));
        let telegraf = Grant::parse("telegraf", "", "metrics", false).unwrap();
        assert!(
            !telegraf.allows(Permission::Read, Some("metrics")),
            "write does not imply read"
        );
        for (read, write, want) in [
            ("", "", "allow nothing"),
            ("../etc", "", "not a database name"),
        ] {
            let e = Grant::parse("t", read, write, false).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
