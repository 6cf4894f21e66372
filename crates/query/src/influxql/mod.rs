//! InfluxQL (InfluxDB 1.x's query language) for `/query`: Grafana's InfluxDB data source
//! and the `influx` CLI. Statements are parsed here ([`parser`]) and a SELECT is translated
//! per measurement into a SQL statement over the same tables ([`translate`]), which the
//! front door then plans with every Tempora operator; the SHOW family is answered from the
//! catalog by the HTTP handler.
//!
//! Invariants: parsing is pure and bounded (each token consumes input, expressions nest at
//! most [`parser::MAX_DEPTH`]); a translated statement quotes every name and escapes every
//! value; errors read as InfluxDB's (`error parsing query: …`).

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod tag_matcher;
pub mod translate;

#[cfg(test)]
mod tests;

pub use ast::Statement;
pub use parser::parse;
