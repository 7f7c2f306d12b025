//! The audit log (SPEC G5): one JSON-lines file per run under the project's cache folder —
//! phase changes, prompts' token counts, every action with its arguments and a summary of
//! its result, edits as diff stats, diagnostics counts, the exit reason. Secrets never reach
//! it: every line is scrubbed of the values of the environment's key variables.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::sync::lock;

/// One run's log. Writing never fails the run: a log that cannot be written is reported
/// once in Tokamak's own log and then dropped.
#[derive(Debug)]
pub struct AuditLog {
    path: Option<PathBuf>,
    file: Mutex<Option<std::fs::File>>,
    run_id: String,
    secrets: Vec<String>,
}

impl AuditLog {
    /// Creates `<dir>/<time>-<run_id>.jsonl`. `key_variables`: environment variables that hold
    /// keys although their names do not say so (the configured `api_key_env`).
    pub fn create(dir: &Path, run_id: &str, key_variables: &[String]) -> AuditLog {
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string().replace(':', "");
        let path = dir.join(format!("{stamp}-{run_id}.jsonl"));
        let file = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::OpenOptions::new().create(true).append(true).open(&path));
        let file = match file {
            Ok(file) => Some(file),
            Err(err) => {
                tracing::warn!("no audit log for {run_id}: cannot write {}: {err}", path.display());
                None
            }
        };
        AuditLog {
            path: file.as_ref().map(|_| path),
            file: Mutex::new(file),
            run_id: run_id.to_string(),
            secrets: secrets_in_environment(key_variables),
        }
    }

    /// A log that records nothing (no workspace folder).
    pub fn disabled(run_id: &str) -> AuditLog {
        AuditLog { path: None, file: Mutex::new(None), run_id: run_id.to_string(), secrets: Vec::new() }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Appends `{"time", "run_id", "event", …fields}`.
    pub fn record(&self, event: &str, fields: Value) {
        let mut guard = lock(&self.file);
        let Some(file) = guard.as_mut() else {
            return;
        };
        let mut line = json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "run_id": self.run_id,
            "event": event,
        });
        if let (Some(line), Value::Object(fields)) = (line.as_object_mut(), fields) {
            line.extend(fields);
        }
        let mut text = line.to_string();
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "[redacted]");
            }
        }
        text.push('\n');
        if let Err(err) = file.write_all(text.as_bytes()) {
            tracing::warn!("the audit log of {} stopped: {err}", self.run_id);
            *guard = None;
        }
    }
}

/// Whether an environment variable holds a secret by its name: API keys, tokens, secrets,
/// passwords.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_SECRET_KEY", "_ACCESS_KEY"]
        .iter()
        .any(|suffix| upper.ends_with(suffix))
        || ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "API_KEY", "TOKEN"].contains(&upper.as_str())
}

/// The values of every secret-named variable (long enough to be worth scrubbing).
fn secrets_in_environment(key_variables: &[String]) -> Vec<String> {
    let mut secrets: Vec<String> = std::env::vars()
        .filter(|(name, value)| (is_secret_name(name) || key_variables.contains(name)) && value.len() >= 6)
        .map(|(_, value)| value)
        .collect();
    // longest first, so one secret that contains another is scrubbed whole
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// The audit logs in `dir`, oldest first.
pub fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

/// Removes all but the newest `keep` logs, and those older than `max_age`. Returns how many.
pub fn prune(dir: &Path, keep: usize, max_age: std::time::Duration) -> usize {
    let logs = logs(dir);
    let surplus = logs.len().saturating_sub(keep);
    let now = SystemTime::now();
    let mut removed = 0;
    for (index, log) in logs.iter().enumerate() {
        let old = std::fs::metadata(log)
            .and_then(|m| m.modified())
            .is_ok_and(|modified| now.duration_since(modified).is_ok_and(|age| age > max_age));
        if (index < surplus || old) && std::fs::remove_file(log).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_lines_and_prunes() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::create(dir.path(), "tokamak-run-1", &[]);
        log.record("phase", json!({"from": "idle", "to": "executing"}));
        log.record("action", json!({"action": "read", "ok": true}));
        let text = std::fs::read_to_string(log.path().unwrap()).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "phase");
        assert_eq!(lines[0]["run_id"], "tokamak-run-1");
        assert_eq!(lines[1]["action"], "read");
        assert!(lines[1]["time"].as_str().unwrap().ends_with('Z'));

        for index in 0..4 {
            std::fs::write(dir.path().join(format!("2020-0{index}-run.jsonl")), "{}\n").unwrap();
        }
        assert_eq!(prune(dir.path(), 2, std::time::Duration::from_secs(3600)), 3);
        assert_eq!(logs(dir.path()).len(), 2);
        assert!(
            is_secret_name("GITHUB_TOKEN") && is_secret_name("openai_api_key") && !is_secret_name("PATH")
        );
    }
}
