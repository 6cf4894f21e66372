//! Prometheus's protocols: remote write ([`write`]) and remote read ([`read`]) as snappy
//! protobuf, and the HTTP query API with PromQL ([`api`], answers in [`json`]). The
//! protobuf messages are read and written by hand ([`proto`]).
//!
//! | route | handler |
//! |---|---|
//! | `POST /api/v1/write`, `/api/v1/prom/write` | [`write::write`] |
//! | `POST /api/v1/read`, `/api/v1/prom/read` | [`read::read`] |
//! | `GET/POST /api/v1/query`, `/api/v1/query_range` | [`api::query`], [`api::query_range`] |
//! | `GET/POST /api/v1/series`, `/api/v1/labels`, `GET /api/v1/label/{name}/values` | [`api::series`], [`api::labels`], [`api::label_values`] |
//! | `GET /api/v1/status/buildinfo`, `metadata`, `query_exemplars`, `rules`, `alerts` | fixed answers |
//!
//! Every route takes the database as `?db=` (else the default database) and needs write
//! (remote write) or read (the rest) permission on it.

pub mod api;
pub mod json;
pub mod proto;
pub mod read;
pub mod write;
