//! Authentication and permissions (issue 26), the pure core: tokens and their stored hashes
//! ([`token`]), what a token may do ([`grant`]), the credentials a request carries
//! ([`credentials`]) and the permission each statement class and endpoint needs
//! ([`required`]). Plain functions over values, tested with tables of cases; the catalog that
//! stores grants and the checks on each port wrap them.
//!
//! Invariants: a token is shown once, when it is made; only its SHA-256 is stored, and a
//! presented token is compared with stored hashes in constant time. A refusal never says
//! whether a name exists.

pub mod access;
pub mod admin_http;
pub mod credentials;
pub mod grant;
pub mod http;
pub mod mode;
pub mod required;
pub mod scram;
pub mod store;
pub mod token;

pub use access::{Access, Principal};
pub use credentials::{Credentials, from_headers};
pub use grant::{Grant, Permission};
pub use required::{Endpoint, for_endpoint};
pub use token::{Secret, TokenHash};
