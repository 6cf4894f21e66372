//! InfluxQL statements as parsed: the parts Tempora answers (SELECT and the SHOW family) typed,
//! every other statement kept as its text for the handlers that read it (databases, retention
//! policies).

/// A name of a measurement, possibly qualified by database and retention policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Name { db: Option<String>, name: String },
    Regex(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column, with an optional `::tag`/`::field`/type hint.
    Var(String, Option<String>),
    Call(String, Vec<Expr>),
    Binary(Box<Expr>, &'static str, Box<Expr>),
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    /// A duration in ns (also an epoch written `1700000000000ms`).
    Dur(i64),
    Regex(String),
    Now,
    Star,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub expr: Expr,
    pub alias: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GroupTags {
    None,
    All,
    Names(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    Null,
    None,
    Previous,
    Linear,
    Value(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub fields: Vec<Field>,
    pub from: Vec<Source>,
    pub condition: Option<Expr>,
    /// `GROUP BY time(width[, offset])` in ns.
    pub group_time: Option<(i64, i64)>,
    pub group_tags: GroupTags,
    pub fill: Fill,
    pub desc: bool,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub slimit: Option<u64>,
    pub soffset: Option<u64>,
}

impl Select {
    /// A SELECT of `fields` from `from` where `condition`, with every clause after at its
    /// default (no grouping, `fill(null)`, ascending, no limits).
    pub fn new(fields: Vec<Field>, from: Vec<Source>, condition: Option<Expr>) -> Self {
        Self {
            fields,
            from,
            condition,
            group_time: None,
            group_tags: GroupTags::None,
            fill: Fill::Null,
            desc: false,
            limit: None,
            offset: None,
            slimit: None,
            soffset: None,
        }
    }
}

/// The `LIMIT` and `OFFSET` of a SHOW statement. `LIMIT 0` is no limit, as in InfluxDB.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Page {
    pub limit: Option<u64>,
    pub offset: u64,
}

impl Page {
    /// The items this page keeps: `offset` skipped, then at most `limit`.
    pub fn cut<T>(&self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        let skip = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let take = self
            .limit
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        items.into_iter().skip(skip).take(take).collect()
    }
}

/// What `SHOW TAG VALUES … WITH KEY` names.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyMatch {
    Eq(String),
    In(Vec<String>),
    Regex(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Select(Box<Select>),
    ShowMeasurements {
        db: Option<String>,
        regex: Option<String>,
        page: Page,
    },
    /// Each measurement's keys are paged.
    ShowTagKeys {
        db: Option<String>,
        from: Option<Source>,
        page: Page,
    },
    ShowTagValues {
        db: Option<String>,
        from: Option<Source>,
        key: KeyMatch,
        condition: Option<Expr>,
        /// Each measurement's values are paged.
        page: Page,
    },
    /// Each measurement's keys are paged.
    ShowFieldKeys {
        db: Option<String>,
        from: Option<Source>,
        page: Page,
    },
    ShowSeries {
        db: Option<String>,
        from: Option<Source>,
        condition: Option<Expr>,
        /// Over the sorted keys of every measurement.
        page: Page,
    },
    /// Any other statement, as written (databases and retention policies are read elsewhere).
    Other(String),
}
