//! The web console: a page and two assets, compiled into the binary from `console/dist`
//! (built by `console/build.sh` from `console/src`; no CDN, works offline).
//!
//! Invariants:
//! - The assets hold no data: they are served to anyone (`auth::required::Endpoint::Console`);
//!   everything the page shows comes from the API, under the caller's token.
//! - Each asset carries a strong ETag (its CRC-32C) and `Cache-Control: no-cache`, so a
//!   browser revalidates and gets 304 until the binary changes.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The header the console sends with its API calls; a 401 then carries no
/// `WWW-Authenticate`, so the browser shows the page's sign-in dialog, not its own prompt.
pub const HEADER: &str = "x-tempora-console";

/// (path under `/console/`, content type, bytes)
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../../console/dist/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../console/dist/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../console/dist/app.css"),
    ),
];

/// Whether `path` is the page or one of its assets.
pub fn is_asset(path: &str) -> bool {
    path == "/"
        || path
            .strip_prefix("/console/")
            .is_some_and(|name| find(name).is_some())
}

fn find(name: &str) -> Option<&'static (&'static str, &'static str, &'static [u8])> {
    ASSETS.iter().find(|(n, _, _)| *n == name)
}

/// `GET /`: the page.
pub async fn page(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /console/{asset}`.
pub async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers)
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some((_, ctype, bytes)) = find(name) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let etag = format!("\"{:08x}\"", crc32c::crc32c(bytes));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, *ctype)], *bytes).into_response()
    };
    let h = r.headers_mut();
    h.insert(header::ETAG, HeaderValue::from_str(&etag).expect("hex"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_found_by_exact_name() {
        for (path, want) in [
            ("/", true),
            ("/console/app.js", true),
            ("/console/app.css", true),
            ("/console/index.html", true),
            ("/console/../Cargo.toml", false),
            ("/console/", false),
            ("/console/app.js.map", false),
            ("/consoleapp.js", false),
        ] {
            assert_eq!(is_asset(path), want, "{path}");
        }
    }

    #[tokio::test]
    async fn an_etag_match_is_not_modified() {
        let r = serve("app.css", &HeaderMap::new());
        assert_eq!(r.status(), StatusCode::OK);
        let etag = r.headers()[header::ETAG].clone();
        let mut h = HeaderMap::new();
        h.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(serve("app.css", &h).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            serve("nope.js", &HeaderMap::new()).status(),
            StatusCode::NOT_FOUND
        );
    }
}
