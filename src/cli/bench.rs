//! `tokamak bench fix DIR`: the fix loop on every case of a fix benchmark (such as
//! `fixtures/fixbench`), each in a fresh copy, with a table of what was solved, in how many
//! attempts, for how many tokens and how long. Point it at any model with `--model-url` and
//! `--model` (or the usual settings and environment).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::fix::{FixOptions, fix};
use super::stdio::errln;
use crate::agent::{ExitReason, Tokens};
use crate::observer::checkers::resolve_program;

/// How long a case's verify command may run.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(120);

/// A case's `case.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The broken file, relative to the case folder.
    pub file: String,
    pub language: String,
    /// syntax, name, import, type or lint.
    pub kind: String,
    /// Where the code came from (project, version, path, licence).
    pub origin: String,
    /// What was done to break it.
    pub mutation: String,
    /// A command run in the case folder after the fix; exit status 0 proves it compiles.
    #[serde(default)]
    pub verify: Vec<String>,
}

/// One case's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub kind: String,
    /// The loop ended clean and the verify command passed.
    pub solved: bool,
    pub exit_reason: ExitReason,
    pub attempts: u32,
    pub deterministic_fixes: u32,
    pub tokens: Tokens,
    pub wall_ms: u64,
    /// Why a clean run still does not count: the verify command failed, or the case's
    /// checkers found nothing to fix (not installed?).
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct BenchOptions {
    /// Only cases whose folder name contains this.
    pub filter: Option<String>,
    pub max_attempts: Option<u32>,
    /// Candidate fixes per attempt (`fix.candidates`), where a case has a test command.
    pub candidates: Option<u32>,
    /// `[model]` settings laid over each case's (base_url, model).
    pub model: serde_json::Value,
}

/// Reads every case under `dir` (folders holding a `case.toml`), sorted by name.
pub fn cases(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf, Case)>> {
    manifests(dir, "case.toml", "case")
}

/// Every folder under `dir` holding a manifest `file` (a benchmark's cases or tasks), read,
/// sorted by name; `what` names one in errors.
pub(super) fn manifests<T: serde::de::DeserializeOwned>(
    dir: &Path,
    file: &str,
    what: &str,
) -> anyhow::Result<Vec<(String, PathBuf, T)>> {
    let mut found = Vec::new();
    for entry in
        std::fs::read_dir(dir).map_err(|err| anyhow::anyhow!("cannot read {}: {err}", dir.display()))?
    {
        let path = entry?.path();
        let manifest = path.join(file);
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)?;
        let read: T = toml::from_str(&text)
            .map_err(|err| anyhow::anyhow!("{} is not a valid {what}: {err}", manifest.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        found.push((name, path, read));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// Runs the fix loop on every case (in a temporary copy) and verifies the result.
pub async fn bench_fix(dir: &Path, options: &BenchOptions) -> anyhow::Result<Vec<CaseResult>> {
    // the cases' settings and verify commands are the bench folder's: used only when the user
    // trusts it (each case runs in a temporary copy, which inherits that trust)
    let trusted =
        crate::trust::UserConfig::read().map_err(|err| anyhow::anyhow!("{err}"))?.trusting(dir).is_some();
    if !trusted {
        errln!(
            "tokamak: {} is not trusted, so its cases' verify commands are not run and no case counts as solved; run `tokamak trust {}` to trust it",
            dir.display(),
            dir.display()
        );
    }
    let mut results = Vec::new();
    for (name, folder, case) in cases(dir)? {
        if options.filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let work = tempfile::tempdir()?;
        copy_case(&folder, work.path())?;
        let fix_options = FixOptions {
            max_attempts: options.max_attempts,
            candidates: options.candidates,
            dry_run: false,
            progress: false,
            checkers: None,
            model: options.model.clone(),
            trusted: Some(trusted),
        };
        let file = work.path().join(&case.file);
        let outcome = match fix(std::slice::from_ref(&file), &fix_options).await {
            Ok(outcomes) => outcomes.into_iter().next(),
            Err(err) => {
                // one broken case (bad settings, say) does not lose the others' results
                errln!("tokamak: case {name}: {err:#}");
                None
            }
        };
        let Some(outcome) = outcome else {
            results.push(CaseResult {
                case: name,
                kind: case.kind,
                solved: false,
                exit_reason: ExitReason::Failed,
                attempts: 0,
                deterministic_fixes: 0,
                tokens: Tokens::default(),
                wall_ms: 0,
                note: Some(format!("{} could not be run (see stderr)", case.file)),
            });
            continue;
        };
        let note = if outcome.targets == 0 {
            Some("nothing to fix was found: are the case's checkers installed?".to_string())
        } else if outcome.exit_reason == ExitReason::Clean && !trusted {
            Some("not verified: the bench folder is not trusted".to_string())
        } else if outcome.exit_reason == ExitReason::Clean {
            verify(&case.verify, work.path()).await.err().map(|failure| format!("verify: {failure}"))
        } else {
            None
        };
        results.push(CaseResult {
            case: name,
            kind: case.kind,
            solved: outcome.exit_reason == ExitReason::Clean && note.is_none(),
            exit_reason: outcome.exit_reason,
            attempts: outcome.attempts,
            deterministic_fixes: outcome.deterministic_fixes,
            tokens: outcome.tokens,
            wall_ms: outcome.wall.as_millis() as u64,
            note,
        });
    }
    Ok(results)
}

/// Copies a case's files (not its manifest or the reference solution) and marks the copy as
/// a project root.
fn copy_case(from: &Path, to: &Path) -> anyhow::Result<()> {
    use crate::walk::Copied;
    crate::walk::copy(from, to, &|relative, kind| {
        let name = relative.to_string_lossy();
        let own = name == "case.toml" || name.ends_with(".reference");
        if kind.is_file() && !own { Copied::Copy } else { Copied::Left }
    })?;
    std::fs::create_dir_all(to.join(".git"))?;
    Ok(())
}

/// Runs the verify command; `Err` says why it failed.
pub(super) async fn verify(command: &[String], dir: &Path) -> Result<(), String> {
    let Some((program, args)) = command.split_first() else {
        return Ok(());
    };
    let program = resolve_program(program, dir, true).ok_or_else(|| format!("`{program}` was not found"))?;
    let mut child = tokio::process::Command::new(&program);
    child.args(args).current_dir(dir).kill_on_drop(true);
    match tokio::time::timeout(VERIFY_TIMEOUT, child.output()).await {
        Err(_) => Err(format!("`{}` did not finish in {} s", command.join(" "), VERIFY_TIMEOUT.as_secs())),
        Ok(Err(err)) => Err(format!("cannot run `{}`: {err}", command.join(" "))),
        Ok(Ok(output)) if output.status.success() => Ok(()),
        Ok(Ok(output)) => {
            let text = String::from_utf8_lossy(&output.stdout).into_owned()
                + &String::from_utf8_lossy(&output.stderr);
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("no output").to_string();
            Err(format!("`{}` failed: {first}", command.join(" ")))
        }
    }
}

/// The results as a table, one case a line, then the totals.
pub fn table(results: &[CaseResult]) -> String {
    use std::fmt::Write as _;
    let width = results.iter().map(|r| r.case.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:<6}  {:<6}  {:>8}  {:>6}  {:>10}  {:>8}  {}\n",
        "case", "kind", "solved", "attempts", "prompt", "completion", "wall s", "exit reason"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:<6}  {:>8}  {:>6}  {:>10}  {:>8.1}  {}{}",
            r.case,
            r.kind,
            if r.solved { "yes" } else { "no" },
            if r.deterministic_fixes > 0 && r.attempts == 0 {
                "0 (det)".to_string()
            } else {
                r.attempts.to_string()
            },
            r.tokens.prompt,
            r.tokens.completion,
            r.wall_ms as f64 / 1000.0,
            r.exit_reason,
            r.note.as_deref().map(|note| format!(" ({note})")).unwrap_or_default(),
        );
    }
    let solved = results.iter().filter(|r| r.solved).count();
    let prompt: u64 = results.iter().map(|r| u64::from(r.tokens.prompt)).sum();
    let completion: u64 = results.iter().map(|r| u64::from(r.tokens.completion)).sum();
    let wall: u64 = results.iter().map(|r| r.wall_ms).sum();
    let _ = writeln!(
        out,
        "total: {solved}/{} solved, {prompt} prompt + {completion} completion tokens, {:.1} s",
        results.len(),
        wall as f64 / 1000.0
    );
    let mut kinds: Vec<&str> = results.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    let by_kind: Vec<String> = kinds
        .iter()
        .map(|kind| {
            let all = results.iter().filter(|r| r.kind == *kind).count();
            let solved = results.iter().filter(|r| r.kind == *kind && r.solved).count();
            format!("{kind} {solved}/{all}")
        })
        .collect();
    let _ = writeln!(out, "by kind: {}", by_kind.join(", "));
    out
}
