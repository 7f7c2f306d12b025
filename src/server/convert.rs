//! Conversions between Tokamak's types and LSP's: byte offsets ↔ positions in the negotiated
//! encoding, URIs, diagnostics, symbols, content changes.

use ropey::Rope;
use tower_lsp_server::ls_types as lsp;

use crate::observer::{Diagnostic, Severity};
use crate::syntax::{Symbol, SymbolKind};
use crate::text::{LineCol, PositionEncoding, TextChange, TextRange, line_col_to_offset, offset_to_line_col};

/// The protocol's URI as the rest of Tokamak holds one (`url::Url`); `None` for one the URL
/// standard cannot read, which the handler reports and ignores.
pub fn url(uri: &lsp::Uri) -> Option<url::Url> {
    let url = url::Url::parse(uri.as_str()).ok();
    if url.is_none() {
        tracing::warn!("ignored {}: not a URL Tokamak can read", uri.as_str());
    }
    url
}

/// A `url::Url` as the protocol's URI. The URL standard leaves a few characters raw that RFC
/// 3986 (the protocol's) wants escaped, `|`, `^` or `[` in a file name say: those are
/// escaped. `None` only for what no escaping makes a URI.
pub fn uri(url: &url::Url) -> Option<lsp::Uri> {
    if let Ok(uri) = url.as_str().parse() {
        return Some(uri);
    }
    let mut escaped = String::with_capacity(url.as_str().len() + 8);
    for c in url.as_str().chars() {
        let allowed = c.is_ascii_alphanumeric() || "-._~:/?#@!$&'()*+,;=%".contains(c);
        if allowed {
            escaped.push(c);
        } else {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                escaped.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    escaped.parse().ok()
}

pub fn position(rope: &Rope, offset: usize, encoding: PositionEncoding) -> lsp::Position {
    let LineCol { line, col } = offset_to_line_col(rope, offset, encoding);
    lsp::Position { line, character: col }
}

pub fn range(rope: &Rope, range: TextRange, encoding: PositionEncoding) -> lsp::Range {
    lsp::Range { start: position(rope, range.start, encoding), end: position(rope, range.end, encoding) }
}

pub fn line_col(position: lsp::Position) -> LineCol {
    LineCol::new(position.line, position.character)
}

pub fn text_change(change: lsp::TextDocumentContentChangeEvent) -> TextChange {
    TextChange { range: change.range.map(|r| (line_col(r.start), line_col(r.end))), text: change.text }
}

pub fn severity(severity: Severity) -> lsp::DiagnosticSeverity {
    match severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Information => lsp::DiagnosticSeverity::INFORMATION,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    }
}

/// An LSP diagnostic of `uri`; what other sources said of the same problem goes in
/// `relatedInformation`, each message prefixed with its source.
pub fn diagnostic(
    uri: &lsp::Uri,
    rope: &Rope,
    diagnostic: &Diagnostic,
    encoding: PositionEncoding,
) -> lsp::Diagnostic {
    let related: Vec<lsp::DiagnosticRelatedInformation> = diagnostic
        .related
        .iter()
        .map(|r| lsp::DiagnosticRelatedInformation {
            location: lsp::Location { uri: uri.clone(), range: range(rope, r.range, encoding) },
            message: match &r.code {
                Some(code) => format!("{} ({code}): {}", r.source, r.message),
                None => format!("{}: {}", r.source, r.message),
            },
        })
        .collect();
    lsp::Diagnostic {
        range: range(rope, diagnostic.range, encoding),
        severity: Some(severity(diagnostic.severity)),
        code: diagnostic.code.clone().map(lsp::NumberOrString::String),
        source: Some(diagnostic.source.clone()),
        message: diagnostic.message.clone(),
        related_information: (!related.is_empty()).then_some(related),
        ..lsp::Diagnostic::default()
    }
}

/// A diagnostic the editor sent, placed in the current text (positions clamped, put in
/// order).
pub fn diagnostic_from_lsp(
    rope: &Rope,
    diagnostic: &lsp::Diagnostic,
    encoding: PositionEncoding,
) -> Diagnostic {
    let start = line_col_to_offset(rope, line_col(diagnostic.range.start), encoding).offset;
    let end = line_col_to_offset(rope, line_col(diagnostic.range.end), encoding).offset;
    let severity = match diagnostic.severity {
        Some(lsp::DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(lsp::DiagnosticSeverity::INFORMATION) => Severity::Information,
        Some(lsp::DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    let code = diagnostic.code.as_ref().map(|code| match code {
        lsp::NumberOrString::Number(n) => n.to_string(),
        lsp::NumberOrString::String(s) => s.clone(),
    });
    let source = diagnostic.source.as_deref().unwrap_or("editor");
    Diagnostic::new(
        TextRange::new(start.min(end), start.max(end)),
        severity,
        source,
        code,
        diagnostic.message.clone(),
    )
}

pub fn symbol_kind(kind: SymbolKind) -> lsp::SymbolKind {
    match kind {
        SymbolKind::Class => lsp::SymbolKind::CLASS,
        SymbolKind::Function => lsp::SymbolKind::FUNCTION,
        SymbolKind::Method => lsp::SymbolKind::METHOD,
        SymbolKind::Interface => lsp::SymbolKind::INTERFACE,
        SymbolKind::Enum => lsp::SymbolKind::ENUM,
        SymbolKind::Module => lsp::SymbolKind::MODULE,
        // LSP has no kind for type aliases; rust-analyzer uses TYPE_PARAMETER too.
        SymbolKind::TypeAlias => lsp::SymbolKind::TYPE_PARAMETER,
    }
}

#[allow(deprecated)] // `DocumentSymbol::deprecated` must be set; it is always `None`.
pub fn document_symbol(rope: &Rope, symbol: &Symbol, encoding: PositionEncoding) -> lsp::DocumentSymbol {
    lsp::DocumentSymbol {
        name: symbol.name.clone(),
        detail: Some(symbol.signature.clone()),
        kind: symbol_kind(symbol.kind),
        tags: None,
        deprecated: None,
        range: range(rope, symbol.range, encoding),
        selection_range: range(rope, symbol.selection_range, encoding),
        children: Some(symbol.children.iter().map(|c| document_symbol(rope, c, encoding)).collect()),
    }
}
