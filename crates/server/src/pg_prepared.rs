//! How a statement prepared by the query service travels through pgwire's extended protocol.
//!
//! pgwire stores each parsed statement in the connection's portal store, with the type the
//! handler names; datafusion-postgres's session hooks (cursors, `SET`, transactions) expect
//! that type to be `(text, Option<(sqlparser statement, LogicalPlan)>)`. A statement Tempora
//! prepared keeps that shape: its plan is a [`PreparedNode`], a leaf that carries the
//! [`Prepared`] statement and its result schema. The node is never planned by DataFusion:
//! `Execute` hands the `Prepared` back to the service.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::sql::sqlparser;
use tempora_query::Prepared;
use tempora_query::sql::Statement;

/// The statement type of the PostgreSQL handlers (datafusion-postgres's).
pub type PgStatement = (String, Option<(sqlparser::ast::Statement, LogicalPlan)>);

#[derive(Debug, Clone)]
pub struct PreparedNode {
    pub prepared: Arc<Prepared>,
    schema: DFSchemaRef,
}

impl PreparedNode {
    pub fn plan(prepared: Arc<Prepared>) -> Result<LogicalPlan> {
        let schema = Arc::new(DFSchema::try_from(prepared.schema().as_ref().clone())?);
        Ok(LogicalPlan::Extension(Extension {
            node: Arc::new(PreparedNode { prepared, schema }),
        }))
    }

    /// The prepared statement a stored plan carries, if it is one.
    pub fn of(plan: &LogicalPlan) -> Option<&Arc<Prepared>> {
        match plan {
            LogicalPlan::Extension(e) => e
                .node
                .as_any()
                .downcast_ref::<PreparedNode>()
                .map(|n| &n.prepared),
            _ => None,
        }
    }
}

impl PartialEq for PreparedNode {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.prepared, &other.prepared)
    }
}
impl Eq for PreparedNode {}
impl Hash for PreparedNode {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.prepared).hash(state)
    }
}
impl PartialOrd for PreparedNode {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Arc::as_ptr(&self.prepared).partial_cmp(&Arc::as_ptr(&other.prepared))
    }
}

impl UserDefinedLogicalNodeCore for PreparedNode {
    fn name(&self) -> &str {
        "TemporaPrepared"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![]
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        vec![]
    }
    fn fmt_for_explain(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "TemporaPrepared: {}", self.prepared.statement.tag())
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, _inputs: Vec<LogicalPlan>) -> Result<Self> {
        Ok(self.clone())
    }
}

/// The sqlparser statement stored beside a plan: the statement itself where Tempora's typed
/// statement has one, else a stand-in (only session statements' are ever read).
pub fn ast_of(stmt: &Statement) -> sqlparser::ast::Statement {
    match stmt {
        Statement::Query(q) => sqlparser::ast::Statement::Query(q.query.clone()),
        Statement::Insert(s)
        | Statement::Delete(s)
        | Statement::Update(s)
        | Statement::Session(s) => (**s).clone(),
        _ => stand_in().clone(),
    }
}

fn stand_in() -> &'static sqlparser::ast::Statement {
    static S: OnceLock<sqlparser::ast::Statement> = OnceLock::new();
    S.get_or_init(|| {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        sqlparser::parser::Parser::parse_sql(&dialect, "SELECT NULL")
            .expect("a constant statement parses")
            .remove(0)
    })
}
