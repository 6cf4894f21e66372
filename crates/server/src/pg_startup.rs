//! Connection start-up on the PostgreSQL port: trust or SCRAM-SHA-256 (our own exchange over
//! stored verifiers, [`crate::auth::scram`]), the process id and
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
use futures::SinkExt;
use pgwire::api::auth::sasl::scram;
use pgwire::api::auth::{
    DefaultServerParameterProvider, ServerParameterProvider, StartupHandler, finish_authentication,
    protocol_negotiation, save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, PgWireConnectionState, PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::auth::scram as scram_core;

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
        p.server_version = tempora_query::functions::pg_settings::setting("server_version")
            .expect("a known setting");
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
    Scram(Box<ScramLogin>),
}

impl StartupKind {
    pub fn new(credentials: Option<&Arc<Credentials>>) -> Self {
        match credentials {
            None => Self::Trust,
            Some(c) => Self::Scram(Box::new(ScramLogin {
                credentials: c.clone(),
                state: parking_lot::Mutex::new(ScramState::Initial),
            })),
        }
    }
}

/// One connection's SCRAM-SHA-256 exchange ([`crate::auth::scram`] does the arithmetic).
pub struct ScramLogin {
    credentials: Arc<Credentials>,
    state: parking_lot::Mutex<ScramState>,
}

enum ScramState {
    Initial,
    SentFirst {
        verifier: scram_core::Verifier,
        first: scram_core::ClientFirst,
        server_first: String,
    },
}

/// Every failure during authentication is fatal: the connection closes (a non-fatal error
/// would leave pgwire's connection ready for queries).
fn fatal(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message,
    )))
}

impl ScramLogin {
    /// The server's reply to a password-family message, or the failure.
    fn step<C: ClientInfo>(
        &self,
        client: &C,
        msg: PasswordMessageFamily,
    ) -> PgWireResult<(Authentication, bool)> {
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        let mut state = self.state.lock();
        match &*state {
            ScramState::Initial => {
                // Read here: pgwire's own reader panics on a data length past the body.
                let PasswordMessageFamily::Raw(body) = msg else {
                    return Err(fatal(
                        "08P01",
                        "SCRAM: expected a SASL initial response".into(),
                    ));
                };
                let (mechanism, data) = crate::pg_shapes::sasl_initial(&body)
                    .map_err(|e| fatal("08P01", format!("SASL initial response: {e}")))?;
                if mechanism != METHOD {
                    return Err(PgWireError::UnsupportedSASLAuthMethod(mechanism));
                }
                let data = data.unwrap_or_default();
                let first = scram_core::client_first(&data)
                    .map_err(|e| fatal("08P01", format!("SCRAM: {e}")))?;
                let verifier = self.credentials.verifier(&user);
                let server_first =
                    scram_core::server_first(&first, &scram::random_nonce(), &verifier);
                let reply = Authentication::SASLContinue(server_first.clone().into());
                *state = ScramState::SentFirst {
                    verifier,
                    first,
                    server_first,
                };
                Ok((reply, false))
            }
            ScramState::SentFirst {
                verifier,
                first,
                server_first,
            } => {
                let resp = msg.into_sasl_response()?;
                match scram_core::client_final(verifier, first, server_first, &resp.data) {
                    Ok(fin) => Ok((Authentication::SASLFinal(fin.into()), true)),
                    Err(true) => Err(fatal(
                        "28P01",
                        format!("password authentication failed for user {user:?}"),
                    )),
                    Err(false) => Err(fatal(
                        "08P01",
                        "SCRAM: malformed client-final message".into(),
                    )),
                }
            }
        }
    }
}

/// The one SASL mechanism offered.
const METHOD: &str = "SCRAM-SHA-256";

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
        let login = match (self, message) {
            (_, PgWireFrontendMessage::Startup(ref startup)) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                if let StartupKind::Scram(_) = self {
                    client.set_state(PgWireConnectionState::AuthenticationInProgress);
                    let offer = Authentication::SASL(vec![METHOD.to_string()]);
                    client
                        .send(PgWireBackendMessage::Authentication(offer))
                        .await?;
                    return Ok(());
                }
                true
            }
            (StartupKind::Scram(s), PgWireFrontendMessage::PasswordMessageFamily(msg)) => {
                let (reply, done) = s.step(client, msg)?;
                client
                    .send(PgWireBackendMessage::Authentication(reply))
                    .await?;
                done
            }
            (StartupKind::Scram(_), _) => {
                return Err(fatal(
                    "08P01",
                    "expected a SCRAM message during authentication: authenticate first".into(),
                ));
            }
            (StartupKind::Trust, _) => false,
        };
        if login {
            let (pid, key) = PIDS.generate(client);
            client.set_pid_and_secret_key(pid, key);
            finish_authentication(client, &Parameters::default()).await?;
        }
        Ok(())
    }
}

/// The logins the server accepts: the operator's (`pg_user` with `pg_password`) and, with
/// authentication on, every token (the user is the token's name, the password the token).
/// Only SCRAM verifiers are held, never a password.
pub struct Credentials {
    operator: Option<(String, scram_core::Verifier)>,
    tokens: Option<Arc<crate::auth::store::TokenStore>>,
    /// The key unknown users' salts are derived from (kept in the data directory).
    decoy_key: Vec<u8>,
    /// Random keys answered for unknown users, so that they fail at the same (last) step as
    /// a wrong password and a client cannot tell the two apart.
    decoy: scram_core::Verifier,
}

impl Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("operator", &self.operator.as_ref().map(|o| &o.0))
            .field("tokens", &self.tokens.is_some())
            .finish()
    }
}

/// The salt answered for `user` when it is no login: derived from a kept key and the name,
/// so it is the same on every attempt and after restarts, as a real login's is, and as long
/// (16 bytes).
pub fn decoy_salt(key: &[u8], user: &str) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(key);
    h.update(user.as_bytes());
    h.finalize()[..16].to_vec()
}

impl Credentials {
    /// `operator`: `(pg_user, pg_password)`; `tokens`: the token catalog when
    /// authentication is on; `decoy_key`: [`crate::auth::store::TokenStore::decoy_key`].
    pub fn new(
        operator: Option<(&str, &str)>,
        tokens: Option<Arc<crate::auth::store::TokenStore>>,
        decoy_key: Vec<u8>,
    ) -> Self {
        let operator = operator.map(|(user, password)| {
            let salt = decoy_salt(&decoy_key, user);
            let v = scram_core::Verifier::new(password, &salt, scram_core::ITERATIONS);
            (user.to_string(), v)
        });
        let decoy = scram_core::Verifier::new(
            &scram::random_nonce(),
            &decoy_salt(&decoy_key, ""),
            scram_core::ITERATIONS,
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

    /// The verifier `user`'s proof is checked against: the operator's, the token's, or a
    /// decoy with that name's own salt.
    pub fn verifier(&self, user: &str) -> scram_core::Verifier {
        if let Some((_, v)) = self.operator.as_ref().filter(|o| o.0 == user) {
            return v.clone();
        }
        if let Some(v) = self.tokens.as_ref().and_then(|t| t.scram(user)) {
            return v;
        }
        scram_core::Verifier {
            salt: decoy_salt(&self.decoy_key, user),
            ..self.decoy.clone()
        }
    }
}
