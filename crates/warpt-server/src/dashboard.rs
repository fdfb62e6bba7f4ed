//! The dashboard: static assets compiled into the binary (nothing is
//! fetched from anywhere), served with a content security policy that lets
//! only these files run: no inline script, no other origin.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Only this origin's files may load; scripts never inline.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
                   connect-src 'self' ws: wss:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Every asset: path under `/assets/`, content type, text.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/dom.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/api.js"),
    ),
    (
        "charts.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/charts.js"),
    ),
    (
        "views/runs.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/runs.js"),
    ),
    (
        "views/run.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/run.js"),
    ),
    (
        "views/compare.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/compare.js"),
    ),
    (
        "views/trends.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/trends.js"),
    ),
    (
        "views/matrix.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/matrix.js"),
    ),
    (
        "views/sql.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/sql.js"),
    ),
    (
        "views/live.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/live.js"),
    ),
    (
        "views/token.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/views/token.js"),
    ),
    // uPlot 1.6.32 (MIT, from the npm registry), the line charts' library,
    // vendored as published (its licence served beside it), and the line
    // charts drawn with it: both shared with the HTML report.
    (
        "vendor/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        warpt_report::assets::UPLOT_JS,
    ),
    (
        "vendor/uPlot.min.css",
        "text/css; charset=utf-8",
        warpt_report::assets::UPLOT_CSS,
    ),
    (
        "vendor/uPlot.LICENSE",
        "text/plain; charset=utf-8",
        warpt_report::assets::UPLOT_LICENSE,
    ),
    (
        "lines.js",
        "text/javascript; charset=utf-8",
        warpt_report::assets::LINES_JS,
    ),
];

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `GET /`: the page every view lives in.
pub async fn index() -> Response {
    page(
        "text/html; charset=utf-8",
        include_str!("../assets/index.html"),
    )
}

/// `GET /assets/{*path}`.
pub async fn asset(Path(path): Path<String>) -> Result<Response, ApiError> {
    ASSETS
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, ct, body)| page(ct, body))
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no asset '{path}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_scripts_import_is_served() {
        for (path, _, body) in ASSETS {
            for line in body.lines().filter(|l| l.starts_with("import ")) {
                let Some(target) = line.split('"').nth(1) else {
                    continue;
                };
                let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
                for seg in target.split('/') {
                    match seg {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        s => parts.push(s),
                    }
                }
                let resolved = parts.join("/");
                assert!(
                    ASSETS.iter().any(|(p, _, _)| *p == resolved),
                    "{path} imports {target} ({resolved}), which is not embedded"
                );
            }
        }
    }
}
