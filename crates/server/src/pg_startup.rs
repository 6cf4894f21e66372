//! Connection start-up on the PostgreSQL port: trust or SCRAM-SHA-256, the process id and
//! secret key a client cancels with, and the parameters reported to the client
//! (ParameterStatus) before its first query.
//!
//! Invariants:
//! - Process ids come from one generator for the whole server, so no two live connections
//!   share one, whichever way they logged in (pgwire's SCRAM handler, made per connection,
//!   would start every connection at the same id).
//! - `TimeZone` is reported as `UTC`, the name PostgreSQL itself reports for a server set to
//!   UTC. Every `timestamptz` Tempora sends is written in UTC whatever the name, but clients
//!   pick their conversion by the name: psycopg maps `UTC` to Python's fixed
//!   `datetime.timezone.utc`, and any other name (pgwire's default is `Etc/UTC`) to a
//!   `zoneinfo.ZoneInfo`, which made converting each received value about five times slower.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion_postgres::pgwire;
use futures::Sink;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::sasl::scram::{self, ScramAuth};
use pgwire::api::auth::{
    AuthSource, DefaultServerParameterProvider, LoginInfo, Password, ServerParameterProvider,
    StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

/// The zone name reported as the session's `TimeZone`.
pub const REPORTED_TIME_ZONE: &str = "UTC";

/// Process ids and secret keys for every connection of this server.
static PIDS: LazyLock<Arc<RandomPidSecretKeyGenerator>> =
    LazyLock::new(|| Arc::new(RandomPidSecretKeyGenerator::default()));

/// The parameters reported at start-up: pgwire's defaults with `TimeZone` = `UTC`.
#[derive(Debug)]
pub struct Parameters(DefaultServerParameterProvider);

impl Default for Parameters {
    fn default() -> Self {
        let mut p = DefaultServerParameterProvider::default();
        p.time_zone = REPORTED_TIME_ZONE.to_string();
        Self(p)
    }
}

impl ServerParameterProvider for Parameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        self.0.server_parameters(client)
    }
}

/// Trust or SCRAM, chosen per server; one value per connection.
pub enum StartupKind {
    /// No password is set: every login is accepted (as a local install).
    Trust,
    Scram(SASLAuthStartupHandler<Parameters>),
}

impl StartupKind {
    pub fn new(credentials: Option<&Arc<Credentials>>) -> Self {
        match credentials {
            None => Self::Trust,
            Some(c) => {
                let mut scram = ScramAuth::new(c.clone());
                scram.set_iterations(scram::SCRAM_ITERATIONS);
                let pids: Arc<dyn PidSecretKeyGenerator> = PIDS.clone();
                Self::Scram(
                    SASLAuthStartupHandler::new(Arc::new(Parameters::default()))
                        .with_scram(scram)
                        .with_pid_secret_key_generator(pids),
                )
            }
        }
    }
}

#[async_trait]
impl StartupHandler for StartupKind {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self {
            StartupKind::Trust => {
                // Only the start-up message matters: no authentication exchange follows.
                if let PgWireFrontendMessage::Startup(ref startup) = message {
                    protocol_negotiation(client, startup).await?;
                    save_startup_parameters_to_metadata(client, startup);
                    let (pid, key) = PIDS.generate(client);
                    client.set_pid_and_secret_key(pid, key);
                    finish_authentication(client, &Parameters::default()).await?;
                }
                Ok(())
            }
            StartupKind::Scram(h) => h.on_startup(client, message).await,
        }
    }
}

/// The logins the server accepts: the operator's (`pg_user` with `pg_password`) and, with
/// authentication on, every token (the user is the token's name, the password the token),
/// by SCRAM-SHA-256 against salted passwords (no plain password is kept).
pub struct Credentials {
    operator: Option<(String, Vec<u8>, Vec<u8>)>,
    tokens: Option<Arc<crate::auth::store::TokenStore>>,
    /// The key unknown users' salts are derived from (kept in the data directory).
    decoy_key: Vec<u8>,
    /// A salted random password answered for unknown users, so that they fail at the same
    /// (last) step as a wrong password and a client cannot tell the two apart.
    decoy: Vec<u8>,
}

/// The salt answered for `user` when it is no login: derived from a kept key and the name,
/// so it is the same on every attempt (a real user's salt is too) and looks like a real one
/// (24 base64 characters, as `scram::random_nonce` makes).
pub fn decoy_salt(key: &[u8], user: &str) -> Vec<u8> {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(key);
    h.update(user.as_bytes());
    let d = h.finalize();
    base64::engine::general_purpose::STANDARD
        .encode(&d[..18])
        .into_bytes()
}

impl Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("operator", &self.operator.as_ref().map(|o| &o.0))
            .field("tokens", &self.tokens.is_some())
            .finish()
    }
}

impl Credentials {
    /// `operator`: `(pg_user, pg_password)`; `tokens`: the token catalog when
    /// authentication is on.
    pub fn new(
        operator: Option<(&str, &str)>,
        tokens: Option<Arc<crate::auth::store::TokenStore>>,
        decoy_key: Vec<u8>,
    ) -> Self {
        // The operator's salt is derived like a decoy's: stable across restarts.
        let operator = operator.map(|(user, password)| {
            let salt = decoy_salt(&decoy_key, user);
            let salted = scram::gen_salted_password(password, &salt, scram::SCRAM_ITERATIONS);
            (user.to_string(), salt, salted)
        });
        let decoy = scram::gen_salted_password(
            &scram::random_nonce(),
            &decoy_salt(&decoy_key, ""),
            scram::SCRAM_ITERATIONS,
        );
        Self {
            operator,
            tokens,
            decoy_key,
            decoy,
        }
    }

    /// Whether `user` logs in as the operator (the operator's name wins over a token's).
    pub fn is_operator(&self, user: &str) -> bool {
        self.operator.as_ref().is_some_and(|o| o.0 == user)
    }
}

#[async_trait]
impl AuthSource for Credentials {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or("");
        if let Some((_, salt, salted)) = self.operator.as_ref().filter(|o| o.0 == user) {
            return Ok(Password::new(Some(salt.clone()), salted.clone()));
        }
        if let Some((salt, salted)) = self.tokens.as_ref().and_then(|t| t.scram(user)) {
            return Ok(Password::new(Some(salt), salted));
        }
        // An unknown user gets the decoy: the exchange goes on and fails at its last step,
        // exactly as a wrong password does.
        Ok(Password::new(
            Some(decoy_salt(&self.decoy_key, user)),
            self.decoy.clone(),
        ))
    }
}
