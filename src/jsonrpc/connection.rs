//! Requests to the client with their answers matched by id, each waited for at most a bound (or
//! until the caller gives up), notifications, and answers to the client's requests; every
//! message goes out through one channel to one writer, so none interleave.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::RpcError;
use crate::sync::lock;

/// Why a request to the client came to nothing.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the client answered {method} with an error: {message} ({code})")]
    Refused { method: String, code: i32, message: String },
    #[error("the client did not answer {method} within {seconds} s")]
    Timeout { method: String, seconds: u64 },
    #[error("the client has gone (its connection closed)")]
    Gone,
    #[error("the client's answer to {method} was not understood: {reason}")]
    Malformed { method: String, reason: String },
}

type Answer = Result<Value, RpcError>;

/// The connection to the client: what Tokamak sends, and the requests waiting for answers.
pub struct Connection {
    out: mpsc::UnboundedSender<String>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Answer>)>>,
    /// The client has gone: a new request fails at once.
    closed: std::sync::atomic::AtomicBool,
}

impl Connection {
    /// A connection and the lines it sends, in order, for one writer to put on stdout.
    pub fn new() -> (Connection, mpsc::UnboundedReceiver<String>) {
        let (out, lines) = mpsc::unbounded_channel();
        let connection = Connection {
            out,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            closed: Default::default(),
        };
        (connection, lines)
    }

    fn send(&self, message: &Value) {
        // a value always serializes; a closed channel means the editor has gone
        if let Ok(line) = serde_json::to_string(message) {
            let _ = self.out.send(line);
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        match serde_json::to_value(params) {
            Ok(params) => self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})),
            Err(err) => tracing::error!("{method} could not be written: {err}"),
        }
    }

    /// Answers request `id`.
    pub fn respond(&self, id: Value, answer: Result<Value, RpcError>) {
        match answer {
            Ok(result) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(error) => self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error})),
        }
    }

    /// Asks the client and waits for its answer, at most `timeout` when one is given.
    pub async fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
        timeout: Option<Duration>,
    ) -> Result<R, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|err| ClientError::Malformed { method: method.to_string(), reason: err.to_string() })?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tell, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if self.closed.load(Ordering::SeqCst) {
                return Err(ClientError::Gone);
            }
            pending.insert(id, (method.to_string(), tell));
        }
        // forgets the request however the wait ends (answered, timed out, dropped by a cancel)
        struct Forget<'a>(&'a Connection, u64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                lock(&self.0.pending).remove(&self.1);
            }
        }
        let _forget = Forget(self, id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = match timeout {
            Some(limit) => match tokio::time::timeout(limit, answer).await {
                Ok(answer) => answer,
                Err(_) => {
                    return Err(ClientError::Timeout {
                        method: method.to_string(),
                        seconds: limit.as_secs(),
                    });
                }
            },
            None => answer.await,
        };
        match answer {
            Ok(Ok(result)) => serde_json::from_value(result).map_err(|err| ClientError::Malformed {
                method: method.to_string(),
                reason: err.to_string(),
            }),
            Ok(Err(error)) => Err(ClientError::Refused {
                method: method.to_string(),
                code: error.code,
                message: error.message,
            }),
            Err(_) => Err(ClientError::Gone),
        }
    }

    /// A response from the client: hands it to the request waiting for it. `false` when no
    /// request of ours has that id (answered late, or never asked).
    pub fn answered(&self, message: &Value) -> bool {
        let Some(id) = message.get("id").and_then(Value::as_u64) else { return false };
        let Some((method, tell)) = lock(&self.pending).remove(&id) else { return false };
        let answer = match (message.get("result"), message.get("error")) {
            (_, Some(error)) => Err(serde_json::from_value::<RpcError>(error.clone()).unwrap_or_else(|_| {
                RpcError::new(
                    RpcError::INTERNAL_ERROR,
                    format!("an error the client sent for {method} could not be read: {error}"),
                )
            })),
            (Some(result), None) => Ok(result.clone()),
            (None, None) => Ok(Value::Null),
        };
        let _ = tell.send(answer);
        true
    }

    /// The client has gone: every request waiting fails with [`ClientError::Gone`].
    pub fn close(&self) {
        let mut pending = lock(&self.pending);
        self.closed.store(true, Ordering::SeqCst);
        pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_gets_its_own_answer_and_a_timeout_forgets_it() {
        let (connection, mut lines) = Connection::new();
        let connection = std::sync::Arc::new(connection);
        let asking = std::sync::Arc::clone(&connection);
        let ask = tokio::spawn(async move {
            asking
                .request::<Value>("fs/read_text_file", &json!({"path": "/a"}), Some(Duration::from_secs(5)))
                .await
        });
        let sent: Value = serde_json::from_str(&lines.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "fs/read_text_file");
        assert!(!connection.answered(&json!({"id": 99, "result": {}})), "not ours");
        assert!(connection.answered(&json!({"id": sent["id"], "result": {"content": "x"}})));
        assert_eq!(ask.await.unwrap().unwrap(), json!({"content": "x"}));
        let late = connection
            .request::<Value>("fs/read_text_file", &json!({}), Some(Duration::from_millis(10)))
            .await;
        assert!(matches!(late, Err(ClientError::Timeout { .. })), "{late:?}");
        assert!(lock(&connection.pending).is_empty());
    }
}
