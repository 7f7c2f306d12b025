//! Asking the model for several candidate fixes at once (SPEC V1): one request per
//! temperature, sent together up to what the server takes at once (`model.parallel`), and a
//! server found to take one request at a time — it refused one with 503 while another was
//! in flight — asked in turn, the refused ones again, and remembered for the process.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::model::{CallOptions, Model, ModelError, Reply, Request};
use crate::sync::lock;

/// One candidate's answer.
pub struct Asked {
    /// 0-based, in the order of the temperatures (of all the round's models, once merged).
    pub index: usize,
    pub temperature: f32,
    pub reply: Result<Reply, ModelError>,
}

/// How the requests went together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Concurrency {
    /// The most requests in flight at once.
    pub reached: usize,
    /// The server was asked in turn (its setting, or found to take one at a time).
    pub in_turn: bool,
    /// It was found this time, from its refusals.
    pub detected: bool,
}

/// The endpoints found to take one request at a time.
fn one_at_a_time() -> &'static Mutex<HashSet<String>> {
    static SERIAL: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SERIAL.get_or_init(Mutex::default)
}

/// A refusal that says the server is busy with another request (not a broken request).
fn busy(error: &ModelError) -> bool {
    // (a hosted API's 429 is its rate limit, which the client already waits out: not this)
    match error {
        ModelError::Server { status, .. } => matches!(status, 503 | 529),
        ModelError::Rejected { detail, .. } | ModelError::BadReply { detail, .. } => {
            let detail = detail.to_lowercase();
            ["busy", "no slot", "slot unavailable", "overloaded", "too many requests"]
                .iter()
                .any(|word| detail.contains(word))
        }
        _ => false,
    }
}

/// Asks `model` for one reply per temperature; every answer comes back, in order (an error
/// is that candidate's). `cancel` stops them all.
pub async fn ask(
    model: &Arc<dyn Model>,
    request: &Request,
    temperatures: &[f32],
    cancel: &CancellationToken,
) -> (Vec<Asked>, Concurrency) {
    let info = model.info();
    let known_serial = lock(one_at_a_time()).contains(&info.endpoint);
    let width = match info.parallel {
        Some(n) => n as usize,
        None if known_serial => 1,
        None => temperatures.len(),
    }
    .clamp(1, temperatures.len().max(1));
    let counters = Counters::default();
    let gate = Arc::new(tokio::sync::Semaphore::new(width));
    let mut sent = Vec::with_capacity(temperatures.len());
    for (index, &temperature) in temperatures.iter().enumerate() {
        let mut request = request.clone();
        request.temperature = Some(temperature);
        let call =
            send_one(Arc::clone(model), request, cancel.child_token(), counters.clone(), Arc::clone(&gate));
        sent.push(async move {
            let (reply, crowded) = call.await;
            (index, temperature, reply, crowded)
        });
    }
    let mut answers: Vec<(usize, f32, Result<Reply, ModelError>, bool)> =
        futures::future::join_all(sent).await;
    answers.sort_by_key(|(index, ..)| *index);
    let mut detected = false;
    if width > 1 && answers.iter().any(|(_, _, reply, crowded)| *crowded && reply.as_ref().is_err_and(busy)) {
        // the server takes one at a time: the refused ones again, in turn
        detected = true;
        lock(one_at_a_time()).insert(info.endpoint.clone());
        tracing::info!("{}: takes one request at a time; candidates are asked in turn", info.endpoint);
        for answer in answers.iter_mut() {
            if answer.2.as_ref().is_err_and(busy) {
                let mut request = request.clone();
                request.temperature = Some(answer.1);
                let one = Arc::new(tokio::sync::Semaphore::new(1));
                let (reply, _) =
                    send_one(Arc::clone(model), request, cancel.child_token(), counters.clone(), one).await;
                answer.2 = reply;
            }
        }
    }
    let asked = answers
        .into_iter()
        .map(|(index, temperature, reply, _)| Asked { index, temperature, reply })
        .collect();
    let concurrency = Concurrency {
        reached: counters.reached.load(Ordering::SeqCst),
        in_turn: width == 1 || detected,
        detected,
    };
    (asked, concurrency)
}

/// Requests in flight now, and the most there were.
#[derive(Clone, Default)]
struct Counters {
    in_flight: Arc<AtomicUsize>,
    reached: Arc<AtomicUsize>,
}

/// Sends one request when `gate` lets it; also says whether another request was in flight
/// while it was answered.
async fn send_one(
    model: Arc<dyn Model>,
    request: Request,
    cancel: CancellationToken,
    counters: Counters,
    gate: Arc<tokio::sync::Semaphore>,
) -> (Result<Reply, ModelError>, bool) {
    let _permit = gate.acquire_owned().await;
    let now = counters.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    counters.reached.fetch_max(now, Ordering::SeqCst);
    let options = CallOptions { deltas: None, cancel };
    let reply = model.send(&request, &options).await;
    let crowded = counters.in_flight.fetch_sub(1, Ordering::SeqCst) > 1 || now > 1;
    (reply, crowded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FinishReason, ModelInfo, Provider, ToolsMode, Usage};
    use async_trait::async_trait;
    use std::time::Duration;

    /// Answers after a pause; with `serial`, refuses (503) a request that comes while another
    /// is answered.
    struct Slow {
        serial: bool,
        busy: AtomicUsize,
        most: AtomicUsize,
        endpoint: String,
    }

    #[async_trait]
    impl Model for Slow {
        fn info(&self) -> ModelInfo {
            ModelInfo {
                provider: Provider::OpenAi,
                model: "slow".into(),
                endpoint: self.endpoint.clone(),
                tools: ToolsMode::Text,
                max_tokens: 100,
                parallel: None,
            }
        }

        async fn send(&self, request: &Request, _: &CallOptions) -> Result<Reply, ModelError> {
            let now = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let refused = self.serial && now > 1;
            if !refused {
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            self.busy.fetch_sub(1, Ordering::SeqCst);
            if refused {
                return Err(ModelError::Server {
                    endpoint: self.endpoint.clone(),
                    status: 503,
                    attempts: 1,
                    detail: "busy".into(),
                });
            }
            Ok(Reply {
                text: format!("t={}", request.temperature.unwrap_or_default()),
                reasoning: String::new(),
                tool_calls: Vec::new(),
                signed: Vec::new(),
                usage: Usage::default(),
                finish: FinishReason::Stop,
                model: "slow".into(),
                latency: Duration::ZERO,
            })
        }
    }

    fn slow(serial: bool, endpoint: &str) -> Arc<Slow> {
        Arc::new(Slow {
            serial,
            busy: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            endpoint: endpoint.to_string(),
        })
    }

    #[tokio::test]
    async fn candidates_are_asked_together_at_their_temperatures() {
        let server = slow(false, "http://together");
        let model: Arc<dyn Model> = server.clone();
        let (asked, concurrency) =
            ask(&model, &Request::default(), &[0.2, 0.5, 0.7], &CancellationToken::new()).await;
        let texts: Vec<String> =
            asked.iter().map(|a| a.reply.as_ref().map(|r| r.text.clone()).unwrap()).collect();
        assert_eq!(texts, ["t=0.2", "t=0.5", "t=0.7"]);
        assert_eq!(concurrency.reached, 3);
        assert_eq!(server.most.load(Ordering::SeqCst), 3);
        assert!(!concurrency.in_turn);
    }

    #[tokio::test]
    async fn a_server_that_takes_one_at_a_time_is_asked_in_turn() {
        let server = slow(true, "http://one-at-a-time");
        let model: Arc<dyn Model> = server.clone();
        let (asked, concurrency) =
            ask(&model, &Request::default(), &[0.2, 0.5, 0.7], &CancellationToken::new()).await;
        assert!(asked.iter().all(|a| a.reply.is_ok()), "every candidate is answered in the end");
        assert!(concurrency.detected && concurrency.in_turn);
        // remembered: the next round does not crowd it
        server.most.store(0, Ordering::SeqCst);
        let (asked, concurrency) =
            ask(&model, &Request::default(), &[0.2, 0.5], &CancellationToken::new()).await;
        assert!(asked.iter().all(|a| a.reply.is_ok()));
        assert_eq!((concurrency.reached, server.most.load(Ordering::SeqCst)), (1, 1));
        assert!(concurrency.in_turn && !concurrency.detected);
    }
}
