//! Before the run changes a file it has seen (SPEC G3–G4): how far the file drifted since —
//! the user's typing, another program, a checkout — and how sure the run still is of it.
//! Drift: minor (whitespace, comments) is absorbed; moderate (code inside definitions, a
//! signature) has the change made on the file's current text only where it still applies,
//! and shown the text otherwise; major (definitions added, removed or renamed, the file gone)
//! asks the user whether the step goes on, and stops the run when nobody says yes.
//! Confidence: 100 per file at the start, lowered by drift, edits that did not apply, errors a
//! step left and edits undone; under 80 a change is made only where it applies exactly, with
//! the file shown again otherwise; under 40 the user is asked before the next change, and
//! the run stops when nobody says yes. Every drift and every change of confidence is audited
//! and told to whoever listens (`tokamak.status`).

use std::path::Path;

use crate::edit::Block;

use serde_json::json;

use super::{Confined, Executor, LimitHit, Origin, Request, Stop};
use crate::context::{Drift, Fingerprint};
use crate::sync::lock;

/// Confidence at which a change is made only where it applies exactly.
pub const REREAD_BELOW: i32 = 80;
/// Confidence at which the user is asked before the next change.
pub const ASK_BELOW: i32 = 40;
/// Dependents of a drifted file named at most.
const MAX_DEPENDENTS: usize = 5;
/// The action a question about going on is asked as (front ends show its summary).
pub const GO_ON: &str = "go_on";

/// Told each file's new confidence (its workspace-relative path, the score, why).
pub type ConfidenceListener = Box<dyn Fn(&str, i32, &str) + Send + Sync>;

/// How sure the run is of one file.
#[derive(Debug, Clone)]
pub(super) struct Confidence {
    pub score: i32,
    /// Why it fell, oldest first.
    pub reasons: Vec<String>,
}

impl Default for Confidence {
    fn default() -> Self {
        Confidence { score: 100, reasons: Vec::new() }
    }
}

/// What grounding a change found.
#[derive(Debug, Default)]
pub(super) struct Grounded {
    /// The file drifted since the run saw it: what to tell the model with the result.
    pub drift: Option<(Drift, String)>,
    /// The change must apply exactly (confidence under [`REREAD_BELOW`]).
    pub exact_only: bool,
}

impl Executor {
    /// Before a change to `confined`, whose text is now `now` (`None`: absent): its drift
    /// since the run last saw it, handled by severity, and the run's confidence in it.
    /// `whole`: the change replaces, deletes or moves the whole file (the verb, "replaced"):
    /// any drift refuses it until the model reads the file again, since a whole new text is
    /// only as good as the text it was made from. What the run knows of the file changes only
    /// where the model is shown its text.
    pub(super) async fn ground(
        &self,
        confined: &Confined,
        now: Option<&str>,
        whole: Option<&str>,
    ) -> Result<Grounded, Stop> {
        let mut grounded = Grounded::default();
        let path = &confined.path;
        let (seen, unread) = {
            let state = lock(&self.state);
            (state.seen.get(path).cloned(), state.unread.get(path).copied())
        };
        if let Some(seen) = seen {
            let current = now.map(|text| self.fingerprint(path, text));
            let (drift, what) = match &seen {
                Some(before) => before.drift(current.as_ref()),
                None if current.is_none() => (Drift::None, String::new()),
                None => (Drift::Major, "it was created".to_string()),
            };
            let same_text = matches!((&seen, &current), (Some(was), Some(is)) if was.sha256 == is.sha256);
            if drift != Drift::None && same_text {
                // only its time changed: nothing to tell the model, who has this very text
                self.note_drift(confined, drift, &what, "absorbed");
                lock(&self.state).seen.insert(path.clone(), current.clone());
            } else if drift != Drift::None {
                // audited, charged and asked about once per text the file drifted to
                let key = current.as_ref().map_or_else(|| "-".to_string(), |f| f.sha256.clone());
                let first = lock(&self.state).drift_seen.insert(path.clone(), key.clone()) != Some(key);
                if first {
                    let how = match (drift, whole) {
                        (_, Some(_)) => "the change was refused until it is read again",
                        (Drift::Minor, _) => "absorbed",
                        (Drift::Moderate, _) => "changes made only where they still apply exactly",
                        _ => "the user was asked whether to go on",
                    };
                    self.note_drift(confined, drift, &what, how);
                }
                if let Some(verb) = whole {
                    return Err(Stop::Refused(format!(
                        "{} changed since this run last read it ({} drift: {what}), so it was not {verb}; read it again first",
                        confined.relative,
                        drift.as_str()
                    )));
                }
                if drift == Drift::Major && first {
                    let request = Request::Look {
                        action: GO_ON.to_string(),
                        summary: format!(
                            "go on changing {} although it changed under the run ({what})",
                            confined.relative
                        ),
                    };
                    if let Err(reason) = self.ask(&request, Origin::Run).await {
                        return Err(Stop::Limit(LimitHit::Drifted(format!(
                            "{} changed under the run ({what}) and the step was not to go on: {reason}",
                            confined.relative
                        ))));
                    }
                    self.restore_confidence(path, &confined.relative, "the user said to go on");
                }
                grounded.exact_only = drift >= Drift::Moderate;
                // what uses the definitions that changed may no longer match them
                let names = seen.as_ref().map(|s| s.changed_names(current.as_ref())).unwrap_or_default();
                let dependents = self.dependents(path, &names).await;
                if first && !dependents.is_empty() {
                    self.record(
                        "drift_dependents",
                        json!({"file": confined.relative, "dependents": dependents}),
                    );
                }
                let what = match dependents.is_empty() {
                    true => what,
                    false => format!(
                        "{what}; what uses it, which may no longer match it and which you should read again before changing: {}",
                        dependents.join(", ")
                    ),
                };
                grounded.drift = Some((drift, what));
            }
        }
        if let (Some(verb), Some(why)) = (whole, unread) {
            return Err(Stop::Refused(format!(
                "{} {why} since you read it, so it was not {verb}; read it again first",
                confined.relative
            )));
        }
        let confidence = self.confidence_of(path);
        if confidence.score < ASK_BELOW {
            let why = confidence.reasons.join("; ");
            let request = Request::Look {
                action: GO_ON.to_string(),
                summary: format!(
                    "go on changing {}, though Tokamak's confidence in it is {} ({why})",
                    confined.relative, confidence.score
                ),
            };
            if let Err(reason) = self.ask(&request, Origin::Run).await {
                return Err(Stop::Limit(LimitHit::Unsure(format!(
                    "Tokamak's confidence in {} fell to {} ({why}), and the run was not to go on: {reason}",
                    confined.relative, confidence.score
                ))));
            }
            self.restore_confidence(path, &confined.relative, "the user said to go on");
        }
        grounded.exact_only |= self.confidence_of(path).score < REREAD_BELOW;
        Ok(grounded)
    }

    /// Lowers the run's confidence in a file for the errors a step left in it: only for more
    /// than were charged for it before (the same errors seen again cost nothing).
    pub fn doubt_errors(&self, relative: &str, errors: usize) {
        let path = self.root().join(relative);
        let before = lock(&self.state).errors_charged.insert(path.clone(), errors).unwrap_or(0);
        if errors > before {
            self.doubt_path(&path, relative, 10, &format!("the run left {errors} error(s) in it"));
        }
    }

    pub(super) fn doubt_path(&self, path: &Path, relative: &str, cost: i32, why: &str) {
        let (from, to) = {
            let mut state = lock(&self.state);
            let confidence = state.confidence.entry(path.to_path_buf()).or_default();
            let from = confidence.score;
            confidence.score = (confidence.score - cost).max(0);
            confidence.reasons.push(why.to_string());
            (from, confidence.score)
        };
        self.told_confidence(relative, from, to, why);
    }

    fn restore_confidence(&self, path: &Path, relative: &str, why: &str) {
        let from = {
            let mut state = lock(&self.state);
            let confidence = state.confidence.entry(path.to_path_buf()).or_default();
            let from = confidence.score;
            confidence.score = confidence.score.max(REREAD_BELOW - 20);
            confidence.reasons.push(why.to_string());
            from
        };
        self.told_confidence(relative, from, REREAD_BELOW - 20, why);
    }

    fn told_confidence(&self, relative: &str, from: i32, to: i32, why: &str) {
        self.record("confidence", json!({"file": relative, "from": from, "to": to, "why": why}));
        if let Some(listener) = lock(&self.confidence_listener).as_ref() {
            listener(relative, to, why);
        }
    }

    pub(super) fn confidence_of(&self, path: &Path) -> Confidence {
        lock(&self.state).confidence.get(path).cloned().unwrap_or_default()
    }

    /// The run's confidence in each file it doubted (workspace-relative path, score).
    pub fn confidences(&self) -> Vec<(String, i32)> {
        let state = lock(&self.state);
        let mut all: Vec<(String, i32)> = state
            .confidence
            .iter()
            .map(|(path, c)| {
                let relative = path.strip_prefix(self.root()).unwrap_or(path).display().to_string();
                (relative, c.score)
            })
            .collect();
        all.sort();
        all
    }

    /// Tells `listener` of every change of confidence from now on.
    pub fn on_confidence(&self, listener: ConfidenceListener) {
        *lock(&self.confidence_listener) = Some(listener);
    }

    /// The model was shown `path`'s whole `text` in a prompt (the workspace's view): it counts
    /// as read, so a change to the file before the run edits it is drift.
    pub fn shown(&self, path: &Path, text: &str) {
        self.remember(path, Some(text));
    }

    /// Takes a file's text as it is now as what the run knows of it after a change made
    /// around the executor (the run's own fix loop): edits go on against it, but the model has
    /// not seen it, so a whole-file write waits for a read.
    pub fn refresh(&self, relative: &str) {
        let path = self.root().join(relative);
        let text = self.text_of(&path).ok();
        self.remember(&path, text.as_deref());
        lock(&self.state).unread.insert(path, "was changed by the run's own fix");
    }

    /// Whether every block is a SEARCH found exactly in `base` (what a change must be when the
    /// run is unsure of a file).
    pub(super) fn exact_blocks(base: &str, blocks: &[Block]) -> bool {
        blocks.iter().all(|block| match block {
            Block::SearchReplace { search, .. } => !search.is_empty() && base.contains(search.as_str()),
            Block::WholeFile { .. } => false,
        })
    }

    /// A drift met: audited, kept for the ending with what became of it (`how`), and charged
    /// to the run's confidence in the file.
    fn note_drift(&self, confined: &Confined, drift: Drift, what: &str, how: &str) {
        self.record("drift", json!({"file": confined.relative, "severity": drift.as_str(), "what": what}));
        lock(&self.state).drift.push(format!(
            "{}: {} drift ({what}); {how}",
            confined.relative,
            drift.as_str()
        ));
        self.doubt_path(
            &confined.path,
            &confined.relative,
            drift.cost(),
            &format!("changed under the run: {what}"),
        );
    }

    /// The places that use `names` of `path` (calls, and imports of the file), as `file:line`,
    /// at most [`MAX_DEPENDENTS`]; the files among them the run has read must be read again
    /// before a whole new text is written over them.
    async fn dependents(&self, path: &Path, names: &[String]) -> Vec<String> {
        let Some(live) = self.context.index.as_ref().filter(|_| !names.is_empty()) else {
            return Vec::new();
        };
        let found = {
            let index = live.current().await;
            crate::context::impact(&index, &[(path.to_path_buf(), names.to_vec())])
        };
        let mut places: Vec<(std::path::PathBuf, usize)> = found
            .callers
            .iter()
            .map(|c| (c.path.clone(), c.line))
            .chain(found.importers.iter().cloned())
            .filter(|(file, _)| file != path)
            .collect();
        places.sort();
        places.dedup_by(|a, b| a.0 == b.0);
        places.truncate(MAX_DEPENDENTS);
        let mut state = lock(&self.state);
        places
            .into_iter()
            .map(|(file, line)| {
                if state.seen.contains_key(&file) {
                    state.unread.insert(
                        file.clone(),
                        "may no longer match a file it uses, which changed under the run,",
                    );
                }
                let relative = file.strip_prefix(self.root()).unwrap_or(&file).display().to_string();
                format!("{relative}:{}", line + 1)
            })
            .collect()
    }

    pub(super) fn fingerprint(&self, path: &Path, text: &str) -> Fingerprint {
        let open = url::Url::from_file_path(path).ok().and_then(|uri| self.context.observer.snapshot(&uri));
        Fingerprint::of(path, text, open.is_none())
    }
}
