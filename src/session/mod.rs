//! One session over one workspace, built the same way for every front end (SPEC §3): the
//! settings with trust applied, the checkers, the Observer, the checkpoints and audit logs, the
//! live index and the executor's context; and, for each run, the model a role uses and what a
//! fix or a task is given. A front end brings only its [`Editor`] and [`Approver`] and renders
//! what they are told: the LSP server (`server/initialize.rs`), the command line
//! (`cli/session.rs`, `cli/fix.rs`, `cli/check.rs`) and the ACP front end (`acp/agent.rs`) build here.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::agent::{FixContext, TaskContext};
use crate::config::{ApprovalLevel, Settings};
use crate::context::LiveIndex;
use crate::editor::Editor;
use crate::executor::{Approver, Confinement, ExecutorContext, ExecutorSettings};
use crate::history::History;
use crate::model::{Model, ModelConfig, ModelError, ModelSettings, RoleModels, connect, role_models};
use crate::observer::Observer;
use crate::observer::checkers::Checkers;
use crate::run::{Progress, RunEvent, RunReport};
use crate::trust::Trust;
use crate::workspace::Workspace;

mod conversation;
mod watch;

pub use conversation::Conversation;

pub use watch::DiskWatcher;

/// What a front end brings to a session.
pub struct FrontEnd {
    /// How the engine acts on the editor (or the terminal, or the files).
    pub editor: Arc<dyn Editor>,
    /// Who says yes to what the agent wants to do.
    pub approver: Arc<dyn Approver>,
}

/// How much of a session to build.
#[derive(Clone, Default)]
pub struct Options {
    /// Keep checkpoints and audit logs (not for a throw-away copy or a dry run).
    pub history: bool,
    /// The agent may act on the workspace (an executor and the live index over the root).
    pub agent: bool,
    /// The front end's own documents, when it already holds them (the server's); else new.
    pub workspace: Option<Arc<Mutex<Workspace>>>,
    /// Watch the root for files other programs change, while the session lasts (a long-lived
    /// front end whose editor does not tell of them; needs `agent`, whose index it feeds).
    pub watch: bool,
    /// MCP servers the front end gives (ACP's `session/new`), started with the settings' and
    /// a trusted project's `.mcp.json` (needs `agent`).
    pub mcp: Vec<crate::mcp::ServerSpec>,
}

/// One workspace's session.
pub struct Session {
    pub root: Option<PathBuf>,
    pub settings: Settings,
    pub trust: Trust,
    /// The front end's editor.
    pub editor: Arc<dyn Editor>,
    pub observer: Arc<Observer>,
    pub history: Option<Arc<History>>,
    pub index: Option<Arc<LiveIndex>>,
    /// What the agent's actions work with (none without a root, or without `Options::agent`).
    pub executor: Option<Arc<ExecutorContext>>,
    /// What could not be used as the settings say.
    pub problems: Vec<Problem>,
    /// Files changed on disk by other programs, seen while the session lasts (`Options::watch`).
    pub watcher: Option<DiskWatcher>,
    /// The MCP servers started for the session's runs (none set up: `None`).
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The workspace's own conversation (a front end with one session per workspace, the
    /// language server, carries it into each run); none without a root.
    pub conversation: Option<Arc<Conversation>>,
}

/// Something a session could not use as its settings say; it goes on without it.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The checkers' settings are invalid: the built-in checkers are used instead.
    #[error("{0}")]
    Checkers(crate::config::ConfigError),
    /// The agent cannot act on the root (it has no executor).
    #[error("the agent cannot act on {root}: {reason}")]
    Root { root: PathBuf, reason: String },
    /// The folder's agent files (rules, role files, skills, MCP servers) are not used until it
    /// is trusted.
    #[error("this folder's {} are not used until it is trusted (`tokamak trust`)", .0.join(", "))]
    Untrusted(Vec<String>),
    /// The folder's agent files are used otherwise than they say (a role file shadowed, a
    /// skill that cannot be read, a tool Tokamak has no action for).
    #[error("{0}")]
    Note(String),
}

impl Problem {
    /// The sentence for a front end that goes on without it.
    pub fn going_on(&self) -> String {
        match self {
            Problem::Checkers(err) => format!("Tokamak is using its default checkers: {err}"),
            Problem::Root { .. } | Problem::Untrusted(_) | Problem::Note(_) => format!("Tokamak: {self}"),
        }
    }
}

impl Session {
    /// Builds the session for `root` with `settings` (already loaded with `trust` applied).
    pub fn build(
        root: Option<PathBuf>,
        settings: Settings,
        trust: Trust,
        front: FrontEnd,
        options: Options,
    ) -> Session {
        let mut problems = Vec::new();
        let mut checkers = Checkers::from_settings(&settings.checkers).unwrap_or_else(|err| {
            problems.push(Problem::Checkers(err));
            Checkers::from_settings(&Default::default()).unwrap_or_default()
        });
        checkers.trusted = trust.trusted;
        checkers.confinement = Arc::new(crate::sandbox::tools::Confinement::choose(&settings.sandbox));
        let workspace = match options.workspace {
            Some(workspace) => {
                crate::sync::lock(&workspace).set_settings(settings.syntax.clone());
                workspace
            }
            None => Arc::new(Mutex::new(Workspace::new(settings.syntax.clone()))),
        };
        let observer = Observer::new(workspace, Arc::clone(&front.editor), checkers, root.clone());
        let history = match (&root, options.history) {
            (Some(root), true) => {
                Some(History::new(root, settings.checkpoints.clone(), settings.key_variables()))
            }
            _ => None,
        };
        if let Some(root) = root.as_deref().filter(|_| options.agent) {
            // the copies a killed Tokamak left (holding the project's files, `.env` included)
            // go, off the way of the start
            let sandbox = crate::places::project_cache(root).join("sandbox");
            let project = crate::places::project_key(root);
            let containers = (settings.sandbox.backend == crate::config::SandboxMode::Container)
                .then(|| settings.sandbox.container.clone());
            std::thread::spawn(move || {
                let removed = crate::executor::sweep(&sandbox);
                if removed > 0 {
                    tracing::info!("removed {removed} sandbox copies left by a Tokamak that did not end");
                }
                // and its containers
                if let Some(Ok(engine)) =
                    containers.map(|settings| crate::sandbox::container::engine(&settings))
                {
                    let removed = crate::sandbox::container::sweep(&engine, &project);
                    if removed > 0 {
                        tracing::info!("removed {removed} containers left by a Tokamak that did not end");
                    }
                }
            });
        }
        let index = root
            .as_deref()
            .filter(|_| options.agent)
            .map(|root| LiveIndex::new(root, Some(LiveIndex::cache_file(root))));
        if let Some(index) = &index {
            // the index takes an open document's facts from the tree the Observer keeps
            let index = Arc::clone(index);
            observer.on_parsed(Box::new(move |snapshot| {
                if let Some(path) = snapshot.path() {
                    let tree = snapshot.tree.clone().map(|tree| (tree, snapshot.language));
                    index.document_changed(&path, snapshot.rope.clone(), tree);
                }
            }));
        }
        // the executor also runs the tests that choose among candidate fixes (SPEC V2), and
        // those a fix's ending is checked by
        let verifying = settings.test.command.is_some();
        let executor = match (root.as_deref(), options.agent || verifying) {
            (Some(root), true) => match Confinement::new(root) {
                Ok(confinement) => Some(ExecutorContext::new(
                    confinement,
                    Arc::clone(&observer),
                    Arc::clone(&front.editor),
                    ExecutorSettings::from_settings(&settings, trust.trusted),
                    front.approver,
                    history.clone(),
                    index.clone(),
                )),
                Err(err) => {
                    problems.push(Problem::Root { root: root.to_path_buf(), reason: err.to_string() });
                    None
                }
            },
            _ => None,
        };
        // what is said once of the folder's agent files (the skills as the executor read them)
        if let (Some(root), true) = (root.as_deref(), options.agent) {
            let skills = executor.as_ref().map(|e| e.skills.problems.clone()).unwrap_or_default();
            problems.extend(agent_files(root, trust.trusted, skills));
        }
        // the MCP servers, started in the background: their tools are the executor's
        let mut mcp = None;
        if let (Some(executor), true) = (&executor, options.agent) {
            let (specs, unusable) =
                crate::mcp::servers(&settings.mcp, root.as_deref(), trust.trusted, options.mcp);
            problems.extend(unusable.into_iter().map(Problem::Note));
            let startup = std::time::Duration::from_secs(settings.mcp.startup_timeout_s.max(1));
            mcp = crate::mcp::McpHub::start(specs, startup);
            if let Some(hub) = &mcp {
                executor.set_toolbox(Arc::clone(hub) as Arc<dyn crate::toolbox::Toolbox>);
            }
        }
        let watcher = match (&root, &index) {
            (Some(root), Some(index)) if options.watch => {
                watch::watch(root, Arc::clone(index), Arc::clone(&observer))
            }
            _ => None,
        };
        let conversation = root.as_deref().map(|root| Arc::new(Conversation::open(root)));
        Session {
            root,
            settings,
            trust,
            editor: front.editor,
            observer,
            history,
            index,
            executor,
            problems,
            watcher,
            mcp,
            conversation,
        }
    }

    /// The roles a run can be asked to act in, for a picker: `(id, name, description)`,
    /// `auto` (routed by the request's words) first, then the built-in roles and those a
    /// trusted workspace adds.
    pub fn roles(&self) -> Vec<(String, String, String)> {
        let root = self.root.clone().unwrap_or_default();
        let profiles = crate::modes::Profiles::load(&root, self.trust.trusted);
        let mut roles =
            vec![("auto".to_string(), "Auto".to_string(), "The role the prompt's words ask for".to_string())];
        for name in profiles.names() {
            let description = profiles.get(&name).map(|p| p.description.clone()).unwrap_or_default();
            roles.push((name.clone(), name, description));
        }
        roles
    }

    /// The model choice of the session's settings.
    pub fn models(&self) -> ModelChoice {
        ModelChoice { model: self.settings.model.clone(), profiles: self.settings.profiles.clone() }
    }

    /// What a task run is given, with the session's settings.
    pub fn task_context(&self) -> Option<TaskContext> {
        self.task_context_with(&self.models())
    }

    /// What a task run is given, its models from `models` (a front end's choice over the
    /// session's: the editor's settings, a picker's model); `None` without an executor. The
    /// one place a task run's context is made, for every front end.
    pub fn task_context_with(&self, models: &ModelChoice) -> Option<TaskContext> {
        let executor = Arc::clone(self.executor.as_ref()?);
        let settings = &self.settings;
        Some(TaskContext {
            executor,
            model: models.connect(Some(crate::agent::FIX_ROLE)),
            role_models: Some(models.role_models()),
            limits: settings.limits.clone(),
            plan: settings.plan.clone(),
            fix: settings.fix.clone(),
            approval: None,
        })
    }

    /// What a fix run is given, with the session's settings; `approver` as [`fix_context`].
    pub fn fix_context(&self, approver: Option<Arc<dyn Approver>>) -> FixContext {
        self.fix_context_with(&self.models(), approver)
    }

    /// [`Session::fix_context`] with the model from `models` (a front end's choice).
    pub fn fix_context_with(&self, models: &ModelChoice, approver: Option<Arc<dyn Approver>>) -> FixContext {
        FixContext {
            observer: Arc::clone(&self.observer),
            editor: Arc::clone(&self.editor),
            model: models.connect(Some(crate::agent::FIX_ROLE)),
            settings: self.settings.fix.clone(),
            root: self.root.clone(),
            history: self.history.clone(),
            approver,
            verify: self.executor.clone(),
            final_tests: true,
            trusted: self.trust.trusted,
            candidate_models: models.candidate_models(&self.settings.fix.candidate_models),
            wrap_up_tokens: Some(self.settings.limits.wrap_up_tokens),
        }
    }
}

/// What is said once of a folder's agent files (Claude Code's and Tokamak's): in an untrusted
/// folder the ones not used, in a trusted one what is used otherwise than it says.
fn agent_files(root: &std::path::Path, trusted: bool, skill_problems: Vec<String>) -> Vec<Problem> {
    if !trusted {
        let mut unused: Vec<String> =
            crate::context::unread_rules(root).iter().map(|p| p.display().to_string()).collect();
        for folder in [".claude/agents", ".tokamak/agents"] {
            if root.join(folder).is_dir() {
                unused.push(folder.to_string());
            }
        }
        unused.extend(crate::context::Skills::unread(root).iter().map(|p| p.display().to_string()));
        if crate::mcp::has_project_file(root) {
            unused.push(".mcp.json".to_string());
        }
        return if unused.is_empty() { Vec::new() } else { vec![Problem::Untrusted(unused)] };
    }
    let profiles = crate::modes::Profiles::load(root, true);
    profiles.notes.into_iter().chain(skill_problems).map(Problem::Note).collect()
}

/// The model settings a run's models come from: the base model and each role's profile.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    pub model: ModelSettings,
    pub profiles: BTreeMap<String, ModelSettings>,
}

impl ModelChoice {
    /// What `role`'s model is (keys from the environment), or why there is none.
    pub fn config(&self, role: Option<&str>) -> Result<ModelConfig, ModelError> {
        let env = |name: &str| std::env::var(name).ok();
        ModelConfig::resolve(&self.model, &self.profiles, role, &env)
    }

    /// The model `role` uses, connected, or why there is none.
    pub fn connect(&self, role: Option<&str>) -> Result<Arc<dyn Model>, ModelError> {
        self.config(role).and_then(connect)
    }

    /// The models of `[[fix.candidate_models]]`, each connected (a `[profiles.NAME]` over
    /// `[model]`, or the fix's own model) or why it could not be.
    pub fn candidate_models(
        &self,
        listed: &[crate::config::CandidateModel],
    ) -> Vec<crate::agent::ModelCandidates> {
        listed
            .iter()
            .map(|entry| {
                let role = entry.profile.as_deref().unwrap_or(crate::agent::FIX_ROLE);
                let model = self.connect(Some(role));
                let label = match (&entry.profile, &model) {
                    (Some(profile), _) => profile.clone(),
                    (None, Ok(model)) => model.info().model,
                    (None, Err(_)) => "the fix's model".to_string(),
                };
                crate::agent::ModelCandidates { label, model, temperatures: entry.temperatures.clone() }
            })
            .collect()
    }

    /// Each role's own model, for a task run's steps.
    pub fn role_models(&self) -> RoleModels {
        role_models(self.model.clone(), self.profiles.clone())
    }
}

/// Who a fix run asks before each change: at `approval = "high"` the session's approver
/// (every change is asked, the fix's too); otherwise nobody, since the fix is what the user
/// asked for and undoable in the editor.
pub fn fix_approver(executor: Option<&Arc<ExecutorContext>>) -> Option<Arc<dyn Approver>> {
    executor.filter(|e| e.settings.approval == ApprovalLevel::High).map(|e| Arc::clone(&e.approver))
}

/// A new plan's id: unique enough within a session, short enough to type.
pub fn new_plan_id() -> String {
    format!("plan-{:06x}", fastrand::u32(..0x100_0000))
}

/// Runs `run` on a task of its own, watched: a panic inside it (a bug) still ends it for the
/// user — its progress closed, `summary` said as its report — and the run's handle, dropped
/// while unwinding, frees its document or workspace.
pub fn spawn_run<F>(editor: Arc<dyn Editor>, run_id: String, uri: url::Url, summary: &'static str, run: F)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let task = tokio::spawn(run);
    tokio::spawn(async move {
        if let Err(err) = task.await
            && err.is_panic()
        {
            tracing::error!("{run_id} panicked: {err}");
            editor
                .run_event(&run_id, &RunEvent::Progress(Progress::End { message: summary.to_string() }))
                .await;
            let report = RunReport::failed(run_id.clone(), uri, summary.to_string());
            editor.run_event(&run_id, &RunEvent::Finished(Box::new(report))).await;
        }
    });
}
