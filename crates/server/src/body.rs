//! Request bodies under a size limit, before and after gzip.

use std::io::Read;

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;

use crate::error::ServerError;

/// Reads a body of at most `limit` bytes; a larger one is refused without reading the rest.
/// A `Content-Encoding: gzip` body is decompressed, and the limit applies again after.
pub async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, ServerError> {
    if let Some(len) = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > limit
    {
        return Err(ServerError::TooLarge { limit, after: "" });
    }
    let raw = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ServerError::TooLarge { limit, after: "" })?;
    let gzip = headers
        .get(axum::http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    if !gzip {
        return Ok(raw);
    }
    tokio::task::spawn_blocking(move || gunzip(&raw, limit))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?
}

/// Decompresses at most `limit` bytes; more is an error.
pub fn gunzip(raw: &[u8], limit: usize) -> Result<Bytes, ServerError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ServerError::BadRequest(format!("invalid gzip body: {e}")))?;
    if out.len() > limit {
        return Err(ServerError::TooLarge {
            limit,
            after: " after gzip decompression",
        });
    }
    Ok(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_bodies_are_limited_after_decompression() {
        let small = gz(b"cpu v=1\n");
        assert_eq!(&gunzip(&small, 100).unwrap()[..], b"cpu v=1\n");
        let bomb = gz(&vec![b'a'; 10_000]);
        assert!(bomb.len() < 1000, "the compressed body is under the limit");
        let err = gunzip(&bomb, 1000).unwrap_err();
        assert!(matches!(err, ServerError::TooLarge { .. }), "{err}");
        let err = gunzip(b"not gzip", 1000).unwrap_err();
        assert!(err.to_string().contains("invalid gzip body"), "{err}");
    }
}
