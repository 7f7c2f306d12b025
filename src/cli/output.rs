//! What the command line prints: each command's answer as text or JSON on stdout, what went
//! wrong as one line on stderr, and the exit status (0 done or clean, 1 not, 2 bad usage).

use std::path::{Path, PathBuf};

use super::bench::BenchOptions;
use super::check::{self, CheckOptions, Format};
use super::fix::FixOptions;
use super::model_check;
use super::run::RunOptions;
use super::stdio::{errln, out, outln};

/// Exit status of a command that did what it was asked (a run done, a fix clean, a check
/// without errors).
pub const SUCCESS: u8 = 0;
/// Exit status of a command that ended otherwise (not done, not clean, an answer not written).
pub const FAILURE: u8 = 1;
/// Exit status for bad usage (clap uses it too).
pub const USAGE: u8 = 2;

/// Prints `value` as pretty JSON; `false` (and one line on stderr) when it cannot be written.
fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> bool {
    match serde_json::to_string_pretty(value) {
        Ok(json) => {
            outln!("{json}");
            true
        }
        Err(err) => {
            errln!("tokamak: cannot write JSON: {err}");
            false
        }
    }
}

/// A benchmark's result as a table or JSON; its error as one line and the usage status.
pub fn print_bench<T: serde::Serialize>(
    result: anyhow::Result<T>,
    format: Format,
    table: impl Fn(&T) -> String,
) -> u8 {
    match result {
        Ok(result) => {
            match format {
                Format::Text => out!("{}", table(&result)),
                Format::Json => {
                    if !print_json(&result) {
                        return FAILURE;
                    }
                }
            }
            SUCCESS
        }
        Err(err) => {
            errln!("tokamak: {err:#}");
            USAGE
        }
    }
}

/// `tokamak run`: the run's diff and its ending; 1 unless it ended done.
pub async fn run_task(root: &Path, goal: &str, format: Format, options: &RunOptions) -> u8 {
    let result = match super::run::run(root, goal, options).await {
        Ok(result) => result,
        Err(err) => {
            errln!("tokamak: {err:#}");
            return USAGE;
        }
    };
    match format {
        Format::Text => {
            out!("{}", result.diff);
            outln!("[{}] {}", result.report.exit_reason, result.report.summary);
        }
        Format::Json => {
            if !print_json(&result) {
                return FAILURE;
            }
        }
    }
    if super::run::succeeded(&result) { SUCCESS } else { FAILURE }
}

/// `tokamak plan`: the plan as an outline (its repairs on stderr) or JSON.
pub async fn make_plan(root: &Path, goal: &str, format: Format, options: &RunOptions) -> u8 {
    let plan = match super::run::plan(root, goal, options).await {
        Ok(plan) => plan,
        Err(err) => {
            errln!("tokamak: {err:#}");
            return FAILURE;
        }
    };
    match format {
        Format::Text => {
            outln!("Plan {} for: {}", plan.plan_id, plan.goal);
            out!("{}", plan.outline());
            for repair in &plan.repairs {
                errln!("tokamak: repaired the plan: {repair}");
            }
        }
        Format::Json => {
            if !print_json(&plan) {
                return FAILURE;
            }
        }
    }
    SUCCESS
}

/// `tokamak checkpoints`: the checkpoints, newest first.
pub async fn list_checkpoints(root: &Path, format: Format) -> u8 {
    let list = match super::history::checkpoints(root).await {
        Ok(list) => list,
        Err(err) => {
            errln!("tokamak: {err:#}");
            return FAILURE;
        }
    };
    match format {
        Format::Text => out!("{}", crate::history::table(&list)),
        Format::Json => {
            if !print_json(&list) {
                return FAILURE;
            }
        }
    }
    SUCCESS
}

/// `tokamak rollback`: what was restored and what could not be; 1 when anything failed.
pub async fn rollback(root: &Path, id: &str, force: bool) -> u8 {
    match super::history::rollback(root, id, force).await {
        Ok(report) => {
            out!("{}", report.describe("tokamak rollback "));
            if report.failed.is_empty() { SUCCESS } else { FAILURE }
        }
        Err(err) => {
            errln!("tokamak: {err:#}");
            FAILURE
        }
    }
}

/// `tokamak model check`: the model's answer line by line; 2 for bad settings, 1 when it fails.
pub async fn run_model_check(role: Option<&str>, stream: bool) -> u8 {
    let root = crate::config::find_root(Path::new("."));
    match model_check::check_model(&root, role, stream).await {
        Ok(check) => {
            for line in check.lines() {
                outln!("{line}");
            }
            SUCCESS
        }
        Err(model_check::CheckError::Settings(err)) => {
            errln!("tokamak: {err}");
            USAGE
        }
        Err(model_check::CheckError::Model(err @ crate::model::ModelError::Config { .. })) => {
            errln!("tokamak: {err}");
            USAGE
        }
        Err(model_check::CheckError::Model(err)) => {
            errln!("tokamak: {err}");
            FAILURE
        }
    }
}

/// `tokamak check`: the findings like a linter's; 1 when any is an error.
pub async fn run_check(paths: &[PathBuf], format: Format, options: &CheckOptions) -> u8 {
    let report = match check::check(paths, options).await {
        Ok(report) => report,
        Err(err) => {
            errln!("tokamak: {err:#}");
            return USAGE;
        }
    };
    for message in &report.messages {
        errln!("{message}");
    }
    for (path, reason) in &report.skipped {
        errln!("{}: not checked: {reason}", path.display());
    }
    for (path, sentence) in &report.syntax_only {
        errln!("{}: {sentence}", path.display());
    }
    if report.checked == 0 && !report.skipped.is_empty() {
        errln!("tokamak: nothing was checked: every file was skipped");
        return USAGE;
    }
    match format {
        Format::Text => {
            for finding in &report.findings {
                outln!("{}", finding.to_line());
            }
        }
        Format::Json => {
            if !print_json(&report.findings) {
                return FAILURE;
            }
        }
    }
    if report.has_errors() { FAILURE } else { SUCCESS }
}

/// `tokamak fix`: each file's diff and ending with its candidates; 1 unless every file ended clean.
pub async fn run_fix(paths: &[PathBuf], format: Format, options: &FixOptions) -> u8 {
    let results = match super::fix::fix(paths, options).await {
        Ok(results) => results,
        Err(err) => {
            errln!("tokamak: {err:#}");
            return USAGE;
        }
    };
    if results.is_empty() {
        errln!("tokamak: nothing was fixed: no file given could be read as source text");
        return USAGE;
    }
    match format {
        Format::Text => {
            for result in &results {
                out!("{}", result.diff);
            }
            for result in &results {
                outln!("[{}] {}", result.exit_reason, result.summary);
                for candidate in &result.candidates {
                    let outcome = serde_json::to_value(candidate.outcome).unwrap_or_default();
                    outln!(
                        "  attempt {} candidate {} (temperature {}): {} — {}",
                        candidate.attempt,
                        candidate.number,
                        candidate.temperature,
                        outcome.as_str().unwrap_or_default(),
                        candidate.why
                    );
                }
            }
        }
        Format::Json => {
            if !print_json(&results) {
                return FAILURE;
            }
        }
    }
    let clean = results.iter().all(|r| r.exit_reason == crate::agent::ExitReason::Clean);
    if clean { SUCCESS } else { FAILURE }
}

/// `tokamak bench task`.
pub async fn run_bench_task(dir: &Path, format: Format, options: &super::bench_task::TaskBenchOptions) -> u8 {
    match super::bench_task::bench_task(dir, options).await {
        Ok(results) => print_results(&results, format, super::bench_task::table),
        Err(err) => {
            errln!("tokamak: {err:#}");
            USAGE
        }
    }
}

/// A benchmark's results as its table or as JSON.
fn print_results<T: serde::Serialize>(results: &[T], format: Format, table: fn(&[T]) -> String) -> u8 {
    match format {
        Format::Text => out!("{}", table(results)),
        Format::Json => {
            if !print_json(results) {
                return FAILURE;
            }
        }
    }
    SUCCESS
}

/// `tokamak bench fix`.
pub async fn run_bench_fix(dir: &Path, format: Format, options: &BenchOptions) -> u8 {
    match super::bench::bench_fix(dir, options).await {
        Ok(results) => print_results(&results, format, super::bench::table),
        Err(err) => {
            errln!("tokamak: {err:#}");
            USAGE
        }
    }
}
