//! The Python modules the benchmarks type into, generated: classes with methods, functions,
//! comments and strings, at the sizes SPEC §4 names (200, 2 000 and 10 000 lines, 5 MB).
#![allow(dead_code)] // each benchmark is a crate of its own and uses some of these

/// A module of about `lines` lines.
pub fn lines(lines: usize) -> String {
    module(|text| text.lines().count() < lines)
}

/// A module about `bytes` long.
pub fn of_size(bytes: usize) -> String {
    module(|text| text.len() < bytes)
}

/// Whether the benchmark is being measured (`cargo bench` passes `--bench`), not run once
/// each to show it still runs (`cargo test --benches`, `scripts/test`): then the large sizes
/// are left out, which in a debug build take most of a minute to set up and say nothing more.
pub fn measuring() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// The sizes every benchmark of what a user waits on is run at, with their labels: 200,
/// 2 000 and 10 000 lines and 5 MB when measuring, the first two otherwise.
pub fn sizes() -> Vec<(&'static str, String)> {
    let mut sizes = vec![("200-line", lines(200)), ("2 000-line", lines(2_000))];
    if measuring() {
        sizes.push(("10 000-line", lines(10_000)));
        sizes.push(("5 MB", of_size(5 * 1024 * 1024)));
    }
    sizes
}

fn module(more: impl Fn(&str) -> bool) -> String {
    let mut text = String::from("\"\"\"A generated module for benchmarks.\"\"\"\n\nimport os\nimport re\n\n");
    let mut n = 0;
    while more(&text) {
        text.push_str(&format!(
            "\n\nclass Record{n}:\n    \"\"\"Holds record number {n}.\"\"\"\n\n    def __init__(self, name: str, value: int = {n}) -> None:\n        self.name = name\n        self.value = value\n\n    def describe(self) -> str:\n        # explain the record\n        return f\"{{self.name}}: {{self.value}} ({n})\"\n\n\ndef make_record_{n}(items: list[str]) -> Record{n}:\n    total = sum(len(item) for item in items if re.match(r\"\\w+\", item))\n    return Record{n}(os.sep.join(items), total)\n"
        ));
        n += 1;
    }
    text
}

/// The first line at or after `from` that starts with `prefix` (`from` itself when none does).
pub fn line_from(text: &str, from: usize, prefix: &str) -> usize {
    text.lines().enumerate().skip(from).find(|(_, l)| l.starts_with(prefix)).map_or(from, |(n, _)| n)
}

/// The `share` percentile of sorted samples (nearest rank).
pub fn percentile(sorted: &[f64], share: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// An editor that takes what is published and said and drops it.
pub struct Quiet;

#[async_trait::async_trait]
impl tokamak::editor::Editor for Quiet {
    async fn publish_diagnostics(
        &self,
        _: &tokamak::workspace::DocumentSnapshot,
        _: Vec<tokamak::observer::Diagnostic>,
    ) {
    }
    async fn clear_diagnostics(&self, _: &url::Url) {}
    async fn show_message(&self, _: tokamak::editor::MessageLevel, _: String) {}
}
