//! The actions that navigate the workspace index (SPEC C5): `symbols` (fuzzy symbol search),
//! `definition` (where a name is defined, with its text), `callers` (up to five levels, with
//! ambiguity said), `importers` (who imports a module) and `locate` (files ranked for a
//! question), `impact` (what a change reaches, tests included). They read the index as the editor's open documents and the run's own writes
//! left it.

use std::collections::BTreeMap;
use std::path::Path;

use super::file_uri;
use super::{Executor, Stop};
use crate::action::{Action, ActionResult};
use crate::context::{Impact, Index, MAX_CALLER_DEPTH, changed_definitions, describe_impact, impact, rank};
use crate::text::cut;

/// Symbols listed at most.
const MAX_SYMBOLS: usize = 30;
/// Definitions shown with their text at most.
const MAX_DEFINITIONS: usize = 5;
/// Bytes of one definition's text shown at most.
const MAX_DEFINITION_BYTES: usize = 6 * 1024;
/// Call sites and importers listed at most.
const MAX_SITES: usize = 80;
/// Files `locate` lists.
const LOCATE_FILES: usize = 8;

impl Executor {
    /// Carries out a navigation action.
    pub(super) async fn navigate(&self, action: &Action) -> Result<ActionResult, Stop> {
        let Some(live) = &self.context.index else {
            return Err(Stop::Refused("the workspace index is not available in this session".to_string()));
        };
        if let Action::Impact { path, names } = action {
            return self.impact_action(path.as_deref(), names.as_deref()).await;
        }
        // the run's own open documents are the editor's: the index has them from the editor
        let index = live.current().await;
        let root = self.root().to_path_buf();
        let relative = |path: &Path| path.strip_prefix(&root).unwrap_or(path).to_string_lossy().to_string();
        Ok(match action {
            Action::Symbols { query } => symbols(&index, query, &relative),
            Action::Definition { name } => {
                let found: Vec<(std::path::PathBuf, (usize, usize), String)> = index
                    .definitions(name)
                    .into_iter()
                    .take(MAX_DEFINITIONS + 1)
                    .map(|f| (f.path.to_path_buf(), f.definition.lines, describe(f.definition)))
                    .collect();
                drop(index);
                self.definition(name, &found, &relative)
            }
            Action::Callers { name, depth } => callers(&index, name, depth.unwrap_or(2), &relative),
            Action::Importers { module } => importers(&index, module, &relative),
            Action::Locate { query } => locate(&index, query, &relative),
            _ => return Err(Stop::Refused(format!("{} is not a navigation action", action.name()))),
        })
    }

    /// What this run's changes reach (`only`: in that file): the changed definitions (the
    /// text before the run against now), their callers, importers and the tests that reach
    /// them. `None` without an index.
    pub async fn run_impact(&self, only: Option<&Path>) -> Option<Impact> {
        let live = self.context.index.as_ref()?;
        let mut changes = Vec::new();
        for relative in self.changed_files() {
            let path = self.root().join(&relative);
            if only.is_some_and(|o| o != path) {
                continue;
            }
            let language = crate::text::Language::from_path(&path);
            if !language.is_parsed() {
                continue;
            }
            let before = self.original(&relative).flatten();
            let after = self.context.current_text(&path);
            let names = changed_definitions(language, before.as_deref(), after.as_deref());
            changes.push((path, names));
        }
        let index = live.current().await;
        Some(impact(&index, &changes))
    }

    async fn impact_action(
        &self,
        path: Option<&str>,
        names: Option<&[String]>,
    ) -> Result<ActionResult, Stop> {
        let path = match path {
            Some(raw) => Some(self.confine(raw, super::Access::Read)?.path),
            None => None,
        };
        let found = match (names, &path) {
            (Some(names), Some(path)) if !names.is_empty() => {
                let Some(live) = &self.context.index else {
                    return Err(Stop::Refused(
                        "the workspace index is not available in this session".to_string(),
                    ));
                };
                let index = live.current().await;
                impact(&index, &[(path.clone(), names.to_vec())])
            }
            (Some(names), None) if !names.is_empty() => {
                return Err(Stop::Refused(format!(
                    "impact needs the path of the file that defines {}",
                    names.join(", ")
                )));
            }
            _ => self.run_impact(path.as_deref()).await.ok_or_else(|| {
                Stop::Refused("the workspace index is not available in this session".to_string())
            })?,
        };
        let text = describe_impact(&found, self.root());
        let summary = format!(
            "impact: {} definition(s) reach {} caller(s), {} importer(s), {} test(s)",
            found.symbols.len(),
            found.callers.len(),
            found.importers.len(),
            found.tests.len()
        );
        Ok(ActionResult::done(text, summary))
    }

    fn definition(
        &self,
        name: &str,
        found: &[(std::path::PathBuf, (usize, usize), String)],
        relative: &dyn Fn(&Path) -> String,
    ) -> ActionResult {
        if found.is_empty() {
            return ActionResult::refused(format!(
                "no definition of {name:?} in the index; try symbols with part of the name, or search"
            ));
        }
        let mut out = String::new();
        for (path, (first, last), what) in found.iter().take(MAX_DEFINITIONS) {
            out.push_str(&format!("{}:{}-{} {what}\n", relative(path), first + 1, last + 1));
            if let Ok(text) = self.text_of(path) {
                let body: String = text.split_inclusive('\n').skip(*first).take(last + 1 - first).collect();
                out.push_str(&cut(&body, MAX_DEFINITION_BYTES));
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        if found.len() > MAX_DEFINITIONS {
            out.push_str(&format!("(more definitions of {name:?}: use symbols to list them)\n"));
        }
        let summary = format!("definition of {name}: {} found", found.len().min(MAX_DEFINITIONS));
        ActionResult::done(out, summary)
    }
}

fn describe(definition: &crate::context::Definition) -> String {
    let kind = format!("{:?}", definition.kind).to_lowercase();
    match &definition.container {
        Some(container) => format!("{kind} {container}.{}", definition.name),
        None => format!("{kind} {}", definition.name),
    }
}

fn symbols(index: &Index, query: &str, relative: &dyn Fn(&Path) -> String) -> ActionResult {
    let found = index.search(query, MAX_SYMBOLS);
    if found.is_empty() {
        return ActionResult::refused(format!("no symbol like {query:?} in the index; try search for text"));
    }
    let mut out = String::new();
    for f in &found {
        let signature = f.definition.signature.trim();
        out.push_str(&format!(
            "{}:{} {} — {signature}\n",
            relative(f.path),
            f.definition.lines.0 + 1,
            describe(f.definition)
        ));
    }
    ActionResult::done(out, format!("symbols like {query}: {}", found.len()))
}

fn callers(index: &Index, name: &str, depth: usize, relative: &dyn Fn(&Path) -> String) -> ActionResult {
    let depth = depth.clamp(1, MAX_CALLER_DEPTH);
    let callers = index.callers(name, depth);
    if callers.is_empty() && index.definitions(name).is_empty() {
        return ActionResult::refused(format!("{name:?} is neither defined nor called in the indexed files"));
    }
    if callers.is_empty() {
        return ActionResult::done(
            format!("nothing in the indexed files calls {name}\n"),
            format!("callers of {name}: none"),
        );
    }
    let mut out = String::new();
    let ambiguous = callers.iter().filter(|c| c.ambiguous).count();
    for caller in callers.iter().take(MAX_SITES) {
        let from = caller.caller.as_deref().unwrap_or("<top level>");
        out.push_str(&format!(
            "{}level {}: {}:{} in {from}{}\n",
            "  ".repeat(caller.depth - 1),
            caller.depth,
            relative(&caller.path),
            caller.line + 1,
            if caller.ambiguous { " (may be another function of the same name)" } else { "" }
        ));
    }
    if callers.len() > MAX_SITES {
        out.push_str(&format!("(and {} more call sites)\n", callers.len() - MAX_SITES));
    }
    if ambiguous > 0 {
        out.push_str(&format!(
            "{ambiguous} call site(s) are by name only: {name} is defined in more than one file and those callers do not import it\n"
        ));
    }
    ActionResult::done(out, format!("callers of {name} ({depth} levels): {}", callers.len()))
}

fn importers(index: &Index, module: &str, relative: &dyn Fn(&Path) -> String) -> ActionResult {
    // a path works too: `app/models.py` is the module `app.models`
    let module = module.trim().trim_end_matches(".py").trim_start_matches("./");
    let mut found = index.importers(module);
    if found.is_empty() && module.contains('/') && !module.contains('.') {
        found = index.importers(&module.replace('/', "."));
    }
    if found.is_empty() {
        return ActionResult::done(
            format!("no indexed file imports {module}\n"),
            format!("importers of {module}: none"),
        );
    }
    let mut by_file: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (path, line) in &found {
        by_file.entry(relative(path)).or_default().push(line + 1);
    }
    let mut out = String::new();
    for (path, lines) in by_file.iter().take(MAX_SITES) {
        let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        out.push_str(&format!("{path}:{}\n", lines.join(",")));
    }
    ActionResult::done(out, format!("importers of {module}: {}", by_file.len()))
}

fn locate(index: &Index, query: &str, relative: &dyn Fn(&Path) -> String) -> ActionResult {
    let ranked = rank(index, query, None, LOCATE_FILES);
    if ranked.is_empty() {
        return ActionResult::refused(format!(
            "nothing in the index matches {query:?}; try other words or search"
        ));
    }
    let mut out = String::new();
    for r in &ranked {
        out.push_str(&format!("{} ({})\n", relative(&r.path), r.reasons.join("; ")));
        for symbol in r.symbols.iter().take(5) {
            out.push_str(&format!("  {}:{} {}\n", symbol.kind, symbol.line, symbol.name));
        }
    }
    ActionResult::done(out, format!("files for {query:?}: {}", ranked.len()))
}

impl Executor {
    /// Tells the index of the files an action changed: an open document's text (the editor
    /// has it), else the disk's.
    pub(super) fn reindex(&self, changed: &[String]) {
        let Some(index) = &self.context.index else { return };
        for relative in changed {
            let path = self.root().join(relative);
            let snapshot = file_uri(&path).ok().and_then(|uri| self.context.observer.snapshot(&uri));
            match snapshot {
                // the Observer hands the index an open document's tree once it is parsed
                Some(s) if s.syntax_pending => {}
                Some(s) => {
                    index.document_changed(&path, s.rope.clone(), s.tree.clone().map(|t| (t, s.language)))
                }
                None => index.disk_changed(&path),
            }
        }
    }
}
