//! TLS on both ports (issue 26): one certificate and key, read from the PEM files the
//! configuration names (`tls_cert`, `tls_key`), served by rustls to HTTP clients and to
//! PostgreSQL clients that ask for it (`sslmode=require`, `verify-full`).
//!
//! Invariants:
//! - The files are read at start (a bad file stops the start, naming it) and again on
//!   SIGHUP; a reload that fails keeps the certificate in use and says why, so a typo in a
//!   renewed file never takes the ports down.
//! - Handshakes run beside the accept loop, at most [`MAX_HANDSHAKES`] at once, each given
//!   [`HANDSHAKE_TIMEOUT`]: a client that opens a connection and says nothing holds no port.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// TLS handshakes in progress at once on one port, at most.
pub const MAX_HANDSHAKES: usize = 256;
/// The longest a handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The certificate both ports present, replaced whole on reload.
#[derive(Debug)]
pub struct Certificate {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

/// Reads a certificate chain and its key; the error names the file and the reason.
fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("tls_cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("tls_cert {}: no certificate in it", cert.display()));
    }
    let der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("tls_key {}: {e}", key.display()))?;
    let provider = rustls::crypto::ring::default_provider();
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| format!("tls_key {}: {e}", key.display()))?;
    let certified = CertifiedKey::new(certs, signing);
    certified.keys_match().map_err(|e| {
        format!(
            "tls_key {} does not belong to tls_cert {}: {e}",
            key.display(),
            cert.display()
        )
    })?;
    Ok(certified)
}

impl Certificate {
    pub fn open(cert: &Path, key: &Path) -> Result<Arc<Certificate>, String> {
        Ok(Arc::new(Certificate {
            current: RwLock::new(Arc::new(load(cert, key)?)),
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        }))
    }

    /// Reads the files again; on failure the certificate in use stays.
    pub fn reload(&self) -> Result<(), String> {
        let fresh = load(&self.cert, &self.key)?;
        *self.current.write() = Arc::new(fresh);
        Ok(())
    }

    /// A rustls configuration presenting this certificate, offering `alpn`.
    pub fn server_config(self: &Arc<Self>, alpn: &[&[u8]]) -> Arc<rustls::ServerConfig> {
        let mut c = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_no_client_auth()
        .with_cert_resolver(self.clone());
        c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(c)
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().clone())
    }
}

/// An HTTP listener that hands axum connections whose TLS handshake is done.
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` and shakes hands beside the accept loop.
    pub fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, ready) = tokio::sync::mpsc::channel(MAX_HANDSHAKES);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Ok((socket, peer)) = tcp.accept().await else {
                    continue;
                };
                let (acceptor, out) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let shake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket));
                    match shake.await {
                        Ok(Ok(stream)) => {
                            let _ = out.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                    drop(permit);
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { ready, addr })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept loop only ends when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a pem").unwrap();
        let missing = dir.path().join("missing.pem");
        for (name, cert, key, want) in [
            ("missing certificate", &missing, &junk, "tls_cert"),
            ("no certificate in the file", &junk, &junk, "no certificate"),
        ] {
            let e = Certificate::open(cert, key).unwrap_err();
            assert!(e.contains(want) && e.contains(".pem"), "{name}: {e}");
        }
    }
}
