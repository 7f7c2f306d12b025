//! What a language's tree-sitter grammar calls the nodes Tokamak reads — definitions and what
//! wraps them, where definitions can be, imports and how one is read, calls, the statements a
//! line tracer counts — and the questions the walkers (symbols, the index's facts, the prompt's
//! imports, coverage) ask of a node through them.

use tree_sitter::Node;

/// What a definition defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SymbolKind {
    Class,
    Function,
    Method,
    Interface,
    Enum,
    Module,
    TypeAlias,
}

impl SymbolKind {
    /// What a definition of this kind is inside `parent`: a function in a class or an
    /// interface is a method.
    pub fn inside(self, parent: Option<SymbolKind>) -> SymbolKind {
        let in_class = matches!(parent, Some(SymbolKind::Class | SymbolKind::Interface));
        if self == SymbolKind::Function && in_class { SymbolKind::Method } else { self }
    }
}

/// Where a definition can be found: only inside the kinds listed, or inside anything but them.
pub enum Holders {
    Only(&'static [&'static str]),
    AnythingBut(&'static [&'static str]),
}

/// One import statement as a language reads it: the module as written (`os.path`, `.models`,
/// `./util`) and the names it brings in (empty for `import m`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub module: String,
    pub names: Vec<String>,
}

/// The node kinds of one grammar that Tokamak reads.
pub struct Nodes {
    /// A definition's kind and what it defines. Each has a `name` field and, when it has a
    /// body, a `body` field.
    pub definitions: &'static [(&'static str, SymbolKind)],
    /// Whether a `Function` defined inside a class or an interface is a `Method` (Python's
    /// `def`); where methods have kinds of their own (JavaScript's), a function declaration
    /// stays a function wherever it is.
    pub class_functions_are_methods: bool,
    /// A node around a definition that is part of it (Python's decorators), and the field the
    /// definition is in: the symbol spans the wrapper.
    pub decorated: &'static [(&'static str, &'static str)],
    /// A node around a definition that is not part of it (`export`), and the field it is in.
    pub exported: &'static [(&'static str, &'static str)],
    /// A variable or field whose `value`, when it is one of `function_values`, makes it a
    /// function of its `name` (`const f = () => …`).
    pub bindings: &'static [&'static str],
    pub function_values: &'static [&'static str],
    /// What a definition can be inside: skipping the rest (expressions, strings, comments)
    /// keeps a file that is mostly data cheap to walk.
    pub holders: Holders,
    /// Import statements, and how one is read (into none when it names no module).
    pub imports: &'static [&'static str],
    pub read_import: fn(Node<'_>, &str) -> Vec<Imported>,
    /// Calls, with the field that holds what is called (`new User()` calls its constructor).
    pub calls: &'static [(&'static str, &'static str)],
    /// A plain name.
    pub identifier: &'static str,
    /// A member access (`user.validate`): its kind, and the field of its property.
    pub members: &'static [(&'static str, &'static str)],
    /// What a call's receiver can be to be named (`self` is an identifier; `this` is not).
    pub receivers: &'static [&'static str],
    /// A statement that is an expression alone, and a string (a docstring is one alone).
    pub expression_statement: &'static str,
    pub string: &'static str,
    /// The statements a coverage tool sees run, each on its first line.
    pub traced: &'static [&'static str],
}

impl Nodes {
    /// What a definition node defines, inside `parent` (see `class_functions_are_methods`).
    pub fn defines(&self, kind: &str, parent: Option<SymbolKind>) -> Option<SymbolKind> {
        let defines = self.definitions.iter().find(|(k, _)| *k == kind).map(|(_, defines)| *defines)?;
        Some(if self.class_functions_are_methods { defines.inside(parent) } else { defines })
    }

    /// The definition a decorated node wraps (its symbol spans the wrapper).
    pub fn decorated<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        wrapped(self.decorated, node)
    }

    /// The definition an export wraps.
    pub fn exported<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        wrapped(self.exported, node)
    }

    /// The definition `node` is, or wraps (decorated or exported); `node` itself otherwise.
    pub fn unwrapped<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        match self.decorated.iter().chain(self.exported).find(|(kind, _)| *kind == node.kind()) {
            Some((_, field)) => node.child_by_field_name(field),
            None => Some(node),
        }
    }

    /// A binding's function value: `() => …` in `const f = () => …`.
    pub fn bound_function<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        if !self.bindings.contains(&node.kind()) {
            return None;
        }
        node.child_by_field_name("value").filter(|value| self.function_values.contains(&value.kind()))
    }

    /// Whether a definition can be inside a node of this kind.
    pub fn may_hold(&self, kind: &str) -> bool {
        match self.holders {
            Holders::Only(kinds) => kinds.contains(&kind),
            Holders::AnythingBut(kinds) => !kinds.contains(&kind),
        }
    }

    pub fn is_import(&self, kind: &str) -> bool {
        self.imports.contains(&kind)
    }

    /// The field holding what a call calls, when `kind` is a call.
    pub fn callee_field(&self, kind: &str) -> Option<&'static str> {
        self.calls.iter().find(|(k, _)| *k == kind).map(|(_, field)| *field)
    }

    /// The property field of a member access (`attribute` in Python, `property` in JavaScript).
    pub fn property_field(&self, kind: &str) -> Option<&'static str> {
        self.members.iter().find(|(k, _)| *k == kind).map(|(_, field)| *field)
    }

    /// A string alone as a statement: a docstring, which no coverage tool sees run.
    pub fn is_docstring(&self, node: Node<'_>) -> bool {
        node.kind() == self.expression_statement
            && node.named_child_count() == 1
            && node.named_child(0).is_some_and(|child| child.kind() == self.string)
    }

    /// Whether a coverage tool sees this node run, on its first line.
    pub fn is_traced(&self, node: Node<'_>) -> bool {
        self.traced.contains(&node.kind()) && !self.is_docstring(node)
    }
}

fn wrapped<'t>(wrappers: &[(&str, &str)], node: Node<'t>) -> Option<Node<'t>> {
    let (_, field) = wrappers.iter().find(|(kind, _)| *kind == node.kind())?;
    node.child_by_field_name(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::language::{Language, PARSED};

    /// A spec naming a kind or a field its grammar does not have would find nothing, silently:
    /// every name must be one of the grammar's.
    #[test]
    fn every_kind_and_field_a_spec_names_is_its_grammars() {
        for language in PARSED {
            let grammar = language.grammar().unwrap();
            let nodes = language.nodes().unwrap();
            let holders = match nodes.holders {
                Holders::Only(kinds) | Holders::AnythingBut(kinds) => kinds,
            };
            let kinds = nodes
                .definitions
                .iter()
                .map(|(kind, _)| *kind)
                .chain(nodes.decorated.iter().chain(nodes.exported).map(|(kind, _)| *kind))
                .chain(nodes.bindings.iter().chain(nodes.function_values).chain(holders).copied())
                .chain(nodes.imports.iter().copied())
                .chain(nodes.calls.iter().chain(nodes.members).map(|(kind, _)| *kind))
                .chain([nodes.identifier, nodes.expression_statement, nodes.string])
                .chain(nodes.receivers.iter().chain(nodes.traced).copied());
            for kind in kinds {
                assert_ne!(grammar.id_for_node_kind(kind, true), 0, "{language}: no node {kind:?}");
            }
            let fields = nodes
                .decorated
                .iter()
                .chain(nodes.exported)
                .chain(nodes.calls)
                .chain(nodes.members)
                .map(|(_, field)| *field)
                .chain(["name", "body", "value", "object"]);
            for field in fields {
                assert!(grammar.field_id_for_name(field).is_some(), "{language}: no field {field:?}");
            }
        }
    }

    #[test]
    fn a_python_function_in_a_class_is_a_method_a_javascript_one_is_not() {
        let python = Language::Python.nodes().unwrap();
        assert_eq!(python.defines("function_definition", None), Some(SymbolKind::Function));
        assert_eq!(python.defines("function_definition", Some(SymbolKind::Class)), Some(SymbolKind::Method));
        assert_eq!(
            python.defines("function_definition", Some(SymbolKind::Function)),
            Some(SymbolKind::Function)
        );
        assert_eq!(python.defines("class_definition", Some(SymbolKind::Class)), Some(SymbolKind::Class));
        assert_eq!(python.defines("call", None), None);
        let typescript = Language::TypeScript.nodes().unwrap();
        assert_eq!(typescript.defines("interface_declaration", None), Some(SymbolKind::Interface));
        // `class A { static { function helper() {} } }`: a function, as JavaScript says
        let in_class = typescript.defines("function_declaration", Some(SymbolKind::Class));
        assert_eq!(in_class, Some(SymbolKind::Function));
        assert!(typescript.may_hold("export_statement") && !typescript.may_hold("template_string"));
        assert!(python.may_hold("if_statement") && !python.may_hold("call"));
    }

    #[test]
    fn docstrings_are_not_traced() {
        let text = "\"\"\"Doc.\"\"\"\nx = 1\n";
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&Language::Python.grammar().unwrap()).unwrap();
        let tree = parser.parse(text, None).unwrap();
        let python = Language::Python.nodes().unwrap();
        let root = tree.root_node();
        let (docstring, assignment) = (root.named_child(0).unwrap(), root.named_child(1).unwrap());
        assert!(python.is_docstring(docstring) && !python.is_traced(docstring));
        assert!(!python.is_docstring(assignment) && python.is_traced(assignment));
    }
}
