//! Approvals in the editor (SPEC M4, U3): the [`Approver`] of the language server. Each
//! question is a `tokamak/approvalRequested {id, run_id, action, summary, diff}` notification
//! (with `path`, `before` and `after` — the file's texts — for a change of one file)
//! for clients that render it (they say so with the experimental client capability
//! `tokamak.approvals`), and a `window/showMessageRequest` (Approve / Reject / Show diff)
//! for the others; `tokamak.approve {id?}` and `tokamak.reject {id?, reason?}` answer it.
//! The run waits on its own task: the server keeps serving meanwhile.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::{
    ClientCapabilities, MessageActionItem, MessageType, ShowDocumentParams, Uri,
};

use crate::executor::{Approver, Decision, Request};
use crate::sync::lock;

/// `tokamak/approvalRequested`.
pub enum ApprovalRequested {}

impl Notification for ApprovalRequested {
    type Params = Value;
    const METHOD: &'static str = "tokamak/approvalRequested";
}

const APPROVE: &str = "Approve";
const REJECT: &str = "Reject";
const SHOW_DIFF: &str = "Show diff";

/// The lines of a diff a `window/showMessageRequest` carries for a client that cannot open
/// the diff as a document.
const MESSAGE_DIFF_LINES: usize = 40;

/// What the client does with approvals, from `initialize`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApprovalSupport {
    /// It renders `tokamak/approvalRequested` itself (`experimental.tokamak.approvals`).
    pub renders: bool,
    /// It opens documents on request (`window.showDocument.support`).
    pub show_document: bool,
}

impl ApprovalSupport {
    pub fn from_capabilities(capabilities: &ClientCapabilities) -> ApprovalSupport {
        ApprovalSupport {
            renders: capabilities
                .experimental
                .as_ref()
                .and_then(|e| e.pointer("/tokamak/approvals"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            show_document: capabilities
                .window
                .as_ref()
                .and_then(|w| w.show_document.as_ref())
                .is_some_and(|s| s.support),
        }
    }
}

/// A question waiting for its answer.
struct Pending {
    run_id: String,
    action: String,
    summary: String,
    answer: oneshot::Sender<Decision>,
}

/// The questions waiting, and how to ask.
pub struct Approvals {
    client: Client,
    support: OnceLock<ApprovalSupport>,
    next: AtomicU64,
    pending: Mutex<BTreeMap<u64, Pending>>,
}

impl Approvals {
    pub fn new(client: Client) -> Arc<Approvals> {
        Arc::new(Approvals {
            client,
            support: OnceLock::new(),
            next: AtomicU64::new(1),
            pending: Mutex::new(BTreeMap::new()),
        })
    }

    pub fn set_support(&self, support: ApprovalSupport) {
        let _ = self.support.set(support);
    }

    fn support(&self) -> ApprovalSupport {
        self.support.get().copied().unwrap_or_default()
    }

    /// The questions waiting, oldest first (for `tokamak.status`).
    pub fn waiting(&self) -> Value {
        let pending = lock(&self.pending);
        Value::Array(
            pending
                .iter()
                .map(|(id, p)| {
                    json!({"id": name(*id), "run_id": p.run_id, "action": p.action, "summary": p.summary})
                })
                .collect(),
        )
    }

    /// Answers the question `id` (or, without one, the only one waiting). The error is a
    /// sentence for the person.
    pub fn answer(&self, id: Option<&str>, decision: Decision) -> Result<Value, String> {
        let mut pending = lock(&self.pending);
        let waiting: Vec<String> = pending.keys().map(|id| name(*id)).collect();
        let key = match id {
            Some(id) => {
                let key = parse_id(id).filter(|key| pending.contains_key(key));
                key.ok_or_else(|| match waiting.is_empty() {
                    true => format!("no approval {id} is waiting; none is"),
                    false => format!("no approval {id} is waiting; these are: {}", waiting.join(", ")),
                })?
            }
            None => match waiting.len() {
                0 => return Err("no approval is waiting".to_string()),
                1 => *pending.keys().next().ok_or("no approval is waiting")?,
                _ => {
                    return Err(format!(
                        "{} approvals are waiting ({}); say which with {{\"id\": …}}",
                        waiting.len(),
                        waiting.join(", ")
                    ));
                }
            },
        };
        let Some(question) = pending.remove(&key) else {
            return Err(format!("no approval {} is waiting", name(key)));
        };
        drop(pending);
        let answer = match &decision {
            Decision::Approve => "approved",
            _ => "rejected",
        };
        // the run may have stopped waiting (cancelled) meanwhile: then nobody hears it
        let heard = question.answer.send(decision).is_ok();
        Ok(json!({"id": name(key), "run_id": question.run_id, "answer": answer, "heard": heard}))
    }

    /// Asks with `window/showMessageRequest` until the person answers, dismisses it, or the
    /// question is answered elsewhere. "Show diff" opens the diff and asks again.
    async fn ask_in_message(self: Arc<Self>, key: u64, request: Request, run_id: String) {
        let support = self.support();
        let diff = request.diff().to_string();
        let mut text = format!("Tokamak ({run_id}) wants to {}.", request.summary());
        if !diff.is_empty() && !support.show_document {
            let lines: Vec<&str> = diff.lines().collect();
            text.push_str("\n\n");
            text.push_str(&lines[..lines.len().min(MESSAGE_DIFF_LINES)].join("\n"));
            if lines.len() > MESSAGE_DIFF_LINES {
                text.push_str(&format!("\n… {} more lines", lines.len() - MESSAGE_DIFF_LINES));
            }
        }
        let mut actions = vec![APPROVE, REJECT];
        if !diff.is_empty() && support.show_document {
            actions.push(SHOW_DIFF);
        }
        let items: Vec<MessageActionItem> = actions
            .iter()
            .map(|title| MessageActionItem { title: title.to_string(), properties: Default::default() })
            .collect();
        loop {
            let reply =
                self.client.show_message_request(MessageType::INFO, text.clone(), Some(items.clone())).await;
            if !lock(&self.pending).contains_key(&key) {
                return;
            }
            let chosen = match reply {
                Ok(Some(item)) => item.title,
                Ok(None) => {
                    self.still_waiting(key, "the question was dismissed").await;
                    return;
                }
                Err(err) => {
                    tracing::debug!("window/showMessageRequest failed: {}", err.message);
                    // (Helix) the diff as a document, and the question in a message
                    if !diff.is_empty() && support.show_document {
                        self.show_diff(key, &diff).await;
                    }
                    self.still_waiting(key, "this editor cannot show the question").await;
                    return;
                }
            };
            let decision = match chosen.as_str() {
                APPROVE => Decision::Approve,
                REJECT => Decision::Reject("the user rejected it in the editor".to_string()),
                SHOW_DIFF => {
                    self.show_diff(key, &diff).await;
                    continue;
                }
                other => {
                    tracing::warn!("the editor answered an approval with {other:?}; asking again");
                    continue;
                }
            };
            if let Err(err) = self.answer(Some(&name(key)), decision) {
                tracing::debug!("{err}");
            }
            return;
        }
    }

    /// Says how to answer a question still waiting.
    async fn still_waiting(&self, key: u64, why: &str) {
        let id = name(key);
        self.client
            .show_message(
                MessageType::WARNING,
                format!(
                    "Tokamak is waiting for approval {id} ({why}): answer with the command tokamak.approve or tokamak.reject {{\"id\": \"{id}\", \"reason\": \"…\"}}"
                ),
            )
            .await;
    }

    /// Writes the diff to a file and asks the editor to open it.
    async fn show_diff(&self, key: u64, diff: &str) {
        let path = diff_file(key);
        let written =
            path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, diff));
        if let Err(err) = written {
            tracing::warn!("cannot write the diff of approval {} to {}: {err}", name(key), path.display());
            return;
        }
        let Some(uri) = Uri::from_file_path(&path) else { return };
        let params =
            ShowDocumentParams { uri, external: Some(false), take_focus: Some(true), selection: None };
        if let Err(err) = self.client.show_document(params).await {
            tracing::warn!("the editor did not open the diff of approval {}: {}", name(key), err.message);
        }
    }
}

/// Forgets a question whose run stopped waiting (it was cancelled or ended).
struct Forget<'a> {
    approvals: &'a Approvals,
    key: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        // the diff file stays: an editor that opened it (Helix) may still show it, and a
        // buffer on a deleted file reads as an error; the next start sweeps old ones
        lock(&self.approvals.pending).remove(&self.key);
    }
}

/// Removes the files shown to the editor — approvals' diffs, commands' answers — a day old or
/// more (left by earlier servers).
pub fn sweep_shown_files() {
    let cache = crate::places::cache_dir();
    let day = std::time::Duration::from_secs(24 * 3600);
    let entries = ["approvals", "answers"]
        .into_iter()
        .flat_map(|dir| std::fs::read_dir(cache.join(dir)).into_iter().flatten().flatten());
    for entry in entries {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The server's approver: one per server, shared by its runs.
pub struct LspApprover(pub Arc<Approvals>);

#[async_trait]
impl Approver for LspApprover {
    async fn decide(&self, run_id: &str, request: &Request) -> Decision {
        let approvals = &self.0;
        let key = approvals.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        lock(&approvals.pending).insert(
            key,
            Pending {
                run_id: run_id.to_string(),
                action: request.action().to_string(),
                summary: request.summary(),
                answer: sender,
            },
        );
        let _forget = Forget { approvals, key };
        tracing::info!("{run_id} asks for approval {}: {}", name(key), request.summary());
        let file = request.file();
        let params = json!({
            "id": name(key),
            "run_id": run_id,
            "action": request.action(),
            "summary": request.summary(),
            "diff": request.diff(),
            "path": file.map(|f| &f.path),
            "before": file.map(|f| &f.before),
            "after": file.map(|f| &f.after),
        });
        approvals.client.send_notification::<ApprovalRequested>(params).await;
        if !approvals.support().renders {
            tokio::spawn(Arc::clone(approvals).ask_in_message(key, request.clone(), run_id.to_string()));
        }
        receiver.await.unwrap_or_else(|_| Decision::Refuse("the approval was dropped unanswered".to_string()))
    }
}

/// `tokamak.approve` / `tokamak.reject` arguments: `{id?, reason?}`, or the reason alone as
/// a string (`:lsp-workspace-command tokamak.reject "why not"` in Helix).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerArgs {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

impl AnswerArgs {
    pub fn from_value(value: Value) -> Result<AnswerArgs, String> {
        match value {
            Value::Null => Ok(AnswerArgs::default()),
            Value::String(reason) => Ok(AnswerArgs { id: None, reason: Some(reason) }),
            other => serde_json::from_value(other)
                .map_err(|err| format!("takes {{\"id\"?, \"reason\"?}} or the reason as a string: {err}")),
        }
    }
}

fn name(key: u64) -> String {
    format!("a{key}")
}

fn parse_id(id: &str) -> Option<u64> {
    id.strip_prefix('a').unwrap_or(id).parse().ok()
}

fn diff_file(key: u64) -> PathBuf {
    crate::places::cache_dir().join("approvals").join(format!("{}-{}.diff", std::process::id(), name(key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_with_or_without_their_letter() {
        assert_eq!(parse_id("a7"), Some(7));
        assert_eq!(parse_id("7"), Some(7));
        assert_eq!(parse_id("b7"), None);
        assert_eq!(name(12), "a12");
    }

    #[test]
    fn support_comes_from_the_capabilities() {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "experimental": {"tokamak": {"approvals": true}},
            "window": {"showDocument": {"support": true}}
        }))
        .unwrap();
        let support = ApprovalSupport::from_capabilities(&capabilities);
        assert!(support.renders && support.show_document);
        let none = ApprovalSupport::from_capabilities(&ClientCapabilities::default());
        assert!(!none.renders && !none.show_document);
    }
}
