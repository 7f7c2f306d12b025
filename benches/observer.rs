//! Benchmark of the Observer's own overhead per checker result on a file with 1 000
//! diagnostics: parsing the tool's JSON, storing and merging it with the other sources, and
//! turning the merged set into the LSP publish the editor receives.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use tokamak::checker::{self, ParseContext};
use tokamak::config::SyntaxSettings;
use tokamak::observer::{FileDiagnostics, Origin, SourceEntry, syntax_diagnostics};
use tokamak::server::convert;
use tokamak::text::PositionEncoding;
use tokamak::workspace::DocumentSnapshot;
use url::Url;

/// A 2 000-line file and ruff's JSON for 1 000 findings in it.
fn fixture() -> (String, String) {
    let text: String =
        (0..2_000).map(|i| format!("value_{i} = compute(alpha_{i}, beta)  # 한국어\n")).collect();
    let findings: Vec<String> = (0..1_000)
        .map(|i| {
            let row = i * 2 + 1;
            format!(
                r#"{{"code":"F821","message":"Undefined name `alpha_{i}`","location":{{"row":{row},"column":20}},"end_location":{{"row":{row},"column":28}},"fix":null,"filename":"/p/app.py","noqa_row":{row},"url":"https://docs.astral.sh/ruff/rules/undefined-name"}}"#
            )
        })
        .collect();
    (text, format!("[{}]", findings.join(",")))
}

fn bench_checker_result(c: &mut Criterion) {
    let (text, output) = fixture();
    let uri = Url::parse("file:///p/app.py").unwrap();
    let snapshot = DocumentSnapshot::detached(uri, &text, &SyntaxSettings::default());
    let syntax = syntax_diagnostics(&snapshot);
    c.bench_function("observer: 1000 ruff diagnostics parsed, merged, converted to a publish", |b| {
        b.iter(|| {
            let context = ParseContext {
                rope: &snapshot.rope,
                source: "ruff",
                checked_file: Path::new("/p/app.py"),
                cwd: Path::new("/p"),
            };
            let diagnostics = (checker::find("ruff").unwrap().parse)(black_box(&output), &context).unwrap();
            let mut file = FileDiagnostics::default();
            file.set(
                "tokamak",
                SourceEntry {
                    origin: Origin::Server,
                    version: Some(1),
                    diagnostics: syntax.clone(),
                    failure: None,
                },
            );
            file.set(
                "ruff",
                SourceEntry { origin: Origin::Server, version: Some(1), diagnostics, failure: None },
            );
            let uri = convert::uri(&snapshot.uri).expect("a file URI");
            let published: Vec<_> = file
                .published(&[])
                .iter()
                .map(|d| convert::diagnostic(&uri, &snapshot.rope, d, PositionEncoding::Utf16))
                .collect();
            black_box(serde_json::to_string(&published).unwrap())
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench_checker_result
}
criterion_main!(benches);
