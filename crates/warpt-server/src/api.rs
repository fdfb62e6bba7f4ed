//! The `/api/v1` routes (and `/metrics`). Handlers run the store's
//! blocking SQLite calls on tokio's blocking pool.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use warpt_store::{Limits, RunFilter, TrendQuery};

use crate::error::ApiError;
use crate::runs_api;
use crate::state::{AppState, QUERY_MAX_CONCURRENT, authorize, with_store};

type Shared = Arc<AppState>;
type Params = Query<Vec<(String, String)>>;

/// Rows a `POST query` returns at most.
pub const QUERY_MAX_ROWS: usize = 10_000;
/// Time after which a `POST query` is stopped.
pub const QUERY_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(5);
/// Bytes of values a `POST query` answer holds at most (and the largest
/// string or blob a query may build).
pub const QUERY_MAX_BYTES: usize = 16 << 20;
/// Runs a page holds at most.
const MAX_PAGE: usize = 1000;

/// Every route.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/api/v1/health", get(health))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/benchmarks", get(benchmarks))
        .route("/api/v1/runs", get(runs).post(runs_api::submit))
        .route("/api/v1/runs/{id}", get(run).delete(runs_api::cancel))
        .route("/api/v1/runs/{id}/status", get(runs_api::status))
        .route("/api/v1/runs/{id}/events", get(runs_api::events))
        .route("/api/v1/queue", get(runs_api::queue))
        .route("/api/v1/jobs", get(runs_api::jobs))
        .route("/api/v1/runs/{id}/results", get(results))
        .route("/api/v1/machines", get(machines))
        .route("/api/v1/overview", get(overview))
        .route("/api/v1/compare", get(compare))
        .route("/api/v1/series", get(series))
        .route("/api/v1/matrix", get(matrix))
        .route("/api/v1/report/{id}", get(report))
        .route("/api/v1/query", post(query))
        .route("/metrics", get(metrics))
        .route("/", get(crate::dashboard::index))
        .route("/assets/{*path}", get(crate::dashboard::asset))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), cached))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::guard::guard,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), count))
        .with_state(state)
}

async fn count(
    State(state): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    state.count(&route, response.status().as_u16());
    response
}

/// Reads whose answers depend only on the store (not the queue, the
/// clock or the server's counters) are answered from the cache.
fn cacheable(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/") else {
        return false;
    };
    let first = rest.split('/').next().unwrap_or("");
    matches!(
        first,
        "runs" | "machines" | "overview" | "compare" | "series" | "matrix" | "report"
    ) && !rest.ends_with("/status")
        && !rest.ends_with("/events")
}

async fn cached(
    State(state): State<Shared>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if request.method() != axum::http::Method::GET
        || !state.cache.enabled()
        || !cacheable(request.uri().path())
    {
        return next.run(request).await;
    }
    let key = request.uri().to_string();
    if let Some(hit) = state.cache.get(&key) {
        return ([(header::CONTENT_TYPE, hit.content_type)], hit.body).into_response();
    }
    let version = state.cache.version();
    let response = next.run(request).await;
    if response.status() != StatusCode::OK {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "reading the answer").into_response();
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_string();
    state.cache.put(
        key,
        version,
        crate::cache::Answer {
            content_type,
            body: bytes.clone(),
        },
    );
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such endpoint; see /api/v1/openapi.json",
    )
}

/// The query fields as a map, refusing unknown or repeated ones.
fn fields(
    params: Vec<(String, String)>,
    allowed: &[&str],
) -> Result<BTreeMap<String, String>, ApiError> {
    let mut out = BTreeMap::new();
    for (k, v) in params {
        if !allowed.contains(&k.as_str()) {
            return Err(ApiError::bad_field(
                &k,
                format!(
                    "unknown field '{k}'; this endpoint takes {}",
                    allowed.join(", ")
                ),
            ));
        }
        if out.insert(k.clone(), v).is_some() {
            return Err(ApiError::bad_field(&k, format!("field '{k}' given twice")));
        }
    }
    Ok(out)
}

fn number(f: &BTreeMap<String, String>, key: &str) -> Result<Option<usize>, ApiError> {
    f.get(key)
        .map(|v| {
            v.parse::<usize>().map_err(|_| {
                ApiError::bad_field(
                    key,
                    format!("'{key}' must be a non-negative integer, not '{v}'"),
                )
            })
        })
        .transpose()
}

fn time(f: &BTreeMap<String, String>, key: &str) -> Result<Option<String>, ApiError> {
    f.get(key)
        .map(|v| {
            let ok = v.parse::<jiff::Timestamp>().is_ok() || v.parse::<jiff::civil::Date>().is_ok();
            if ok {
                Ok(v.clone())
            } else {
                Err(ApiError::bad_field(
                    key,
                    format!("'{key}' must be an RFC 3339 time or a date (YYYY-MM-DD), not '{v}'"),
                ))
            }
        })
        .transpose()
}

fn required<'a>(f: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str, ApiError> {
    f.get(key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::bad_field(key, format!("'{key}' is required")))
}

async fn health(State(state): State<Shared>) -> Response {
    axum::Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "store": state.store.to_string(),
    }))
    .into_response()
}

async fn openapi() -> Response {
    axum::Json(crate::openapi::document()).into_response()
}

async fn benchmarks(State(state): State<Shared>, Query(p): Params) -> Result<Response, ApiError> {
    let f = fields(p, &["suite"])?;
    let suite = f.get("suite");
    if let Some(s) = suite
        && !state.specs.iter().any(|spec| &spec.id.suite == s)
    {
        return Err(ApiError::bad_field("suite", format!("unknown suite '{s}'")));
    }
    let list: Vec<_> = state
        .specs
        .iter()
        .filter(|s| suite.is_none_or(|x| &s.id.suite == x))
        .collect();
    Ok(axum::Json(list).into_response())
}

async fn runs(State(state): State<Shared>, Query(p): Params) -> Result<Response, ApiError> {
    let f = fields(
        p,
        &[
            "suite",
            "benchmark",
            "machine",
            "since",
            "until",
            "limit",
            "offset",
            "label",
        ],
    )?;
    let limit = number(&f, "limit")?.unwrap_or(50);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::bad_field(
            "limit",
            format!("'limit' must be from 1 to {MAX_PAGE}"),
        ));
    }
    let offset = number(&f, "offset")?.unwrap_or(0);
    let filter = RunFilter {
        suite: f.get("suite").cloned(),
        benchmark: f.get("benchmark").cloned(),
        machine: f.get("machine").cloned(),
        since: time(&f, "since")?,
        until: time(&f, "until")?,
        limit: Some(limit),
        offset: Some(offset),
        // `label=key=value`: runs carrying that label.
        labels: f
            .get("label")
            .map(|l| warpt_model::labels::parse_label(l))
            .transpose()
            .map_err(|why| ApiError::bad_field("label", why))?
            .into_iter()
            .collect(),
    };
    let runs = with_store(&state, move |s| Ok(s.list_runs(&filter)?)).await?;
    Ok(axum::Json(json!({"runs": runs, "limit": limit, "offset": offset})).into_response())
}

async fn run(State(state): State<Shared>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let run = with_store(&state, move |s| Ok(s.load_run(&id)?)).await?;
    Ok(axum::Json(run).into_response())
}

async fn results(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let run = with_store(&state, move |s| Ok(s.load_run(&id)?)).await?;
    Ok(axum::Json(run.benchmarks).into_response())
}

async fn machines(State(state): State<Shared>) -> Result<Response, ApiError> {
    let list = with_store(&state, |s| Ok(s.list_machines()?)).await?;
    Ok(axum::Json(list).into_response())
}

async fn overview(State(state): State<Shared>) -> Result<Response, ApiError> {
    let lines = with_store(&state, |s| Ok(crate::overview::overview(s)?)).await?;
    Ok(axum::Json(lines).into_response())
}

async fn compare(State(state): State<Shared>, Query(p): Params) -> Result<Response, ApiError> {
    let f = fields(p, &["base", "current", "threshold"])?;
    let base = required(&f, "base")?.to_string();
    let current = required(&f, "current")?.to_string();
    let threshold = match f.get("threshold") {
        Some(t) => t
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                ApiError::bad_field(
                    "threshold",
                    format!("'threshold' must be a percentage >= 0, not '{t}'"),
                )
            })?,
        None => warpt_report::compare::Options::default().threshold_pct,
    };
    let text = with_store(&state, move |s| {
        let load = |id: &str, field: &str| {
            s.load_run(id).map_err(|e| match e {
                warpt_store::StoreError::NotFound(_) => {
                    ApiError::new(StatusCode::NOT_FOUND, format!("{field}: {e}"))
                }
                other => ApiError::from(other),
            })
        };
        let (b, c) = (load(&base, "base")?, load(&current, "current")?);
        let options = warpt_report::compare::Options {
            threshold_pct: threshold,
            ..Default::default()
        };
        let exclude = vec![b.id.clone(), c.id.clone()];
        let (bl, cl) = (format!("run {}", b.id), format!("run {}", c.id));
        let noise = warpt_run::StoreNoise::new(s, exclude);
        let comparison = warpt_report::compare(&b, &bl, &c, &cl, &options, &noise);
        text(warpt_export::COMPARISON.get("json")?.render(&comparison)?)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}

async fn series(State(state): State<Shared>, Query(p): Params) -> Result<Response, ApiError> {
    let f = fields(p, &["benchmark", "metric", "tags", "machine", "suite"])?;
    let benchmark = required(&f, "benchmark")?.to_string();
    let metric = required(&f, "metric")?.to_string();
    let mut tags = BTreeMap::new();
    for pair in f
        .get("tags")
        .map(String::as_str)
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
    {
        let (k, v) = pair.split_once('=').ok_or_else(|| {
            ApiError::bad_field(
                "tags",
                format!("'tags' takes key=value pairs separated by commas, not '{pair}'"),
            )
        })?;
        tags.insert(k.to_string(), v.to_string());
    }
    let (machine, suite) = (f.get("machine").cloned(), f.get("suite").cloned());
    let rows = with_store(&state, move |s| {
        Ok(s.trend(&TrendQuery {
            suite: suite.as_deref(),
            benchmark: &benchmark,
            metric: &metric,
            tags: &tags,
            machine: machine.as_deref(),
        })?)
    })
    .await?;
    let points: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "run_id": r.run_id, "start_time": r.start_time, "hostname": r.hostname,
                "machine": r.fingerprint, "suite": r.suite, "tags": r.tags, "unit": r.unit,
                "higher_is_better": r.higher_is_better, "value": r.value,
                "ci95_low": r.ci95.map(|c| c.0), "ci95_high": r.ci95.map(|c| c.1),
            })
        })
        .collect();
    // One line per machine and tag combination, with its change points
    // (as `warpt results trend` finds them).
    let mut lines: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        lines
            .entry((r.fingerprint.clone(), warpt_model::tag_label(&r.tags)))
            .or_default()
            .push(i);
    }
    let series: Vec<Value> = lines
        .into_iter()
        .map(|((machine, tags), idx)| {
            let values: Vec<f64> = idx.iter().map(|&i| rows[i].value).collect();
            let steps: Vec<Value> = warpt_report::trend::change_points(&values)
                .iter()
                .map(|s| {
                    let at = &rows[idx[s.index]];
                    json!({
                        "index": s.index, "run_id": at.run_id, "start_time": at.start_time,
                        "before": s.before, "after": s.after, "change_pct": s.change_pct,
                        "p_value": s.p_value,
                    })
                })
                .collect();
            json!({
                "machine": machine, "hostname": rows[idx[0]].hostname, "tags": tags,
                "points": idx, "change_points": steps,
            })
        })
        .collect();
    Ok(axum::Json(json!({"points": points, "series": series})).into_response())
}

async fn matrix(State(state): State<Shared>, Query(p): Params) -> Result<Response, ApiError> {
    let f = fields(p, &["suite"])?;
    let suite = f.get("suite").cloned();
    let rows = with_store(&state, move |s| Ok(s.matrix_rows(suite.as_deref())?)).await?;
    Ok(axum::Json(warpt_report::matrix::build(&rows)).into_response())
}

/// A rendered text document; a binary one is the server's mistake.
fn text(doc: warpt_export::Document) -> Result<String, ApiError> {
    doc.into_text().ok_or_else(|| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a binary document where text was expected",
        )
    })
}

async fn report(State(state): State<Shared>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let html = with_store(&state, move |s| {
        let run = s.load_run(&id)?;
        let input = warpt_report::report::Input {
            runs: vec![(format!("run {}", run.id), run)],
            telemetry: Vec::new(),
            comparisons: Vec::new(),
        };
        text(warpt_export::REPORT.get("html")?.render(&input)?)
    })
    .await?;
    Ok(Html(html).into_response())
}

async fn query(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Result<Response, ApiError> {
    authorize(&state, &headers)?;
    let v: Value = serde_json::from_str(&body).map_err(|e| {
        ApiError::bad_field(
            "sql",
            format!("the body must be JSON {{\"sql\": \"...\"}}: {e}"),
        )
    })?;
    let sql = v
        .get("sql")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ApiError::bad_field("sql", "'sql' is required (a string)"))?
        .to_string();
    let _slot = state.query_slots.try_acquire().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("{QUERY_MAX_CONCURRENT} queries are running already; try again when one ends"),
        )
    })?;
    let path = state.store.clone();
    let out = tokio::task::spawn_blocking(move || {
        warpt_store::query_limited(
            &path,
            &sql,
            Some(Limits {
                max_rows: QUERY_MAX_ROWS,
                max_time: QUERY_MAX_TIME,
                max_bytes: QUERY_MAX_BYTES,
            }),
        )
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    Ok(axum::Json(out).into_response())
}

async fn metrics(State(state): State<Shared>) -> Result<Response, ApiError> {
    let runs = with_store(&state, |s| Ok(s.count_runs()?)).await?;
    let mut text = String::from(
        "# HELP warpt_up Whether the server is serving.\n# TYPE warpt_up gauge\nwarpt_up 1\n\
         # HELP warpt_runs_stored Runs in the store.\n# TYPE warpt_runs_stored gauge\n",
    );
    text += &format!("warpt_runs_stored {runs}\n");
    let (queued, running) = state.queue.counts();
    text += &format!(
        "# HELP warpt_runs_queued Submitted runs waiting.\n# TYPE warpt_runs_queued gauge\n\
         warpt_runs_queued {queued}\n\
         # HELP warpt_runs_running Submitted runs executing (0 or 1).\n# TYPE warpt_runs_running gauge\n\
         warpt_runs_running {running}\n"
    );
    text += "# HELP warpt_http_requests_total Requests served, by route and status.\n\
             # TYPE warpt_http_requests_total counter\n";
    let map = state.requests.lock().unwrap_or_else(|e| e.into_inner());
    for ((route, status), n) in map.iter() {
        let route = route.replace('\\', "\\\\").replace('"', "\\\"");
        text +=
            &format!("warpt_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}\n");
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}
