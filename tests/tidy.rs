//! House rules checked on every test run: each Rust file says what it is for in a `//!`
//! first line.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "found only {files:?}");
    let missing: Vec<_> = files
        .iter()
        .filter(|path| !std::fs::read_to_string(path).unwrap_or_default().starts_with("//!"))
        .map(|path| path.strip_prefix(root).unwrap_or(path).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not start with a `//!` line saying what they are for: {missing:?}"
    );
}

#[test]
fn only_the_server_layer_knows_the_protocol() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let offenders: Vec<_> = files
        .iter()
        .filter(|path| !path.starts_with(root.join("server")))
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.contains("tower_lsp") || text.contains("lsp_types")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(offenders.is_empty(), "LSP types outside src/server: {offenders:?}");
}
