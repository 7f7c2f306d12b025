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
            text.contains("tower_lsp") || text.contains("lsp_types") || text.contains("ls_types")
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
            !text.contains("tower_lsp") && !text.contains("lsp_types") && !text.contains("ls_types"),
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

type Graph = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

/// A Rust file's code without its comments (`//` to the end of the line, outside strings), so
/// that a path named in a comment is no import.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_string = false;
        let mut previous = ' ';
        let mut cut = line.len();
        for (at, c) in line.char_indices() {
            match c {
                '"' if previous != '\\' => in_string = !in_string,
                '/' if previous == '/' && !in_string => {
                    cut = at - 1;
                    break;
                }
                _ => {}
            }
            previous = c;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// The identifiers that follow each `prefix` in `code`.
fn names_after<'a>(code: &'a str, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
    code.match_indices(prefix).map(move |(at, _)| {
        code[at + prefix.len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
    })
}

/// The rooms each room names through `crate::…`, tests included, comments not.
fn imports(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let rooms: std::collections::BTreeSet<String> = files.iter().map(|f| room_of(src, f)).collect();
    let mut out = Graph::new();
    for file in &files {
        let room = room_of(src, file);
        let code = code_of(&std::fs::read_to_string(file).unwrap_or_default());
        let uses = out.entry(room.clone()).or_default();
        for name in names_after(&code, "crate::") {
            if name != room && rooms.contains(&name) {
                uses.insert(name);
            }
        }
    }
    out
}

/// Inside each room that is a folder, which of its parts (a file, or a folder one level down)
/// names which sibling part: `super::part` from a file of the room's folder, `super::super::
/// part` from one a folder deeper, `crate::room::part` from anywhere in it. The room's
/// `mod.rs` is the room's door, not a part.
fn imports_in_rooms(src: &Path) -> std::collections::BTreeMap<String, Graph> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out: std::collections::BTreeMap<String, Graph> = Default::default();
    for file in &files {
        let relative = file.strip_prefix(src).unwrap_or(file);
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if parts.len() < 2 || parts[1] == "mod" {
            continue;
        }
        let (room, part) = (&parts[0], &parts[1]);
        let folder = src.join(room);
        let is_part = |name: &str| {
            name != part
                && name != "mod"
                && (folder.join(format!("{name}.rs")).is_file() || folder.join(name).is_dir())
        };
        let code = code_of(&std::fs::read_to_string(file).unwrap_or_default());
        let up = match parts.len() {
            2 => "super::".to_string(),
            3 => "super::super::".to_string(),
            _ => String::new(),
        };
        let mut names: Vec<String> = names_after(&code, &format!("crate::{room}::")).collect();
        if !up.is_empty() {
            // `super::super::x` read from a file one level down is not its own `super::x`
            names.extend(
                code.match_indices(up.as_str()).filter(|(at, _)| !code[..*at].ends_with("super::")).map(
                    |(at, _)| {
                        code[at + up.len()..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect()
                    },
                ),
            );
        }
        let uses = out.entry(room.clone()).or_default().entry(part.clone()).or_default();
        uses.extend(names.into_iter().filter(|n| is_part(n)));
    }
    out
}

/// The circles of a graph: each group of two or more nodes that reach one another (Tarjan's
/// strongly connected components), as sorted names.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: std::collections::BTreeMap<&'a str, usize>,
        low: std::collections::BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: std::collections::BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    group.push(top.to_string());
                    if top == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        on_stack: Default::default(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

#[test]
fn the_reading_of_imports_sees_code_and_circles_only() {
    let code = code_of("use crate::a; // see crate::b\n// crate::c\nlet s = \"//\"; crate::d::x();\n");
    let names: Vec<String> = names_after(&code, "crate::").collect();
    assert_eq!(names, ["a", "d"]);
    let graph: Graph = [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"]), ("e", &["e"])]
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect();
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
}

/// No circles in the house: none between rooms (of any length), none between the parts of a
/// room (`context/index ↔ pieces` was one).
#[test]
fn no_room_and_no_part_of_a_room_imports_itself_round_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found: Vec<String> =
        circles(&imports(&src)).iter().map(|c| format!("rooms: {}", c.join(" → "))).collect();
    for (room, parts) in imports_in_rooms(&src) {
        found.extend(circles(&parts).iter().map(|c| format!("inside {room}/: {}", c.join(" → "))));
    }
    assert!(found.is_empty(), "circles in the house:\n{}", found.join("\n"));
}

/// The "may use" column of `docs/ARCHITECTURE.md`'s module table, by room: of each
/// comma-separated entry, the name before any parenthesis (`observer (open documents' text)`
/// is `observer`); crates and words that are no room are left out by the caller.
fn map(architecture: &str) -> Graph {
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
