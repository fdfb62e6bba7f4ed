//! API errors: a status and a JSON body `{"error": ..., "field": ...}`
//! naming the query field or body key at fault, when there is one.

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
}

impl ApiError {
    /// 400, naming `field`.
    pub fn bad_field(field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            field: Some(field.to_string()),
        }
    }

    /// Any status, no field.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            field: None,
        }
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
        let body = serde_json::json!({"error": self.message, "field": self.field});
        (self.status, Json(body)).into_response()
    }
}
