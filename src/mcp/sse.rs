//! The older HTTP+SSE transport of MCP (protocol 2024-11-05), which servers still offer and
//! `rmcp` no longer speaks as a client: a GET opens an event stream whose first `endpoint`
//! event names where to POST each message; the server's messages arrive as `message` events.

use std::collections::BTreeMap;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SseError(String);

/// A connection to an SSE server.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    headers: reqwest::header::HeaderMap,
    incoming: tokio::sync::mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl SseTransport {
    /// Opens the event stream at `url` and waits, at most `within`, for its endpoint.
    pub async fn connect(
        http: reqwest::Client,
        url: &str,
        headers: &BTreeMap<String, String>,
        within: Duration,
    ) -> Result<SseTransport, String> {
        let base = reqwest::Url::parse(url).map_err(|err| format!("{url} is not a URL: {err}"))?;
        let headers = super::header_map(headers)?;
        let response = http
            .get(base.clone())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .headers(headers.clone())
            .send()
            .await
            .map_err(|err| format!("{url} could not be reached: {err}"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let mut events = response.bytes_stream().eventsource();
        let first = tokio::time::timeout(within, async {
            while let Some(event) = events.next().await {
                match event {
                    Ok(event) if event.event == "endpoint" => return Ok(event.data),
                    Ok(_) => continue,
                    Err(err) => return Err(format!("{url}'s event stream broke: {err}")),
                }
            }
            Err(format!("{url} closed its event stream before naming its endpoint"))
        })
        .await
        .map_err(|_| format!("{url} named no endpoint within {} s", within.as_secs()))??;
        let endpoint =
            base.join(first.trim()).map_err(|err| format!("{url} named the endpoint {first:?}: {err}"))?;
        let (sender, incoming) = tokio::sync::mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                if event.event != "message" && !event.event.is_empty() {
                    continue;
                }
                match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                    Ok(message) => {
                        if sender.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(err) => tracing::debug!("an MCP server's event is not a message: {err}"),
                }
            }
        });
        Ok(SseTransport { http, endpoint, headers, incoming, reader })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), SseError>> + Send + 'static {
        let (http, endpoint, headers) = (self.http.clone(), self.endpoint.clone(), self.headers.clone());
        async move {
            let response = http
                .post(endpoint.clone())
                .headers(headers)
                .json(&item)
                .send()
                .await
                .map_err(|err| SseError(format!("{endpoint} could not be reached: {err}")))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError(format!("{endpoint} answered {}", response.status())))
            }
        }
    }

    fn receive(&mut self) -> impl std::future::Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), SseError>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}
