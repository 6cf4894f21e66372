//! A frame check in front of pgwire's message decoder, and the connection loop that uses it.
//!
//! pgwire decodes a message once its length field says the bytes are there; a length below
//! the four bytes of the field itself reaches decoders that subtract four from it (the
//! password message, for one) and panic. Every byte a client sends therefore passes
//! [`FrameTracker`] first, which follows the message boundaries of the protocol — untyped
//! start-up messages (length ≥ 8), then typed ones (type byte, length ≥ 4) — and ends the
//! connection with a clear error at the first impossible length, before pgwire sees it.
//! Bodies whose fields pgwire reads are collected and walked by [`crate::pg_shapes`]: a
//! body must end where its length says, or pgwire would read past it (and panic at the end
//! of its buffer) or decode its leftover bytes as another message.
//!
//! Invariants:
//! - The tracker is a pure state machine over the byte stream: bytes can arrive split
//!   anywhere and the verdict is the same.
//! - No message body is longer than `max_body_bytes` (the limit of HTTP bodies); the
//!   tracker holds at most one body, and only of a message whose fields are walked.
//! - TLS is negotiated before the tracker (it reads plaintext) and the bytes pgwire read ahead
//!   during negotiation are fed to it first.
//! - The loop is pgwire's own (`process_socket`): the same start-up timeout and dispatch.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion_postgres::pgwire;
use futures::{SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::codec::{Framed, FramedParts};

use crate::pg_shapes;

/// How long a client may take from connecting to finishing authentication (pgwire's value).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest start-up message (PostgreSQL's own limit): it arrives before authentication.
pub const MAX_STARTUP_BYTES: usize = 10_000;

/// The limit when none is given (the default `max_body_bytes`).
pub const DEFAULT_MAX_BODY: usize = 64 << 20;

/// Where the stream is: collecting a header, or skipping a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameTracker {
    untyped: bool,
    header: Vec<u8>,
    body_left: usize,
    offset: u64,
    /// The message being read: where it began, its type byte (untyped: 0) and start-up code.
    at: u64,
    kind: u8,
    code: u32,
    /// Its body so far, when its fields are walked.
    keep: bool,
    body: Vec<u8>,
    max_body: usize,
}

impl Default for FrameTracker {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BODY)
    }
}

impl FrameTracker {
    /// A tracker for a new connection whose message bodies are at most `max_body` bytes.
    pub fn new(max_body: usize) -> Self {
        Self {
            untyped: true,
            header: Vec::with_capacity(8),
            body_left: 0,
            offset: 0,
            at: 0,
            kind: 0,
            code: 0,
            keep: false,
            body: Vec::new(),
            max_body,
        }
    }

    /// The same tracker for a stream past its start-up message (typed messages only).
    pub fn after_startup(self) -> Self {
        Self {
            untyped: false,
            ..self
        }
    }

    /// Follows `bytes`; an error names the stream offset of the message and its length.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let n = self.body_left.min(bytes.len());
                if self.keep {
                    self.body.extend_from_slice(&bytes[..n]);
                }
                self.body_left -= n;
                self.offset += n as u64;
                bytes = &bytes[n..];
                if self.body_left == 0 {
                    self.end_body()?;
                }
                continue;
            }
            let need = if self.untyped { 8 } else { 5 };
            let n = (need - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() == need {
                self.end_header()?;
            }
        }
        Ok(())
    }

    fn end_header(&mut self) -> Result<(), String> {
        let at = self.offset;
        // An untyped header is length + code, both counted by the length; a typed one is
        // type + length, and the length counts only itself of the two.
        let (len_at, min, counted) = if self.untyped { (0, 8, 8) } else { (1, 4, 4) };
        let len_bytes: [u8; 4] = self.header[len_at..len_at + 4].try_into().expect("4 bytes");
        let len = u32::from_be_bytes(len_bytes) as usize;
        if len < min {
            return Err(format!(
                "the message at byte {at} claims a length of {len}; the least is {min}"
            ));
        }
        if self.untyped && len > MAX_STARTUP_BYTES {
            return Err(format!(
                "the start-up message at byte {at} claims a length of {len}; the limit is \
                 {MAX_STARTUP_BYTES}"
            ));
        }
        if len - counted > self.max_body {
            return Err(format!(
                "the message at byte {at} claims a length of {len}; the limit is \
                 max_body_bytes = {}",
                self.max_body
            ));
        }
        self.at = at;
        if self.untyped {
            self.kind = 0;
            self.code = u32::from_be_bytes(self.header[4..8].try_into().expect("4 bytes"));
            self.untyped = matches!(
                self.code,
                pg_shapes::SSL_REQUEST | pg_shapes::GSSENC_REQUEST
            );
            self.keep = true;
        } else {
            self.kind = self.header[0];
            if !pg_shapes::known(self.kind) {
                return Err(format!(
                    "the message at byte {at} has the unknown type {:?}",
                    self.kind as char
                ));
            }
            self.keep = pg_shapes::walks(self.kind);
        }
        self.body_left = len - counted;
        self.offset += self.header.len() as u64;
        self.header.clear();
        if self.body_left == 0 {
            self.end_body()?;
        }
        Ok(())
    }

    /// Walks the body just completed, when its fields are read by pgwire.
    fn end_body(&mut self) -> Result<(), String> {
        if !self.keep {
            return Ok(());
        }
        let verdict = match self.kind {
            0 => pg_shapes::startup(self.code, &self.body),
            k => pg_shapes::typed(k, &self.body),
        };
        self.body.clear();
        self.body.shrink_to(1 << 16);
        verdict.map_err(|why| {
            let what = match self.kind {
                0 => "start-up message".to_string(),
                k => format!("{} message", pg_shapes::name(k)),
            };
            format!("the {what} at byte {}: {why}", self.at)
        })
    }
}

/// A stream whose reads pass the [`FrameTracker`].
pub struct Guarded<S> {
    inner: S,
    tracker: FrameTracker,
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r
            && let Err(why) = this.tracker.feed(&buf.filled()[before..])
        {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, b)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Serves one connection: TLS negotiation, then pgwire's message loop over a guarded stream.
pub async fn process_socket<H: PgWireServerHandlers>(
    socket: tokio::net::TcpStream,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    handlers: H,
    max_body: usize,
) -> io::Result<()> {
    let deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(deadline);
    let negotiated = tokio::select! {
        _ = &mut deadline => return Ok(()),
        s = negotiate_tls(socket, tls) => s?,
    };
    let Some(framed) = negotiated else {
        return Ok(()); // direct TLS without a certificate configured
    };
    let old = framed.into_parts();
    let mut tracker = FrameTracker::new(max_body);
    tracker
        .feed(&old.read_buf)
        .map_err(|why| io::Error::new(io::ErrorKind::InvalidData, why))?;
    let io = Guarded {
        inner: old.io,
        tracker,
    };
    let mut parts = FramedParts::new(io, old.codec);
    parts.read_buf = old.read_buf;
    parts.write_buf = old.write_buf;
    let mut socket = Framed::from_parts(parts);

    let startup = handlers.startup_handler();
    let simple = handlers.simple_query_handler();
    let extended = handlers.extended_query_handler();
    let copy = handlers.copy_handler();
    let cancel = handlers.cancel_handler();
    let errors = handlers.error_handler();
    loop {
        let authenticating = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let msg = if authenticating {
            tokio::select! {
                _ = &mut deadline => None,
                m = socket.next() => m,
            }
        } else {
            socket.next().await
        };
        let msg = match msg {
            Some(Ok(m)) => m,
            Some(Err(e)) => {
                // An impossible frame (ours) or a message pgwire cannot decode: say so, then
                // close, as PostgreSQL does with a protocol violation.
                let info = ErrorInfo::new("FATAL".into(), "08P01".into(), e.to_string());
                let _ = socket
                    .send(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await;
                return Err(io::Error::other(e.to_string()));
            }
            None => return Ok(()),
        };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(e) => e,
            _ => msg.is_extended_query(),
        };
        let r = process_message(
            msg,
            &mut socket,
            startup.clone(),
            simple.clone(),
            extended.clone(),
            copy.clone(),
            cancel.clone(),
        )
        .await;
        if let Err(mut e) = r {
            pgwire::api::ErrorHandler::on_error(errors.as_ref(), &socket, &mut e);
            process_error(&mut socket, e, extended_query).await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(t: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![t];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn startup(code: u32, rest: &[u8]) -> Vec<u8> {
        let mut m = (rest.len() as u32 + 8).to_be_bytes().to_vec();
        m.extend_from_slice(&code.to_be_bytes());
        m.extend_from_slice(rest);
        m
    }

    /// The stream wrapper fails the read that carries an impossible length.
    #[tokio::test]
    async fn guarded_read_fails_on_an_impossible_length() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut client, server) = tokio::io::duplex(64);
        let mut g = Guarded {
            inner: server,
            tracker: FrameTracker::default().after_startup(),
        };
        client.write_all(&typed(b'Q', b"SELECT 1\0")).await.unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(g.read(&mut buf).await.unwrap(), 14);
        client.write_all(b"p\0\0\0\0=").await.unwrap();
        let e = g.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(
            e.to_string().contains("byte 14 claims a length of 0"),
            "{e}"
        );
    }

    /// Every case fed whole and byte by byte gives the same verdict.
    #[test]
    fn cases() {
        let protocol3 = 196_608;
        let good = [
            startup(protocol3, b"user\0u\0\0"),
            typed(b'Q', b"SELECT 1\0"),
        ]
        .concat();
        let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
            ("start-up then a query", good.clone(), None),
            (
                "empty password message",
                [startup(protocol3, b"\0"), typed(b'p', b"")].concat(),
                None,
            ),
            (
                "password message of length 0",
                [startup(protocol3, b"\0"), b"p\0\0\0\0=".to_vec()].concat(),
                Some("byte 9 claims a length of 0; the least is 4"),
            ),
            (
                "start-up of length 4",
                b"\0\0\0\x04\0\0\0\0".to_vec(),
                Some("length of 4; the least is 8"),
            ),
            (
                "GSSENC request, then a start-up, then a query",
                [startup(pg_shapes::GSSENC_REQUEST, b""), good.clone()].concat(),
                None,
            ),
            (
                "length 3 after two good messages",
                [good.clone(), b"S\0\0\0\x03".to_vec()].concat(),
                Some("claims a length of 3"),
            ),
            (
                "a Parse message whose parameter types run past its end",
                [good.clone(), typed(b'P', b"\0q\0\0\x02\0\0\0\x17")].concat(),
                Some("the Parse message at byte 30: the parameter types at byte 5 needs 8"),
            ),
            (
                "a Sync message with a body pgwire would decode as the next message",
                [good.clone(), typed(b'S', b"Q\0\0\0\x04")].concat(),
                Some("the Sync message at byte 30: 5 bytes follow the last field"),
            ),
            (
                "an unknown message type",
                [good.clone(), typed(b'z', b"")].concat(),
                Some("the message at byte 30 has the unknown type 'z'"),
            ),
            (
                "a start-up message without its final NUL",
                startup(protocol3, b"user\0u\0"),
                Some("the start-up message at byte 0: the parameter name at byte 7"),
            ),
            (
                "a start-up message past PostgreSQL's limit",
                [10_001u32.to_be_bytes(), 196_608u32.to_be_bytes()].concat(),
                Some("claims a length of 10001; the limit is 10000"),
            ),
            (
                "a body past the limit",
                [good.clone(), b"d\x7f\0\0\0".to_vec()].concat(),
                Some("claims a length of 2130706432; the limit is max_body_bytes = 67108864"),
            ),
        ];
        for (name, bytes, want) in cases {
            let whole = FrameTracker::default().feed(&bytes);
            let mut t = FrameTracker::default();
            let split = bytes
                .iter()
                .try_for_each(|b| t.feed(std::slice::from_ref(b)));
            assert_eq!(whole, split, "{name}: split changes the verdict");
            match want {
                None => assert_eq!(whole, Ok(()), "{name}"),
                Some(w) => assert!(whole.unwrap_err().contains(w), "{name}"),
            }
        }
    }
}
