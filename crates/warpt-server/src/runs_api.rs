//! Starting, following and cancelling runs: `POST runs`, `DELETE
//! runs/{id}`, `GET runs/{id}/status`, `GET queue` and the WebSocket
//! `runs/{id}/events`.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use warpt_store::Job;

use crate::api::{authorize, with_store};
use crate::error::ApiError;
use crate::plan::RunRequest;
use crate::queue::{Cancel, Feed};
use crate::state::AppState;

type Shared = Arc<AppState>;

/// The largest WebSocket message a client may send.
pub const WS_MAX_MESSAGE: usize = 64 << 10;

/// `POST /api/v1/runs`: checks the plan as `benchmark run --dry-run`
/// would, queues it, answers 202 with the run's id and position.
pub async fn submit(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Result<Response, ApiError> {
    authorize(&state, &headers)?;
    let request = RunRequest::parse(&body)?;
    // Every benchmark the request could reach: its suite's, its named
    // ones', or (naming neither) all of them.
    let reachable = state.specs.iter().filter(|s| {
        request
            .suite
            .as_ref()
            .is_none_or(|suite| s.id.suite == *suite)
            && (request.benchmarks.is_empty()
                || request
                    .benchmarks
                    .iter()
                    .any(|b| s.id.name == *b || s.id.to_string() == *b))
    });
    state
        .access
        .check_params(reachable, &request.param_texts())
        .map_err(ApiError::refused)?;
    let exe = state.exe.clone();
    let args = request.to_request().to_args();
    let checked = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&exe)
            .args(["benchmark", "run"])
            .args(&args)
            .args(["--dry-run", "--no-store"])
            .stdin(std::process::Stdio::null())
            .output()
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("checking the plan with {}: {e}", state.exe.display()),
        )
    })?;
    if !checked.status.success() {
        let text = String::from_utf8_lossy(&checked.stderr);
        let message = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("the plan was refused")
            .trim_start_matches("error: ")
            .to_string();
        return Err(ApiError::bad_field("body", message));
    }
    let id = warpt_model::run_id(
        jiff::Timestamp::now(),
        &crate::auth::random_hex(4)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
    );
    let queue = Arc::clone(&state.queue);
    let (id2, req2) = (id.clone(), request.clone());
    let position = tokio::task::spawn_blocking(move || queue.submit(&id2, &req2))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    let links = links(&id);
    Ok((
        StatusCode::ACCEPTED,
        [(header::LOCATION, format!("/api/v1/runs/{id}/status"))],
        axum::Json(json!({
            "id": id,
            "state": "queued",
            "position": position,
            "request": request,
            "links": links,
        })),
    )
        .into_response())
}

fn links(id: &str) -> serde_json::Value {
    json!({
        "status": format!("/api/v1/runs/{id}/status"),
        "events": format!("/api/v1/runs/{id}/events"),
        "run": format!("/api/v1/runs/{id}"),
    })
}

/// A job as the API shows it: with its position and links.
fn shown(job: Job, position: Option<usize>) -> serde_json::Value {
    let links = links(&job.id);
    let mut v = serde_json::to_value(&job).unwrap_or_default();
    v["position"] = json!(position);
    v["links"] = links;
    v
}

/// `DELETE /api/v1/runs/{id}`: a queued run is dropped, a running one
/// stops as on Ctrl-C (keeping the benchmarks that finished).
pub async fn cancel(
    State(state): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    authorize(&state, &headers)?;
    let queue = Arc::clone(&state.queue);
    let id2 = id.clone();
    let done = tokio::task::spawn_blocking(move || queue.cancel(&id2))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    match done {
        Cancel::Dequeued => Ok(axum::Json(json!({"id": id, "state": "cancelled"})).into_response()),
        Cancel::Signalled => Ok((
            StatusCode::ACCEPTED,
            axum::Json(json!({"id": id, "state": "cancelling"})),
        )
            .into_response()),
        Cancel::AlreadyEnded(s) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("run '{id}' already ended ({})", s.as_str()),
        )),
        Cancel::Unknown => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no submitted run '{id}'"),
        )),
    }
}

/// `GET /api/v1/runs/{id}/status`: where a submitted run stands.
pub async fn status(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id2 = id.clone();
    let job = with_store(&state, move |s| Ok(s.job(&id2)?)).await?;
    let job = job
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no submitted run '{id}'")))?;
    let position = state.queue.position(&id);
    Ok(axum::Json(shown(job, position)).into_response())
}

/// `GET /api/v1/queue`: queued and running runs, in the order they run.
pub async fn queue(State(state): State<Shared>) -> Result<Response, ApiError> {
    let jobs = with_store(&state, |s| Ok(s.jobs(false, 10_000)?)).await?;
    let list: Vec<_> = jobs
        .into_iter()
        .map(|j| {
            let p = state.queue.position(&j.id);
            shown(j, p)
        })
        .collect();
    Ok(axum::Json(json!({"runs": list})).into_response())
}

/// `GET /api/v1/jobs`: the latest submitted runs of any state.
pub async fn jobs(State(state): State<Shared>) -> Result<Response, ApiError> {
    let jobs = with_store(&state, |s| Ok(s.jobs(true, 200)?)).await?;
    let list: Vec<_> = jobs
        .into_iter()
        .map(|j| {
            let p = state.queue.position(&j.id);
            shown(j, p)
        })
        .collect();
    Ok(axum::Json(json!({"runs": list})).into_response())
}

/// `GET /api/v1/runs/{id}/events` (WebSocket): everything the run emitted
/// so far, then each event as it comes; closed (code 1000) when it ends.
pub async fn events(
    State(state): State<Shared>,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    // Clients only listen: nothing they send needs more than a frame.
    let ws = ws
        .max_message_size(WS_MAX_MESSAGE)
        .max_frame_size(WS_MAX_MESSAGE);
    if let Some(feed) = state.queue.feed(&id) {
        return Ok(ws.on_upgrade(move |socket| follow(socket, feed)));
    }
    // Ended long ago (or before a restart): only how it ended is known.
    let id2 = id.clone();
    let job = with_store(&state, move |s| Ok(s.job(&id2)?)).await?;
    let job = job
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no submitted run '{id}'")))?;
    let line = warpt_model::RunEvent::RunFinished {
        id: job.id,
        state: job.state.as_str().to_string(),
        message: job.message,
    }
    .to_line();
    Ok(ws.on_upgrade(move |mut socket| async move {
        if socket.send(Message::Text(line.into())).await.is_ok() {
            close(&mut socket).await;
        }
    }))
}

async fn follow(mut socket: WebSocket, feed: Arc<Feed>) {
    let mut watch = feed.watch();
    let mut sent = 0;
    loop {
        let ended = watch.borrow_and_update().1;
        for line in feed.since(sent) {
            if socket
                .send(Message::Text(line.as_ref().into()))
                .await
                .is_err()
            {
                return;
            }
            sent += 1;
        }
        if ended {
            close(&mut socket).await;
            return;
        }
        tokio::select! {
            changed = watch.changed() => if changed.is_err() { return },
            msg = socket.recv() => match msg {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

async fn close(socket: &mut WebSocket) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code: 1000,
            reason: "run ended".into(),
        })))
        .await;
}
