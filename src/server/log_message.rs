//! Forwards `tracing` events to the editor as `window/logMessage`, so users see Tokamak's logs
//! in their editor's LSP log without looking for stderr.

use std::fmt::Write as _;

use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::MessageType;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;

/// Lines waiting for the editor; past this many (an editor not reading) new ones are dropped.
const QUEUE: usize = 1024;

pub struct LogMessageLayer {
    sender: mpsc::Sender<(MessageType, String)>,
}

pub struct LogMessageQueue {
    receiver: mpsc::Receiver<(MessageType, String)>,
}

/// The layer to install and the queue to hand to [`LogMessageQueue::forward`] once the client
/// is there.
pub fn channel() -> (LogMessageLayer, LogMessageQueue) {
    let (sender, receiver) = mpsc::channel(QUEUE);
    (LogMessageLayer { sender }, LogMessageQueue { receiver })
}

impl LogMessageQueue {
    /// Sends queued and future lines to the client until the server stops.
    pub fn forward(mut self, client: Client) {
        tokio::spawn(async move {
            while let Some((kind, text)) = self.receiver.recv().await {
                client.log_message(kind, text).await;
            }
        });
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for LogMessageLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let kind = match *event.metadata().level() {
            Level::ERROR => MessageType::ERROR,
            Level::WARN => MessageType::WARNING,
            Level::INFO => MessageType::INFO,
            Level::DEBUG | Level::TRACE => MessageType::LOG,
        };
        let mut text = String::new();
        event.record(&mut MessageVisitor(&mut text));
        let _ = self.sender.try_send((kind, text));
    }
}

struct MessageVisitor<'a>(&'a mut String);

impl Visit for MessageVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}
