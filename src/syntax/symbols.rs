//! Symbols: classes, functions and methods with their ranges and signatures, the symbol
//! enclosing a position, and a signatures-only outline of a file.

use ropey::Rope;
use tree_sitter::{Node, Tree};

use crate::language::Nodes;
pub use crate::language::SymbolKind;
use crate::text::{Language, TextRange};

/// Deeper than this the tree is not searched for symbols (keeps recursion bounded on
/// pathological input; real code nests nowhere near this).
const MAX_DEPTH: usize = 200;

/// Longest signature kept, in characters.
const MAX_SIGNATURE_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub kind: SymbolKind,
    /// The whole definition, decorators included.
    pub range: TextRange,
    /// The name.
    pub selection_range: TextRange,
    /// The signature: the definition's text up to its body, on one line.
    pub signature: String,
    pub children: Vec<Symbol>,
}

/// The hierarchical symbols of a parsed document.
pub fn document_symbols(tree: &Tree, rope: &Rope, language: Language) -> Vec<Symbol> {
    let walker = Walker { rope, language };
    walker.collect(tree.root_node(), None, 0)
}

/// The symbols one node of a document's tree defines, as [`document_symbols`] finds them
/// when it meets the node among its parent's children (`parent`: the kind of the symbol it
/// is inside, which makes a function a method).
pub fn node_symbols(
    node: Node<'_>,
    rope: &Rope,
    language: Language,
    parent: Option<SymbolKind>,
) -> Vec<Symbol> {
    let walker = Walker { rope, language };
    walker.child(node, parent, 0)
}

/// The symbol a definition node itself stands for, without what its body holds.
pub fn own_symbol(node: Node<'_>, rope: &Rope, language: Language) -> Option<Symbol> {
    let walker = Walker { rope, language };
    walker.symbol(node, None).map(|(symbol, _)| symbol)
}

/// The innermost symbol whose range contains `offset`, with the chain of its ancestors
/// (outermost first). Empty when `offset` is at top level.
pub fn enclosing_symbol(symbols: &[Symbol], offset: usize) -> Vec<&Symbol> {
    let mut chain = Vec::new();
    let mut level = symbols;
    while let Some(symbol) = level.iter().find(|s| s.range.start <= offset && offset < s.range.end) {
        chain.push(symbol);
        level = &symbol.children;
    }
    chain
}

/// A signatures-only outline, one symbol a line, indented by depth:
/// `class User(Base)` / `  def validate(self, email: str) -> bool`.
pub fn outline(symbols: &[Symbol]) -> String {
    fn write(out: &mut String, symbols: &[Symbol], depth: usize) {
        for symbol in symbols {
            out.push_str(&"  ".repeat(depth));
            out.push_str(&symbol.signature);
            out.push('\n');
            write(out, &symbol.children, depth + 1);
        }
    }
    let mut out = String::new();
    write(&mut out, symbols, 0);
    out
}

struct Walker<'a> {
    rope: &'a Rope,
    language: Language,
}

impl Walker<'_> {
    fn collect(&self, node: Node<'_>, parent: Option<SymbolKind>, depth: usize) -> Vec<Symbol> {
        let mut symbols = Vec::new();
        if depth > MAX_DEPTH {
            return symbols;
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            symbols.extend(self.child(child, parent, depth));
        }
        symbols
    }

    /// What one child of a node `collect` looks in defines.
    fn child(&self, child: Node<'_>, parent: Option<SymbolKind>, depth: usize) -> Vec<Symbol> {
        match self.symbol(child, parent) {
            Some((mut symbol, body)) => {
                if let Some(body) = body {
                    symbol.children = self.collect(body, Some(symbol.kind), depth + 1);
                }
                vec![symbol]
            }
            None if self.may_define(child) => self.collect(child, parent, depth + 1),
            None => Vec::new(),
        }
    }

    /// Whether a definition can be inside `node` (in Python only statements hold them; in no
    /// language a string or a comment).
    fn may_define(&self, node: Node<'_>) -> bool {
        self.nodes().is_some_and(|nodes| nodes.may_hold(node.kind()))
    }

    fn nodes(&self) -> Option<&'static Nodes> {
        self.language.nodes()
    }

    /// The symbol `node` defines, if any, and the node to look for its children in.
    fn symbol<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Option<(Symbol, Option<Node<'t>>)> {
        let nodes = self.nodes()?;
        if let Some(inner) = nodes.decorated(node) {
            let (mut symbol, body) = self.symbol(inner, parent)?;
            symbol.range = self.range(node);
            return Some((symbol, body));
        }
        let (kind, definition) = match nodes.defines(node.kind(), parent) {
            Some(kind) => (kind, node),
            // `const f = () => …`: a function, its body the arrow function's
            None => (SymbolKind::Function.inside(parent), nodes.bound_function(node)?),
        };
        let name_node = node.child_by_field_name("name")?;
        let name = self.text(self.range(name_node));
        let body = definition.child_by_field_name("body");
        let signature_end = body.map_or(node.end_byte(), |b| b.start_byte());
        let symbol = Symbol {
            name,
            kind,
            range: self.range(node),
            selection_range: self.range(name_node),
            signature: self.signature(TextRange::new(node.start_byte(), signature_end)),
            children: Vec::new(),
        };
        Some((symbol, body))
    }

    fn range(&self, node: Node<'_>) -> TextRange {
        let len = self.rope.len_bytes();
        TextRange::new(node.start_byte().min(len), node.end_byte().min(len))
    }

    fn text(&self, range: TextRange) -> String {
        let start = self.rope.byte_to_char(range.start);
        let end = self.rope.byte_to_char(range.end);
        self.rope.slice(start..end).to_string()
    }

    /// The header text on one line, without the `:` or `{` that opens the body.
    fn signature(&self, range: TextRange) -> String {
        let text = self.text(range);
        let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let trimmed = collapsed.trim_end();
        let trimmed = trimmed.strip_suffix("=>").unwrap_or(trimmed).trim_end();
        let trimmed = trimmed.trim_end_matches([':', '{', ';']).trim_end();
        let mut signature: String = trimmed.chars().take(MAX_SIGNATURE_CHARS).collect();
        if trimmed.chars().count() > MAX_SIGNATURE_CHARS {
            signature.push('…');
        }
        signature
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::SyntaxTree;

    fn symbols_of(language: Language, text: &str) -> Vec<Symbol> {
        let rope = Rope::from_str(text);
        let tree = SyntaxTree::parse(language, &rope).unwrap().unwrap();
        document_symbols(tree.tree(), &rope, language)
    }

    /// Renders symbols as `kind name: signature`, indented by depth.
    fn render(symbols: &[Symbol], depth: usize, out: &mut String) {
        for s in symbols {
            out.push_str(&format!("{}{:?} {}: {}\n", "  ".repeat(depth), s.kind, s.name, s.signature));
            render(&s.children, depth + 1, out);
        }
    }

    fn check(language: Language, text: &str, expected: &str) {
        let mut out = String::new();
        render(&symbols_of(language, text), 0, &mut out);
        assert_eq!(out, expected, "symbols of:\n{text}");
    }

    #[test]
    fn python_classes_functions_and_methods() {
        check(
            Language::Python,
            "import os\n\n@dataclass\nclass User(Base):\n    def validate_email(self, email: str) -> bool:\n        def inner(): pass\n        return True\n\ndef login(user,\n          password):\n    pass\n",
            "Class User: class User(Base)\n  Method validate_email: def validate_email(self, email: str) -> bool\n    Function inner: def inner()\nFunction login: def login(user, password)\n",
        );
    }

    #[test]
    fn typescript_declarations() {
        check(
            Language::TypeScript,
            "export class Store<T> {\n  get(id: string): T { return this.x; }\n  handler = (e: Event) => {};\n}\ninterface Shape { area(): number; }\nexport function make(): Store<number> { return new Store(); }\nconst add = (a: number, b: number) => a + b;\nenum Color { Red }\ntype Id = string;\n",
            "Class Store: class Store<T>\n  Method get: get(id: string): T\n  Method handler: handler = (e: Event)\nInterface Shape: interface Shape\n  Method area: area(): number\nFunction make: function make(): Store<number>\nFunction add: add = (a: number, b: number)\nEnum Color: enum Color\nTypeAlias Id: type Id = string\n",
        );
    }

    #[test]
    fn enclosing_symbol_and_outline() {
        let text = "class A:\n    def f(self):\n        x = 1\n\ny = 2\n";
        let symbols = symbols_of(Language::Python, text);
        let inside = text.find("x = 1").unwrap();
        let chain: Vec<&str> = enclosing_symbol(&symbols, inside).iter().map(|s| s.name.as_str()).collect();
        assert_eq!(chain, ["A", "f"]);
        assert!(enclosing_symbol(&symbols, text.find("y = 2").unwrap()).is_empty());
        assert_eq!(outline(&symbols), "class A\n  def f(self)\n");
    }
}
