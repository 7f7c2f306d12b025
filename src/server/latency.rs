//! How long a user waits on a language server, measured as an editor sees it: a lean LSP
//! client over the server's stdio opens a file (`didOpen` → the first `publishDiagnostics`)
//! and types into it at the top, in the middle of its longest class and at the end (each
//! `didChange` → the first `publishDiagnostics` for that version), for Tokamak and any other
//! server side by side (`tokamak bench latency FILE --against "ruff server"`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

pub use super::lean_client::LatencyError;
use super::lean_client::Server;

/// What to measure.
#[derive(Debug, Clone)]
pub struct LatencyOptions {
    /// Keystrokes typed at each place.
    pub keystrokes: usize,
    /// The pause between a keystroke's diagnostics and the next keystroke.
    pub pause: Duration,
    /// How long one answer may take before the server is said to be silent.
    pub timeout: Duration,
}

impl Default for LatencyOptions {
    fn default() -> Self {
        LatencyOptions { keystrokes: 60, pause: Duration::ZERO, timeout: Duration::from_secs(30) }
    }
}

/// One server's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ServerLatency {
    pub server: String,
    /// `didOpen` → the first diagnostics, in milliseconds.
    pub open_ms: f64,
    pub places: Vec<PlaceLatency>,
    /// The pause between a keystroke's diagnostics and the next keystroke, in milliseconds.
    pub pause_ms: f64,
    /// Keystrokes whose diagnostics never came within the timeout.
    pub missed: usize,
    /// The server's resident memory at the end and at its peak (Linux's `/proc`), in MiB.
    pub rss_mib: Option<f64>,
    pub peak_rss_mib: Option<f64>,
}

/// Keystrokes at one place of the file.
#[derive(Debug, Clone, Serialize)]
pub struct PlaceLatency {
    /// top, middle (of the longest class), end.
    pub place: String,
    /// The 0-based line typed on.
    pub line: u32,
    pub samples: usize,
    pub median_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// Measures the server `command` starts on a copy of `file` in a folder of its own (so
/// every server sees the same lone file, with no project settings).
pub fn measure(
    command: &[String],
    file: &Path,
    options: &LatencyOptions,
) -> Result<ServerLatency, LatencyError> {
    let text = std::fs::read_to_string(file)
        .map_err(|source| LatencyError::Read { path: file.to_path_buf(), source })?;
    let (language, comment) =
        language(file).ok_or_else(|| LatencyError::Language { path: file.to_path_buf() })?;
    let folder =
        tempfile::tempdir().map_err(|source| LatencyError::Read { path: file.to_path_buf(), source })?;
    let name = file.file_name().map_or_else(|| "file".into(), |n| n.to_os_string());
    let copy = folder.path().join(name);
    std::fs::write(&copy, &text).map_err(|source| LatencyError::Read { path: copy.clone(), source })?;
    let uri =
        url::Url::from_file_path(&copy).map_or_else(|()| format!("file://{}", copy.display()), String::from);
    let root = url::Url::from_directory_path(folder.path()).map_or_else(|()| String::new(), String::from);

    let mut server = Server::start(command, folder.path(), options.timeout)?;
    server.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": "bench"}],
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": true}}},
        }),
    )?;
    server.notify("initialized", json!({}))?;

    let started = Instant::now();
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}),
    )?;
    server.diagnostics(&uri, 1)?;
    let open_ms = millis(started.elapsed());

    // the places, typed at from the end up so a line added above does not move the next
    let mut version = 1;
    let mut places = Vec::new();
    let mut missed = 0;
    for (place, line) in places_in(&text, language).into_iter().rev() {
        // a comment line of its own, then keystrokes after its marker
        version += 1;
        server.change(&uri, version, line, 0, &format!("{comment}\n"))?;
        server.diagnostics(&uri, version)?;
        let mut samples = Vec::with_capacity(options.keystrokes);
        for typed in 0..options.keystrokes {
            if !options.pause.is_zero() {
                std::thread::sleep(options.pause);
            }
            version += 1;
            let column = (comment.len() + typed) as u32;
            let sent = Instant::now();
            server.change(&uri, version, line, column, "x")?;
            match server.diagnostics(&uri, version) {
                Ok(()) => samples.push(millis(sent.elapsed())),
                Err(LatencyError::Silent { .. }) => missed += 1,
                Err(other) => return Err(other),
            }
        }
        samples.sort_by(f64::total_cmp);
        places.push(PlaceLatency {
            place: place.to_string(),
            line,
            samples: samples.len(),
            median_ms: percentile(&samples, 0.5),
            p90_ms: percentile(&samples, 0.9),
            p99_ms: percentile(&samples, 0.99),
        });
    }
    places.reverse();
    let (rss_mib, peak_rss_mib) = server.memory();
    server.stop();
    let pause_ms = millis(options.pause);
    Ok(ServerLatency { server: command.join(" "), open_ms, places, pause_ms, missed, rss_mib, peak_rss_mib })
}

/// The figures as a table, each server beside the first (Tokamak) as a ratio of medians.
pub fn table(results: &[ServerLatency]) -> String {
    let mut out = String::new();
    let first = results.first();
    for result in results {
        let ratio = |mine: f64, theirs: Option<f64>| match theirs {
            Some(theirs) if !std::ptr::eq(result, first.unwrap_or(result)) && mine > 0.0 => {
                format!("  (Tokamak's is {:.2}×)", theirs / mine)
            }
            _ => String::new(),
        };
        out.push_str(&format!("{}\n", result.server));
        if result.pause_ms > 0.0 {
            out.push_str(&format!("  (keystrokes {:.0} ms apart)\n", result.pause_ms));
        }
        out.push_str(&format!(
            "  open → diagnostics   {:>9.2} ms{}\n",
            result.open_ms,
            ratio(result.open_ms, first.map(|f| f.open_ms))
        ));
        for place in &result.places {
            let theirs =
                first.and_then(|f| f.places.iter().find(|p| p.place == place.place)).map(|p| p.median_ms);
            out.push_str(&format!(
                "  keystroke, {:<7} median {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  ({} at line {}){}\n",
                place.place,
                place.median_ms,
                place.p90_ms,
                place.p99_ms,
                place.samples,
                place.line + 1,
                ratio(place.median_ms, theirs)
            ));
        }
        if result.missed > 0 {
            out.push_str(&format!("  {} keystroke(s) got no diagnostics in time\n", result.missed));
        }
        if let (Some(rss), Some(peak)) = (result.rss_mib, result.peak_rss_mib) {
            out.push_str(&format!(
                "  memory               {rss:>9.1} MiB resident, {peak:.1} MiB at the peak\n"
            ));
        }
    }
    out
}

fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

/// The value below which `share` of the sorted `samples` fall (nearest rank).
fn percentile(sorted: &[f64], share: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64) * share).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The language id and line-comment marker of a file, by its extension.
fn language(file: &Path) -> Option<(&'static str, &'static str)> {
    match file.extension()?.to_str()? {
        "py" | "pyi" => Some(("python", "#")),
        "ts" | "mts" | "cts" => Some(("typescript", "//")),
        "tsx" => Some(("typescriptreact", "//")),
        "js" | "mjs" | "cjs" => Some(("javascript", "//")),
        "jsx" => Some(("javascriptreact", "//")),
        _ => None,
    }
}

/// Where to type: the top, the middle of the longest class (of the file when it has none),
/// the last line — each moved down past a line that continues onto it (a trailing `\`),
/// where a comment line would end the statement.
fn places_in(text: &str, language: &str) -> Vec<(&'static str, u32)> {
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len().saturating_sub(1);
    let safe = |mut line: usize| {
        while line > 0 && line < last && lines[line - 1].trim_end().ends_with('\\') {
            line += 1;
        }
        line as u32
    };
    let middle = longest_class(&lines, language).unwrap_or((0, lines.len()));
    vec![("top", 0), ("middle", safe((middle.0 + middle.1) / 2)), ("end", safe(last))]
}

/// The longest class's first and last line (by indentation for Python, braces' lines for
/// the others: the next line at the class's indentation or less).
fn longest_class(lines: &[&str], language: &str) -> Option<(usize, usize)> {
    let indent = |line: &str| line.len() - line.trim_start().len();
    let is_class = |line: &str| {
        let code = line.trim_start();
        let code = code.strip_prefix("export ").unwrap_or(code);
        code.starts_with("class ") || (language != "python" && code.starts_with("abstract class "))
    };
    let mut best: Option<(usize, usize)> = None;
    for (start, line) in lines.iter().enumerate().filter(|(_, l)| is_class(l)) {
        let depth = indent(line);
        let end = lines[start + 1..]
            .iter()
            .position(|l| !l.trim().is_empty() && indent(l) <= depth && !l.trim_start().starts_with('}'))
            .map_or(lines.len(), |n| start + 1 + n);
        if best.is_none_or(|(s, e)| end - start > e - s) {
            best = Some((start, end));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(
            (percentile(&samples, 0.5), percentile(&samples, 0.9), percentile(&samples, 0.99)),
            (50.0, 90.0, 99.0)
        );
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn the_middle_is_the_longest_class_and_no_place_follows_a_continuation() {
        let text = "import os\n\nclass A:\n    x = 1\n\nclass B:\n    a = 1\n    b = 2\n    c = 3 + \\\n        4\n    d = 5\n\ny = 1\n";
        let places = places_in(text, "python");
        // B spans lines 5..12; its middle, 8, follows no `\`; the end is the last line
        assert_eq!(places, [("top", 0), ("middle", 8), ("end", 12)]);
        let text = "class A:\n    a = 1 + \\\n        2\n    b = 3\n";
        assert_eq!(places_in(text, "python")[1], ("middle", 3), "moved past the continued line");
    }
}
