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

use crate::error::ApiError;
use crate::queue::{Cancel, Feed};
use crate::state::{AppState, authorize, with_store};
use warpt_run::RunRequest;

type Shared = Arc<AppState>;

/// The largest WebSocket message a client may send.
pub const WS_MAX_MESSAGE: usize = 64 << 10;

/// `POST /api/v1/runs`: reads the body into the typed run request, plans
/// it here as `benchmark run` would (the server's configuration and
/// suites, read at start), checks every parameter the caller set against
/// the operator's grants, queues it and answers 202 with the run's id and
/// position. A usage error is 400 naming the field (and the parameter); a
/// parameter the operator did not allow is 403.
pub async fn submit(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> Result<Response, ApiError> {
    authorize(&state, &headers)?;
    let shared = Arc::clone(&state);
    let request =
        tokio::task::spawn_blocking(move || check_submission(&body, &shared.base, &shared.access))
            .await
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
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
            "request": request.to_json(),
            "links": links,
        })),
    )
        .into_response())
}

/// A request that cannot be planned, as 400: the parameter named when the
/// plan's error is about one.
/// The run a `POST /api/v1/runs` body asks for, read into the typed
/// request and planned here as `benchmark run` would plan it (on `base`:
/// the server's configuration and suites, read at start), with the
/// operator's grants (`access`) asked of every parameter the caller set,
/// by its exact declared name, before any benchmark looks at a value. A
/// usage error is 400 naming the field (and the parameter); a parameter
/// the operator did not allow is 403.
pub fn check_submission(
    body: &str,
    base: &warpt_run::PlanBase,
    access: &crate::Access,
) -> Result<RunRequest, ApiError> {
    let request = RunRequest::from_json(body).map_err(|e| ApiError {
        status: StatusCode::BAD_REQUEST,
        message: e.message,
        field: Some(e.field),
        parameter: e.parameter,
    })?;
    let configured = |name: &str| base.config.params.get(name).map(|s| s.value.clone());
    let gate = |spec: &warpt_model::BenchmarkSpec, name: &str, value: &str| {
        access
            .allows(spec, name, value)
            .and_then(|()| crate::access::Access::keeps_secrets(spec, name, value, &configured))
            .map_err(|r| r.message)
    };
    warpt_run::plan_gated(&request, base, &gate).map_err(plan_refusal)?;
    Ok(request)
}

fn plan_refusal(e: anyhow::Error) -> ApiError {
    use warpt_harness::PlanError;
    if let Some(PlanError::Refused { parameter, message }) = e.downcast_ref::<PlanError>() {
        return ApiError::refused(crate::access::Refusal {
            parameter: parameter.clone(),
            message: message.clone(),
        });
    }
    let parameter = match e.downcast_ref::<PlanError>() {
        Some(PlanError::UnknownParam { key, .. }) => Some(key.clone()),
        Some(PlanError::BadParamName { name, .. }) => Some(name.clone()),
        Some(PlanError::BadParamValue(err)) => Some(err.key.clone()),
        Some(PlanError::InvalidParams { parameter, .. }) => parameter.clone(),
        _ => None,
    };
    ApiError {
        status: if warpt_run::is_usage_error(&e) {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        },
        message: format!("{e:#}"),
        field: Some(
            if parameter.is_some() {
                "params"
            } else {
                "body"
            }
            .into(),
        ),
        parameter,
    }
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
    listed(&state, false, 10_000).await
}

/// `GET /api/v1/jobs`: the latest submitted runs of any state.
pub async fn jobs(State(state): State<Shared>) -> Result<Response, ApiError> {
    listed(&state, true, 200).await
}

/// Up to `limit` submitted runs (finished ones too with `all`), each with
/// its place in the queue: `{"runs": [...]}`.
async fn listed(state: &Shared, all: bool, limit: usize) -> Result<Response, ApiError> {
    let jobs = with_store(state, move |s| Ok(s.jobs(all, limit)?)).await?;
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
