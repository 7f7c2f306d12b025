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

#[test]
fn only_the_acp_layer_knows_the_agent_client_protocol() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let offenders: Vec<_> = files
        .iter()
        .filter(|path| !path.starts_with(root.join("acp")))
        .filter(|path| std::fs::read_to_string(path).unwrap_or_default().contains("agent_client_protocol"))
        .map(|path| path.display().to_string())
        .collect();
    assert!(offenders.is_empty(), "ACP types outside src/acp: {offenders:?}");
    // and the ACP front end knows no LSP
    let mut acp = Vec::new();
    rust_files(&root.join("acp"), &mut acp);
    assert!(!acp.is_empty(), "src/acp exists");
    for path in acp {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            !text.contains("tower_lsp") && !text.contains("lsp_types"),
            "LSP types in {}",
            path.display()
        );
    }
}

/// A room of the house: a folder of `src/` or a file at its top, by name (`agent`, `editor`).
fn room_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file);
    let first = relative.components().next().map(|c| c.as_os_str().to_string_lossy().to_string());
    first.unwrap_or_default().trim_end_matches(".rs").to_string()
}

/// The rooms each room names through `crate::…`, tests included.
fn imports(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let rooms: std::collections::BTreeSet<String> = files.iter().map(|f| room_of(src, f)).collect();
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for file in &files {
        let room = room_of(src, file);
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let uses = out.entry(room.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            let name: String = text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name != room && rooms.contains(&name) {
                uses.insert(name);
            }
        }
    }
    out
}

/// The "may use" column of `docs/ARCHITECTURE.md`'s module table, by room: of each
/// comma-separated entry, the name before any parenthesis (`observer (open documents' text)`
/// is `observer`); crates and words that are no room are left out by the caller.
fn map(architecture: &str) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeMap::new();
    for line in architecture.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        let (Some(names), Some(may_use)) = (cells.first(), cells.last()) else { continue };
        let mut entries = Vec::new();
        let (mut depth, mut current) = (0usize, String::new());
        for c in may_use.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => entries.push(std::mem::take(&mut current)),
                _ if depth == 0 => current.push(c),
                _ => {}
            }
        }
        entries.push(current);
        let allowed: std::collections::BTreeSet<String> = entries
            .iter()
            .map(|e| e.trim().trim_matches('`').to_string())
            .filter(|e| !e.is_empty())
            .collect();
        for name in names.split(", ") {
            let name = name.trim().trim_matches('`').trim_end_matches('/').trim_end_matches(".rs");
            out.insert(name.to_string(), allowed.clone());
        }
    }
    out
}

/// The module table of `docs/ARCHITECTURE.md` is the house's real map: each room's "may use"
/// names exactly the rooms it imports (no more, no less), and no two rooms import each other.
#[test]
fn the_architecture_map_is_exactly_the_imports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let imports = imports(&root.join("src"));
    let architecture = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let map = map(&architecture);
    let rooms: std::collections::BTreeSet<&String> = imports.keys().collect();
    let mut wrong = Vec::new();
    for (room, uses) in &imports {
        if matches!(room.as_str(), "lib" | "main") {
            continue;
        }
        let Some(allowed) = map.get(room) else {
            wrong.push(format!("{room}: no row in the module table"));
            continue;
        };
        let listed: std::collections::BTreeSet<&String> =
            allowed.iter().filter(|a| rooms.contains(a)).collect();
        for used in uses.iter().filter(|u| !listed.contains(u)) {
            wrong.push(format!("{room} imports {used}, which its row does not list"));
        }
        for extra in listed.iter().filter(|l| !uses.contains(**l)) {
            wrong.push(format!("{room} lists {extra}, which it does not import"));
        }
        for used in uses {
            if imports.get(used).is_some_and(|theirs| theirs.contains(room)) {
                wrong.push(format!("{room} and {used} import each other"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md's module table and the code disagree:\n{}",
        wrong.join("\n")
    );
}
