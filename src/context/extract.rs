//! What one file says for the index: its definitions (with their container and signature),
//! its imports (module and names) and its call sites (the called name and the definition
//! it is made from), read from its tree-sitter tree.

use ropey::Rope;
use tree_sitter::{Node, Parser, Tree};

use crate::syntax::{Symbol, SymbolKind, document_symbols, grammar};
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
    parser.set_language(&grammar(language)?).ok()?;
    let tree = parser.parse(text, None)?;
    Some(facts_of_tree(&tree, text, language))
}

/// The facts of a parsed text.
pub fn facts_of_tree(tree: &Tree, text: &str, language: Language) -> FileFacts {
    let rope = Rope::from_str(text);
    let symbols = document_symbols(tree, &rope, language);
    let mut out = FileFacts::default();
    flatten(&symbols, None, &rope, &mut out.definitions);
    let mut walk = Walk { text, language, out: &mut out, definitions: Vec::new() };
    walk.tree(tree.root_node());
    out
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
    language: Language,
    out: &'a mut FileFacts,
    /// The definitions the walk is inside, innermost last.
    definitions: Vec<String>,
}

impl Walk<'_> {
    /// Visits every node once in document order with one cursor (a cursor per node costs
    /// more than the visit), keeping the enclosing definitions' names.
    fn tree(&mut self, root: Node<'_>) {
        let mut cursor = root.walk();
        let mut depth = 0usize;
        // the depth at which each name in `definitions` was entered
        let mut entered: Vec<usize> = Vec::new();
        loop {
            let node = cursor.node();
            match node.kind() {
                "import_statement" | "import_from_statement" | "future_import_statement" => self.import(node),
                "call" | "call_expression" => self.call(node, "function"),
                "new_expression" => self.call(node, "constructor"),
                _ => {}
            }
            if let Some(name) = self.defines(node) {
                self.definitions.push(name);
                entered.push(depth);
            }
            if depth < MAX_DEPTH && cursor.goto_first_child() {
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

    /// The name a node defines (a function, class or method; `const f = () => …`).
    fn defines(&self, node: Node<'_>) -> Option<String> {
        match node.kind() {
            "function_definition"
            | "class_definition"
            | "function_declaration"
            | "class_declaration"
            | "method_definition"
            | "generator_function_declaration"
            | "abstract_class_declaration" => {
                node.child_by_field_name("name").map(|n| self.slice(n).to_string())
            }
            // `const f = () => …`: the arrow function is `f`
            "variable_declarator" => node
                .child_by_field_name("value")
                .filter(|v| matches!(v.kind(), "arrow_function" | "function_expression" | "function"))
                .and_then(|_| node.child_by_field_name("name"))
                .map(|n| self.slice(n).to_string()),
            _ => None,
        }
    }

    fn slice(&self, node: Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or_default()
    }

    fn call(&mut self, node: Node<'_>, field: &str) {
        let Some(callee) = node.child_by_field_name(field) else { return };
        let (name, receiver) = match callee.kind() {
            "identifier" => (self.slice(callee).to_string(), None),
            "attribute" | "member_expression" => {
                let property = callee
                    .child_by_field_name("attribute")
                    .or_else(|| callee.child_by_field_name("property"));
                let object = callee.child_by_field_name("object");
                let Some(property) = property else { return };
                let receiver = object
                    .filter(|o| o.kind() == "identifier" || o.kind() == "this")
                    .map(|o| self.slice(o).to_string());
                (self.slice(property).to_string(), receiver)
            }
            _ => return,
        };
        if name.is_empty() {
            return;
        }
        let line = node.start_position().row;
        self.out.calls.push(Call { name, receiver, line, caller: self.definitions.last().cloned() });
    }

    fn import(&mut self, node: Node<'_>) {
        let line = node.start_position().row;
        if self.language == Language::Python {
            self.python_import(node, line);
        } else {
            self.script_import(node, line);
        }
    }

    fn python_import(&mut self, node: Node<'_>, line: usize) {
        let mut cursor = node.walk();
        if node.kind() == "import_statement" {
            // `import a.b, c as d`: one import each
            for child in node.children_by_field_name("name", &mut cursor) {
                let (module, alias) = match child.kind() {
                    "aliased_import" => (
                        child.child_by_field_name("name").map(|n| self.slice(n).to_string()),
                        child.child_by_field_name("alias").map(|n| self.slice(n).to_string()),
                    ),
                    _ => (Some(self.slice(child).to_string()), None),
                };
                if let Some(module) = module {
                    self.out.imports.push(Import { module, names: alias.into_iter().collect(), line });
                }
            }
            return;
        }
        let module = node
            .child_by_field_name("module_name")
            .map(|n| self.slice(n).to_string())
            .unwrap_or_else(|| "__future__".to_string());
        let mut names = Vec::new();
        for child in node.children_by_field_name("name", &mut cursor) {
            let name = match child.kind() {
                "aliased_import" => child.child_by_field_name("alias").map(|n| self.slice(n).to_string()),
                _ => Some(self.slice(child).to_string()),
            };
            names.extend(name);
        }
        self.out.imports.push(Import { module, names, line });
    }

    fn script_import(&mut self, node: Node<'_>, line: usize) {
        let Some(source) = node.child_by_field_name("source") else { return };
        let module = self.slice(source).trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string();
        let mut names = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "import_specifier" => {
                    let name = n.child_by_field_name("alias").or_else(|| n.child_by_field_name("name"));
                    names.extend(name.map(|n| self.slice(n).to_string()));
                }
                "namespace_import" => {
                    let mut cursor = n.walk();
                    let alias = n.children(&mut cursor).find(|c| c.kind() == "identifier");
                    names.extend(alias.map(|a| self.slice(a).to_string()));
                }
                "import_clause" => {
                    let mut cursor = n.walk();
                    for child in n.children(&mut cursor) {
                        if child.kind() == "identifier" {
                            names.push(self.slice(child).to_string());
                        } else {
                            stack.push(child);
                        }
                    }
                }
                _ => {
                    let mut cursor = n.walk();
                    stack.extend(n.children(&mut cursor).filter(|c| c.id() != source.id()));
                }
            }
        }
        names.sort();
        self.out.imports.push(Import { module, names, line });
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
    }
}
