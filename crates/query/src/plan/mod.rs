//! From a typed statement ([`crate::sql::Statement`]) to what runs it: a DataFusion logical
//! plan (with Tempora's nodes where the statement needs them), a command Tempora runs itself,
//! a simple insert, or a PostgreSQL session statement left to the protocol.
//!
//! | statement | planned as |
//! |---|---|
//! | query | DataFusion's plan of the query; `SAMPLE BY` and `LATEST ON` change its syntax tree first ([`sample_by`], [`latest_on`]); `FILL` adds a `GapFill` node ([`fill`]) |
//! | `EXPLAIN` | DataFusion's `Explain` over the statement's plan |
//! | `INSERT … VALUES` of constants and parameters | a [`crate::insert::SimpleInsertPlan`] (no planner); any other insert, DataFusion's |
//! | `DELETE` | DataFusion's DML plan (the table's `delete_from`) |
//! | `SHOW …`, `DESCRIBE` | plans of [`show`] |
//! | `CREATE`/`DROP DATABASE`/`TABLE`, `SET`, `CREATE`/`DROP`/`ALTER MODEL` | a [`Command`] |
//! | `SHOW MODELS`, `DESCRIBE MODEL` | rows of [`models`] |
//!
//! The plans are not optimised here: [`crate::service`] optimises them once, keeps them in
//! the plan cache ([`crate::cache`]) and binds parameters before each run.

pub mod fill;
pub mod latest_on;
pub mod models;
pub mod sample_by;
pub mod show;

use datafusion::execution::SessionState;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast;

use crate::catalog::Databases;
use crate::error::{QueryError, Result};
use crate::insert::SimpleInsertPlan;
use crate::models::Models;
use crate::sql::{
    AlterSettings, CreateDatabase, CreateTable, DropDatabase, DropTable, ModelStatement,
    QueryStatement, SetVariable, Statement,
};

/// What runs a statement.
#[derive(Debug, Clone)]
pub enum Planned {
    /// A DataFusion logical plan (parameters as placeholders).
    Query(LogicalPlan),
    /// A statement Tempora runs itself.
    Command(Command),
    /// Rows written without the planner.
    Insert(SimpleInsertPlan),
    /// A PostgreSQL session statement, for the protocol to answer.
    Session(Box<ast::Statement>),
}

/// A statement Tempora runs itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    CreateDatabase(CreateDatabase),
    DropDatabase(DropDatabase),
    CreateTable(CreateTable),
    DropTable(DropTable),
    Alter(AlterSettings),
    Set(SetVariable),
    /// `CREATE | DROP | ALTER MODEL`.
    Model(ModelStatement),
    /// `CREATE | DROP TOKEN`, `SHOW TOKENS` (issue 26).
    Token(crate::sql::TokenStatement),
}

/// Plans `stmt` in database `db`, whose session state is `state`.
pub async fn plan(
    state: &SessionState,
    dbs: &Databases,
    models: &Models,
    db: &str,
    stmt: &Statement,
) -> Result<Planned> {
    Ok(match stmt {
        Statement::Query(q) => Planned::Query(query(state, q).await?),
        Statement::Explain(e) => {
            let inner = match &e.statement {
                Statement::Query(q) => query(state, q).await?,
                Statement::Plan(s) => state.statement_to_plan((**s).clone()).await?,
                Statement::Delete(s) | Statement::Update(s) | Statement::Insert(s) => {
                    df_statement(state, s).await?
                }
                Statement::Show(s) => show::plan(state, dbs, db, s).await?,
                Statement::PromQl(q) => crate::promql::logical_plan(dbs.engine(), db, q)?,
                other => {
                    return Err(QueryError::Sql(format!(
                        "EXPLAIN applies to queries, not {}",
                        other.tag()
                    )));
                }
            };
            Planned::Query(
                LogicalPlanBuilder::from(inner)
                    .explain(e.verbose, e.analyze)?
                    .build()?,
            )
        }
        Statement::Insert(s) => match SimpleInsertPlan::from_statement(s) {
            Some(p) => Planned::Insert(p?),
            None => Planned::Query(df_statement(state, s).await?),
        },
        Statement::Delete(s) | Statement::Update(s) => {
            Planned::Query(df_statement(state, s).await?)
        }
        Statement::Show(s) => Planned::Query(show::plan(state, dbs, db, s).await?),
        Statement::Plan(s) => Planned::Query(state.statement_to_plan((**s).clone()).await?),
        Statement::PromQl(q) => Planned::Query(crate::promql::logical_plan(dbs.engine(), db, q)?),
        Statement::CreateDatabase(c) => Planned::Command(Command::CreateDatabase(c.clone())),
        Statement::DropDatabase(d) => Planned::Command(Command::DropDatabase(d.clone())),
        Statement::CreateTable(c) => Planned::Command(Command::CreateTable(c.clone())),
        Statement::DropTable(d) => Planned::Command(Command::DropTable(d.clone())),
        Statement::Alter(a) => Planned::Command(Command::Alter(a.clone())),
        Statement::Set(s) => Planned::Command(Command::Set(s.clone())),
        Statement::Model(ModelStatement::Show) => Planned::Query(models::show(models, db)?),
        Statement::Model(ModelStatement::Describe { name }) => {
            Planned::Query(models::describe(models, db, name)?)
        }
        Statement::Model(m) => Planned::Command(Command::Model(m.clone())),
        Statement::Token(t) => Planned::Command(Command::Token(t.clone())),
        Statement::Session(s) => Planned::Session(s.clone()),
    })
}

/// The plan of a query with its Tempora clauses.
pub async fn query(state: &SessionState, q: &QueryStatement) -> Result<LogicalPlan> {
    if let Some(s) = &q.sample_by {
        let sampled = sample_by::rewrite(&q.query, s)?;
        let plan = statement_plan(state, sampled.query.clone()).await?;
        return match sampled.fill {
            None => Ok(plan),
            Some(f) => fill::wrap(state, plan, &sampled.query, f).await,
        };
    }
    let query = match &q.latest_on {
        Some(l) => latest_on::rewrite(&q.query, l)?,
        None => q.query.clone(),
    };
    statement_plan(state, query).await
}

/// DataFusion's plan of a query's syntax tree.
pub async fn statement_plan(state: &SessionState, mut q: Box<ast::Query>) -> Result<LogicalPlan> {
    crate::functions::anomaly::per_series_calls(&mut q);
    df_statement(state, &ast::Statement::Query(q)).await
}

async fn df_statement(state: &SessionState, s: &ast::Statement) -> Result<LogicalPlan> {
    Ok(state
        .statement_to_plan(DfStatement::Statement(Box::new(s.clone())))
        .await?)
}
