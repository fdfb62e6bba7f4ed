//! API errors: a status and a JSON body `{"error": ..., "field": ...}`
//! naming the query field or body key at fault, when there is one (and
//! `"parameter"`, the run parameter a refusal is about).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use warpt_store::StoreError;

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// What went wrong, for people.
    pub message: String,
    /// The input field at fault, if one.
    pub field: Option<String>,
    /// The run parameter at fault, if one (a refused command or path).
    pub parameter: Option<String>,
}

impl ApiError {
    /// 400, naming `field`.
    pub fn bad_field(field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            field: Some(field.to_string()),
            parameter: None,
        }
    }

    /// 403 for a run parameter a remote caller may not set.
    pub fn refused(refusal: crate::access::Refusal) -> Self {
        ApiError {
            status: StatusCode::FORBIDDEN,
            message: refusal.message,
            field: Some("params".into()),
            parameter: Some(refusal.parameter),
        }
    }

    /// Any status, no field.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            field: None,
            parameter: None,
        }
    }
}

impl From<warpt_export::ExportError> for ApiError {
    fn from(e: warpt_export::ExportError) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::NotFound(_) => StatusCode::NOT_FOUND,
            StoreError::Ambiguous(_) => StatusCode::BAD_REQUEST,
            StoreError::ReadOnly(_) => StatusCode::FORBIDDEN,
            StoreError::TimedOut(_) => StatusCode::REQUEST_TIMEOUT,
            StoreError::Sql(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({"error": self.message, "field": self.field});
        if let Some(p) = self.parameter {
            body["parameter"] = p.into();
        }
        (self.status, Json(body)).into_response()
    }
}
