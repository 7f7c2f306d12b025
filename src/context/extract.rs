//! What one file says for the index: its definitions (with their container and signature),
//! its imports (module and names) and its call sites (the called name and the definition
//! it is made from), read from its tree-sitter tree.

use ropey::Rope;
use tree_sitter::{Node, Parser, Tree};

use crate::language::{Imported, Nodes};
use crate::syntax::{Symbol, SymbolKind, node_symbols, own_symbol};
use crate::text::Language;

/// Deeper than this the tree is not searched (bounded recursion on pathological input).
const MAX_DEPTH: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Definition {
    pub name: String,
    pub kind: SymbolKind,
    /// The enclosing definition's name (`User` for `User.validate`).
    pub container: Option<String>,
    /// Zero-based lines, first and last.
    pub lines: (usize, usize),
    pub signature: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Import {
    /// As written: `os.path`, `.models`, `./util`, `react`.
    pub module: String,
    /// The names it brings in (`from m import a, b` → `a`, `b`; `import { x as y }` → `y`);
    /// empty for `import m`.
    pub names: Vec<String>,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    /// The called name: `f` for `f()`, `validate` for `user.validate()`, `User` for
    /// `new User()`.
    pub name: String,
    /// The object it is called on, when it is a plain name (`user` in `user.validate()`).
    pub receiver: Option<String>,
    pub line: usize,
    /// The innermost definition the call is in (`None`: at top level).
    pub caller: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileFacts {
    pub definitions: Vec<Definition>,
    pub imports: Vec<Import>,
    pub calls: Vec<Call>,
}

/// The facts of `text` in `language`; `None` for a language Tokamak does not parse.
pub fn facts(language: Language, text: &str) -> Option<FileFacts> {
    let mut parser = Parser::new();
    parser.set_language(&language.grammar()?).ok()?;
    let tree = parser.parse(text, None)?;
    Some(facts_of_tree(&tree, text, language))
}

/// The facts of a parsed text: its pieces' facts, one after another (what an update after an
/// edit recomputes only where the text changed: `pieces.rs`).
pub fn facts_of_tree(tree: &Tree, text: &str, language: Language) -> FileFacts {
    let rope = Rope::from_str(text);
    let mut out = FileFacts::default();
    for piece in pieces(tree, text, language) {
        piece.facts_into(text, &rope, &mut out);
    }
    out
}

/// A top-level statement or definition longer than this many lines is read as its header and
/// each statement of its body, so that an edit inside it reads one statement again.
const SPLIT_LINES: usize = 50;

/// A piece of a file that the index reads on its own: a top-level statement; or, of a long
/// top-level class or function, its header or one statement of its body. The pieces cover the
/// text from start to end, each from its node's start to the next one's.
pub struct Piece<'t> {
    pub start: usize,
    pub end: usize,
    /// The line its node starts on.
    pub row: usize,
    node: Node<'t>,
    language: Language,
    role: Role<'t>,
}

enum Role<'t> {
    Whole,
    /// A long definition but its body (what the members say is theirs).
    Header {
        body: Node<'t>,
    },
    /// One statement of a long definition's body, and that definition.
    Member {
        container: String,
        kind: SymbolKind,
    },
}

/// The pieces of a parsed text in `language`, in order.
pub fn pieces<'t>(tree: &'t Tree, text: &str, language: Language) -> Vec<Piece<'t>> {
    let mut nodes: Vec<(Node<'t>, Role<'t>)> = Vec::new();
    let root = tree.root_node();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        match language.nodes().and_then(|grammar| split(grammar, node, text)) {
            Some((body, container, kind)) => {
                nodes.push((node, Role::Header { body }));
                let mut members = body.walk();
                for member in body.named_children(&mut members) {
                    nodes.push((member, Role::Member { container: container.clone(), kind }));
                }
            }
            None => nodes.push((node, Role::Whole)),
        }
    }
    let mut pieces: Vec<Piece<'t>> = Vec::with_capacity(nodes.len());
    for (node, role) in nodes {
        let start = if pieces.is_empty() { 0 } else { node.start_byte().min(text.len()) };
        if let Some(last) = pieces.last_mut() {
            last.end = start.max(last.start);
        }
        pieces.push(Piece { start, end: text.len(), row: node.start_position().row, node, language, role });
    }
    pieces
}

/// The body, name and kind of a long top-level definition whose body holds statements.
fn split<'t>(grammar: &Nodes, node: Node<'t>, text: &str) -> Option<(Node<'t>, String, SymbolKind)> {
    if node.end_position().row - node.start_position().row < SPLIT_LINES {
        return None;
    }
    let definition = grammar.unwrapped(node)?;
    let kind = match grammar.defines(definition.kind(), None)? {
        kind @ (SymbolKind::Class | SymbolKind::Function) => kind,
        _ => return None,
    };
    let body = definition.child_by_field_name("body")?;
    let name = definition.child_by_field_name("name")?;
    let name = text.get(name.byte_range())?.to_string();
    (body.named_child_count() > 0 && !name.is_empty()).then_some((body, name, kind))
}

impl Piece<'_> {
    /// What tells this piece from another: what it is, what it is inside, the shape of its
    /// tree and its text. A piece with a syntax error is never the same as another: how
    /// tree-sitter recovers from an error depends on what is around it, not only on the
    /// piece's own text.
    pub fn key(&self, text: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        static UNIQUE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        if self.node.has_error() || self.node.is_error() {
            UNIQUE.fetch_add(1, std::sync::atomic::Ordering::Relaxed).hash(&mut hasher);
        }
        self.node.kind_id().hash(&mut hasher);
        self.node.descendant_count().hash(&mut hasher);
        match &self.role {
            Role::Whole => 0u8.hash(&mut hasher),
            Role::Header { .. } => 1u8.hash(&mut hasher),
            Role::Member { container, kind } => {
                2u8.hash(&mut hasher);
                container.hash(&mut hasher);
                kind.hash(&mut hasher);
            }
        }
        text.get(self.start..self.end).unwrap_or_default().hash(&mut hasher);
        hasher.finish()
    }

    /// For a long definition's header, the last line of the definition, which is its last
    /// member's (`pieces.rs` sets it after moving the members); `None` for other pieces.
    pub fn header_end_row(&self, rope: &Rope) -> Option<usize> {
        let Role::Header { .. } = self.role else { return None };
        let node = match self.language.nodes()?.exported(self.node) {
            Some(declaration) => declaration,
            None => self.node,
        };
        let end = node.end_byte().min(rope.len_bytes());
        Some(rope.byte_to_line(end.saturating_sub(1)))
    }

    /// Appends this piece's facts to `out`, with lines counted from the start of the file.
    pub fn facts_into(&self, text: &str, rope: &Rope, out: &mut FileFacts) {
        let language = self.language;
        let Some(grammar) = language.nodes() else { return };
        match &self.role {
            Role::Whole => {
                let symbols = node_symbols(self.node, rope, language, None);
                flatten(&symbols, None, rope, &mut out.definitions);
                Walk { text, grammar, out, definitions: Vec::new() }.tree(self.node, None);
            }
            Role::Header { body } => {
                // a decorated definition's symbol spans its decorators, as in the whole tree
                let definition = grammar.exported(self.node).unwrap_or(self.node);
                if let Some(symbol) = own_symbol(definition, rope, language) {
                    flatten(std::slice::from_ref(&symbol), None, rope, &mut out.definitions);
                }
                Walk { text, grammar, out, definitions: Vec::new() }.tree(self.node, Some(body.id()));
            }
            Role::Member { container, kind } => {
                let symbols = node_symbols(self.node, rope, language, Some(*kind));
                flatten(&symbols, Some(container), rope, &mut out.definitions);
                Walk { text, grammar, out, definitions: vec![container.clone()] }.tree(self.node, None);
            }
        }
    }
}

fn flatten(symbols: &[Symbol], container: Option<&str>, rope: &Rope, out: &mut Vec<Definition>) {
    for symbol in symbols {
        let line = |offset: usize| rope.byte_to_line(offset.min(rope.len_bytes()));
        out.push(Definition {
            name: symbol.name.clone(),
            kind: symbol.kind,
            container: container.map(str::to_string),
            lines: (line(symbol.range.start), line(symbol.range.end.saturating_sub(1))),
            signature: symbol.signature.clone(),
        });
        flatten(&symbol.children, Some(&symbol.name), rope, out);
    }
}

struct Walk<'a> {
    text: &'a str,
    grammar: &'static Nodes,
    out: &'a mut FileFacts,
    /// The definitions the walk is inside, innermost last.
    definitions: Vec<String>,
}

impl Walk<'_> {
    /// Visits every node once in document order with one cursor (a cursor per node costs
    /// more than the visit), keeping the enclosing definitions' names; `skip` and what it
    /// holds are left out.
    fn tree(&mut self, root: Node<'_>, skip: Option<usize>) {
        let mut cursor = root.walk();
        let mut depth = 0usize;
        // the depth at which each name in `definitions` was entered
        let mut entered: Vec<usize> = Vec::new();
        loop {
            let node = cursor.node();
            let skipped = skip == Some(node.id());
            if !skipped {
                if self.grammar.is_import(node.kind()) {
                    self.import(node);
                } else if let Some(field) = self.grammar.callee_field(node.kind()) {
                    self.call(node, field);
                }
            }
            if let Some(name) = self.defines(node).filter(|_| !skipped) {
                self.definitions.push(name);
                entered.push(depth);
            }
            if !skipped && depth < MAX_DEPTH && cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            // leave this node, and every ancestor whose last child it was
            loop {
                if entered.last() == Some(&depth) {
                    entered.pop();
                    self.definitions.pop();
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
                depth -= 1;
            }
        }
    }

    /// The name a node defines (a class, a function or a method; `const f = () => …`).
    fn defines(&self, node: Node<'_>) -> Option<String> {
        let named = match self.grammar.defines(node.kind(), None) {
            Some(SymbolKind::Class | SymbolKind::Function | SymbolKind::Method) => true,
            Some(_) => false,
            None => self.grammar.bound_function(node).is_some(),
        };
        named.then(|| node.child_by_field_name("name")).flatten().map(|n| self.slice(n).to_string())
    }

    fn slice(&self, node: Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or_default()
    }

    fn call(&mut self, node: Node<'_>, field: &str) {
        let Some(callee) = node.child_by_field_name(field) else { return };
        let (name, receiver) = if callee.kind() == self.grammar.identifier {
            (self.slice(callee).to_string(), None)
        } else if let Some(property) = self.grammar.property_field(callee.kind()) {
            let Some(property) = callee.child_by_field_name(property) else { return };
            let receiver = callee
                .child_by_field_name("object")
                .filter(|object| self.grammar.receivers.contains(&object.kind()))
                .map(|object| self.slice(object).to_string());
            (self.slice(property).to_string(), receiver)
        } else {
            return;
        };
        if name.is_empty() {
            return;
        }
        let line = node.start_position().row;
        self.out.calls.push(Call { name, receiver, line, caller: self.definitions.last().cloned() });
    }

    fn import(&mut self, node: Node<'_>) {
        let line = node.start_position().row;
        for Imported { module, names } in (self.grammar.read_import)(node, self.text) {
            self.out.imports.push(Import { module, names, line });
        }
    }
}

/// The whole-tree reading the pieces must agree with, for tests.
#[cfg(test)]
pub(super) mod tests_support {
    use super::*;

    pub fn flatten(symbols: &[Symbol], rope: &Rope, facts: &mut FileFacts) {
        super::flatten(symbols, None, rope, &mut facts.definitions);
    }

    pub fn walk(tree: &Tree, text: &str, language: Language, facts: &mut FileFacts) {
        let grammar = language.nodes().expect("a parsed language");
        Walk { text, grammar, out: facts, definitions: Vec::new() }.tree(tree.root_node(), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(facts: &FileFacts) -> Vec<(String, Option<String>, Option<String>)> {
        facts.calls.iter().map(|c| (c.name.clone(), c.receiver.clone(), c.caller.clone())).collect()
    }

    fn s(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn python_definitions_imports_and_calls() {
        let text = "import os.path, json as j\nfrom .models import User, Group as G\nfrom __future__ import annotations\n\n\nclass Login:\n    def check(self, user):\n        return validate(user) and self.cookie.get()\n\n\ndef validate(user):\n    return User(user).ok()\n\n\nvalidate(None)\n";
        let found = super::facts(Language::Python, text).unwrap();
        let defs: Vec<(String, Option<String>, (usize, usize))> =
            found.definitions.iter().map(|d| (d.name.clone(), d.container.clone(), d.lines)).collect();
        assert_eq!(
            defs,
            vec![
                (s("Login"), None, (5, 7)),
                (s("check"), Some(s("Login")), (6, 7)),
                (s("validate"), None, (10, 11))
            ]
        );
        assert_eq!(found.definitions[1].kind, SymbolKind::Method);
        assert_eq!(found.definitions[1].signature, "def check(self, user)");
        let imports: Vec<(String, Vec<String>, usize)> =
            found.imports.iter().map(|i| (i.module.clone(), i.names.clone(), i.line)).collect();
        assert_eq!(
            imports,
            vec![
                (s("os.path"), vec![], 0),
                (s("json"), vec![s("j")], 0),
                (s(".models"), vec![s("User"), s("G")], 1),
                (s("__future__"), vec![s("annotations")], 2),
            ]
        );
        assert_eq!(
            calls(&found),
            vec![
                (s("validate"), None, Some(s("check"))),
                (s("get"), None, Some(s("check"))),
                (s("ok"), None, Some(s("validate"))),
                (s("User"), None, Some(s("validate"))),
                (s("validate"), None, None),
            ]
        );
    }

    #[test]
    fn typescript_tsx_and_javascript() {
        let ts = "import React, { useState as state, type FC } from \"react\";\nimport * as path from 'node:path';\nimport './side-effect';\n\nexport class Session {\n  login(user: User): boolean {\n    return this.check(user) && new Cookie(user).valid();\n  }\n}\n\nexport const logout = (s: Session) => s.login(null);\n";
        let found = super::facts(Language::TypeScript, ts).unwrap();
        let imports: Vec<(String, Vec<String>)> =
            found.imports.iter().map(|i| (i.module.clone(), i.names.clone())).collect();
        assert_eq!(
            imports,
            vec![
                (s("react"), vec![s("FC"), s("React"), s("state")]),
                (s("node:path"), vec![s("path")]),
                (s("./side-effect"), vec![]),
            ]
        );
        assert!(
            found.definitions.iter().any(|d| d.name == "login" && d.container.as_deref() == Some("Session"))
        );
        assert_eq!(
            calls(&found),
            vec![
                (s("check"), Some(s("this")), Some(s("login"))),
                (s("valid"), None, Some(s("login"))),
                (s("Cookie"), None, Some(s("login"))),
                (s("login"), Some(s("s")), Some(s("logout"))),
            ]
        );
        let tsx = "import { Button } from './ui';\nexport function App() {\n  return <Button onClick={() => track('x')} />;\n}\n";
        let found = super::facts(Language::Tsx, tsx).unwrap();
        assert_eq!(calls(&found), vec![(s("track"), None, Some(s("App")))]);
        let js = "const { parse } = require('./parser');\nfunction run(x) { return parse(x); }\n";
        let found = super::facts(Language::JavaScript, js).unwrap();
        assert_eq!(calls(&found), vec![(s("require"), None, None), (s("parse"), None, Some(s("run")))]);
        assert!(found.definitions.iter().any(|d| d.name == "run"));
        // a field holding an arrow function is a method, and what it calls is called from it
        let field = "class Form {\n  submit = () => {\n    save(this);\n  };\n}\n";
        let found = super::facts(Language::TypeScript, field).unwrap();
        assert!(found.definitions.iter().any(|d| {
            d.name == "submit" && d.kind == SymbolKind::Method && d.container.as_deref() == Some("Form")
        }));
        assert_eq!(calls(&found), vec![(s("save"), None, Some(s("submit")))]);
    }
}
