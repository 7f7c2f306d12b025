//! Panics in handlers are caught: a request gets an error answer, a notification a log line,
//! and the server keeps serving.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use tower_lsp_server::jsonrpc;

/// Runs a request handler; a panic becomes an internal error that names the method.
pub async fn request<T>(
    method: &str,
    handler: impl Future<Output = jsonrpc::Result<T>>,
) -> jsonrpc::Result<T> {
    match AssertUnwindSafe(handler).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => {
            let message = format!("internal error in {method}: {}", panic_message(&*payload));
            tracing::error!("{message}");
            Err(jsonrpc::Error { message: message.into(), ..jsonrpc::Error::internal_error() })
        }
    }
}

/// Runs a notification handler; a panic is logged.
pub async fn notification(method: &str, handler: impl Future<Output = ()>) {
    if let Err(payload) = AssertUnwindSafe(handler).catch_unwind().await {
        tracing::error!("internal error in {method}: {}", panic_message(&*payload));
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic with no message".to_string()
    }
}
