//! JSON-RPC 2.0's messages as Tokamak reads them from any peer: a request, a notification or a
//! response told apart, or the error the specification says to answer with; and the error
//! object itself.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;

    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn parse_error() -> RpcError {
        RpcError::new(RpcError::PARSE_ERROR, "Parse error")
    }

    pub fn invalid_request() -> RpcError {
        RpcError::new(RpcError::INVALID_REQUEST, "Invalid Request")
    }

    /// The same error, saying more.
    pub fn data(self, data: Value) -> RpcError {
        RpcError { data: Some(data), ..self }
    }
}

/// A message read: a request (with an id), a notification, or a response.
#[derive(Debug)]
pub enum Incoming {
    Request { id: Value, method: String, params: Value },
    Notification { method: String, params: Value },
    Response(Value),
}

/// Reads one message's text, or the error to answer it with (and the id to answer, `null`
/// when there is none).
pub fn read(text: &str) -> Result<Incoming, Box<(Value, RpcError)>> {
    let message: Value = serde_json::from_str(text).map_err(|err| {
        Box::new((
            Value::Null,
            RpcError::parse_error().data(json!(format!("the message is not JSON: {err}"))),
        ))
    })?;
    let Some(object) = message.as_object() else {
        return Err(Box::new((
            Value::Null,
            RpcError::invalid_request().data(json!("a message is a JSON object")),
        )));
    };
    let id = object.get("id").cloned();
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) if id.is_string() || id.is_number() => {
            Ok(Incoming::Request { id, method: method.clone(), params })
        }
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method: method.clone(), params }),
        (Some(_), id) => Err(Box::new((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request()
                .data(json!("a request has a string method and a number or string id")),
        ))),
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Ok(Incoming::Response(message))
        }
        (None, id) => Err(Box::new((
            id.unwrap_or(Value::Null),
            RpcError::invalid_request().data(json!("a message without a method")),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_as_its_kind_or_as_the_error_to_answer() {
        let kind = |line: &str| match read(line) {
            Ok(Incoming::Request { method, .. }) => format!("request {method}"),
            Ok(Incoming::Notification { method, .. }) => format!("notification {method}"),
            Ok(Incoming::Response(_)) => "response".to_string(),
            Err(unreadable) => format!("error {} for {}", unreadable.1.code, unreadable.0),
        };
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            "request initialize"
        );
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            "notification session/cancel"
        );
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#), "response");
        assert_eq!(kind("{not json"), "error -32700 for null");
        assert_eq!(kind("[1,2]"), "error -32600 for null");
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":4,"method":7}"#), "error -32600 for 4");
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#), "error -32600 for {\"a\":1}");
    }
}
