//! The actions that only look: `read` (a file or some of its lines), `list` (a folder, or
//! the files matching a glob) and `search` (a regex over the files the project does not
//! ignore, with ripgrep's own crates). Open documents are read from the editor's text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkMatch};

use super::{Access, Executor, Stop};
use crate::action::ActionResult;
use crate::text::cut;

/// Entries listed at most.
const MAX_ENTRIES: usize = 500;
/// Matching lines shown at most.
const MAX_MATCHES: usize = 200;
/// A matching line longer than this is cut.
const MAX_LINE: usize = 240;

/// `text`'s lines `span` (1-based, inclusive; clamped), with a header, cut to `max_bytes`.
pub fn show_lines(relative: &str, text: &str, span: Option<(usize, usize)>, max_bytes: usize) -> String {
    let total = text.lines().count();
    let (body, header) = match span {
        None => (text.to_string(), format!("{relative} ({total} lines)")),
        Some((start, end)) => {
            let end = end.min(total);
            if start > total {
                return format!("{relative} has {total} lines; there is no line {start}");
            }
            let body: String = text.split_inclusive('\n').skip(start - 1).take(end + 1 - start).collect();
            (body, format!("{relative} lines {start}-{end} of {total}"))
        }
    };
    let mut out = format!("{header}:\n");
    if body.len() > max_bytes {
        out.push_str(&cut(&body, max_bytes));
        out.push_str("\n(read fewer lines with `lines` to see the part that was cut)");
    } else {
        out.push_str(&body);
    }
    out
}

/// The entries of `dir` (folders end in `/`), or, with `glob`, the files under `dir` whose
/// path relative to it matches (recursively, `.gitignore` respected).
pub fn list(root: &Path, dir: &Path, glob: Option<&str>) -> Result<String, String> {
    let shown = |path: &Path| path.strip_prefix(root).unwrap_or(path).to_string_lossy().to_string();
    if !dir.is_dir() {
        return Err(format!("{} is not a folder", shown(dir)));
    }
    let mut entries = Vec::new();
    match glob {
        None => {
            let read = std::fs::read_dir(dir).map_err(|err| format!("cannot list {}: {err}", shown(dir)))?;
            for entry in read.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if name == ".git" {
                    continue;
                }
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                entries.push(if is_dir { format!("{name}/") } else { name });
            }
        }
        Some(pattern) => {
            let matcher = glob_matcher(pattern)?;
            for path in walk(dir) {
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                if matches(&matcher, pattern, relative) {
                    entries.push(shown(&path));
                }
            }
        }
    }
    entries.sort();
    let total = entries.len();
    let mut out = match glob {
        None => format!(
            "{} ({total} entries):\n",
            if shown(dir).is_empty() { ".".to_string() } else { shown(dir) }
        ),
        Some(pattern) => format!("files matching {pattern} ({total}):\n"),
    };
    for entry in entries.iter().take(MAX_ENTRIES) {
        out.push_str(entry);
        out.push('\n');
    }
    if total > MAX_ENTRIES {
        out.push_str(&format!("[… {} more; narrow the glob to see them]\n", total - MAX_ENTRIES));
    }
    Ok(out)
}

/// Lines matching `pattern` (smart case: case-insensitive unless it has a capital letter) in
/// the files under `root` (or those matching `glob`), as `path:line: text`. `buffers` are
/// searched instead of the disk for open documents.
pub fn search(
    root: &Path,
    pattern: &str,
    glob: Option<&str>,
    buffers: &HashMap<PathBuf, String>,
) -> Result<String, String> {
    let matcher = RegexMatcherBuilder::new()
        .case_smart(true)
        .build(pattern)
        .map_err(|err| format!("{pattern:?} is not a valid regular expression: {err}"))?;
    let filter = glob.map(glob_matcher).transpose()?;
    let mut searcher =
        SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
    let mut found = Vec::new();
    let mut total = 0usize;
    let mut files = 0usize;
    for path in walk(root) {
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        if let (Some(filter), Some(pattern)) = (&filter, glob)
            && !matches(filter, pattern, &relative)
        {
            continue;
        }
        let shown = relative.to_string_lossy().to_string();
        let mut sink = Collect { shown: &shown, found: &mut found, total: &mut total };
        let before = *sink.total;
        let result = match buffers.get(&path) {
            Some(text) => searcher.search_slice(&matcher, text.as_bytes(), &mut sink),
            None => searcher.search_path(&matcher, &path, &mut sink),
        };
        if let Err(err) = result {
            tracing::debug!("search skipped {shown}: {err}");
        }
        if total > before {
            files += 1;
        }
    }
    if total == 0 {
        return Ok(format!(
            "no match for {pattern:?}{}",
            glob.map(|g| format!(" in {g}")).unwrap_or_default()
        ));
    }
    let mut out = format!("{total} matching line(s) in {files} file(s):\n");
    for line in found.iter().take(MAX_MATCHES) {
        out.push_str(line);
        out.push('\n');
    }
    if total > MAX_MATCHES {
        out.push_str(&format!("[… {} more; narrow the pattern or the glob]\n", total - MAX_MATCHES));
    }
    Ok(out)
}

struct Collect<'a> {
    shown: &'a str,
    found: &'a mut Vec<String>,
    total: &'a mut usize,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(
        &mut self,
        _: &grep_searcher::Searcher,
        found: &SinkMatch<'_>,
    ) -> Result<bool, std::io::Error> {
        *self.total += 1;
        if self.found.len() < MAX_MATCHES {
            let line = String::from_utf8_lossy(found.bytes());
            let line = line.trim_end_matches(['\n', '\r']);
            let line: String = if line.chars().count() > MAX_LINE {
                line.chars().take(MAX_LINE).chain("…".chars()).collect()
            } else {
                line.to_string()
            };
            self.found.push(format!("{}:{}: {line}", self.shown, found.line_number().unwrap_or(0)));
        }
        Ok(true)
    }
}

/// The files under `dir` that the project does not ignore (`.gitignore`, `.ignore`; hidden
/// files included, `.git` never), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    crate::walk::project(dir).with_hidden().files().collect()
}

fn glob_matcher(pattern: &str) -> Result<GlobMatcher, String> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|err| format!("{pattern:?} is not a valid glob: {err}"))
}

/// A glob without a `/` matches a file's name anywhere (`*.py`); with one, the whole
/// relative path (`src/**/*.ts`).
fn matches(matcher: &GlobMatcher, pattern: &str, relative: &Path) -> bool {
    if pattern.contains('/') {
        matcher.is_match(relative)
    } else {
        relative.file_name().is_some_and(|name| matcher.is_match(name))
    }
}

/// Bytes of a file shown by one `read` before the rest is cut.
pub(super) const MAX_READ_BYTES: usize = 24 * 1024;

impl Executor {
    pub(super) fn read(&self, raw: &str, lines: Option<(usize, usize)>) -> Result<ActionResult, Stop> {
        let confined = self.confine(raw, Access::Read)?;
        if confined.path.is_dir() {
            return Err(Stop::Refused(format!("{} is a folder; use list", confined.relative)));
        }
        let text = self.text_of(&confined.path)?;
        self.remember(&confined.path, Some(&text));
        let shown = show_lines(&confined.relative, &text, lines, MAX_READ_BYTES);
        Ok(ActionResult::done(shown, format!("read {} ({} bytes)", confined.relative, text.len())))
    }

    pub(super) fn list(&self, dir: Option<&str>, glob: Option<&str>) -> Result<ActionResult, Stop> {
        let confined = self.confine(dir.unwrap_or("."), Access::Read)?;
        let listing = list(self.root(), &confined.path, glob).map_err(Stop::Refused)?;
        let count = listing.lines().count().saturating_sub(1);
        Ok(ActionResult::done(listing, format!("listed {} ({count} entries)", confined.relative)))
    }

    pub(super) fn search(&self, pattern: &str, glob: Option<&str>) -> Result<ActionResult, Stop> {
        let found = search(self.root(), pattern, glob, &self.buffers()).map_err(Stop::Refused)?;
        let summary = found.lines().next().unwrap_or_default().trim_end_matches(':').to_string();
        Ok(ActionResult::done(found, format!("searched {pattern:?}: {summary}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::write(root.join("src/app.py"), "def login(user):\n    return Login(user)\n").unwrap();
        std::fs::write(root.join("src/pkg/util.ts"), "export const login = 1;\n").unwrap();
        std::fs::write(root.join("build/out.py"), "login = 2\n").unwrap();
        std::fs::write(root.join(".git/config"), "login\n").unwrap();
        std::fs::write(root.join("src/data.bin"), b"login\0\x01").unwrap();
        dir
    }

    #[test]
    fn reads_lines_with_a_header() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(show_lines("x.py", text, Some((2, 3)), 1000), "x.py lines 2-3 of 4:\nb\nc\n");
        assert_eq!(show_lines("x.py", text, Some((3, 99)), 1000), "x.py lines 3-4 of 4:\nc\nd\n");
        assert!(show_lines("x.py", text, Some((9, 9)), 1000).contains("there is no line 9"));
        let long: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let shown = show_lines("x.py", &long, None, 1000);
        assert!(shown.contains("cut") && shown.contains("read fewer lines"), "{shown}");
    }

    #[test]
    fn lists_folders_and_globs() {
        let dir = project();
        let root = dir.path();
        let listing = list(root, &root.join("src"), None).unwrap();
        assert_eq!(listing, "src (3 entries):\napp.py\ndata.bin\npkg/\n");
        let listing = list(root, root, Some("*.py")).unwrap();
        assert_eq!(listing, "files matching *.py (1):\nsrc/app.py\n", "build/ is ignored");
        let listing = list(root, root, Some("src/**/*.ts")).unwrap();
        assert!(listing.contains("src/pkg/util.ts"), "{listing}");
        assert!(list(root, &root.join("src/app.py"), None).unwrap_err().contains("not a folder"));
        assert!(list(root, root, Some("[")).unwrap_err().contains("not a valid glob"));
    }

    #[test]
    fn searches_what_the_project_keeps() {
        let dir = project();
        let root = dir.path();
        let found = search(root, "login", None, &HashMap::new()).unwrap();
        assert_eq!(
            found,
            "3 matching line(s) in 2 file(s):\nsrc/app.py:1: def login(user):\nsrc/app.py:2:     return Login(user)\nsrc/pkg/util.ts:1: export const login = 1;\n"
        );
        let found = search(root, "Login", Some("*.py"), &HashMap::new()).unwrap();
        assert_eq!(found, "1 matching line(s) in 1 file(s):\nsrc/app.py:2:     return Login(user)\n");
        let buffers = HashMap::from([(root.join("src/app.py"), "# nothing here\nlogout = 1\n".to_string())]);
        let found = search(root, "log(in|out)", Some("*.py"), &buffers).unwrap();
        assert_eq!(found, "1 matching line(s) in 1 file(s):\nsrc/app.py:2: logout = 1\n", "the buffer wins");
        assert!(search(root, "nothing-like-this", None, &HashMap::new()).unwrap().starts_with("no match"));
        assert!(
            search(root, "(", None, &HashMap::new()).unwrap_err().contains("not a valid regular expression")
        );
    }
}
