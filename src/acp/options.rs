//! A session's pickers: the role the agent acts in (`auto`: routed by the prompt's words, as
//! every front end does, or one of the roles), the model (the settings' own, or one of their
//! `[profiles.NAME]`, or a model its server says it serves) and what it asks before it acts (the settings' level, accept edits, ask
//! everything, or plan only), offered as ACP's `configOptions` and, for clients that know only
//! those, the roles as the legacy `modes`.

use agent_client_protocol_schema::v1 as acp;

use crate::modes::Profiles;
use crate::session::{ModelChoice, Session};

/// The role picker's value for "routed by the prompt's words".
pub const AUTO: &str = "auto";
/// The model picker's value for the settings' own model.
pub const DEFAULT: &str = "default";
/// The model picker's values for a model the server serves: `served:<its name>`.
pub const SERVED: &str = "served:";
const MODE: &str = "mode";
const MODEL: &str = "model";
const APPROVAL: &str = "approval";
use crate::config::APPROVAL_PICKER as APPROVALS;

/// What the user picked in a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picked {
    /// The role every prompt acts in; `None`: routed by its words.
    pub role: Option<String>,
    /// The profile whose model the run uses; `None`: the settings' own.
    pub model: Option<String>,
    /// A model the settings' server serves, by name, over the settings' model name.
    pub served: Option<String>,
    /// The approval picker's value; `None`: the settings' level.
    pub approval: Option<String>,
}

impl Picked {
    /// The approval level a run takes from the picker (`None`: the settings').
    pub fn approval_level(&self) -> Option<crate::config::ApprovalLevel> {
        self.approval.as_deref().and_then(crate::config::ApprovalLevel::picked)
    }

    /// Prompts are planned only.
    pub fn plan_only(&self) -> bool {
        self.approval.as_deref() == Some("plan")
    }
}

fn profiles(session: &Session) -> Profiles {
    let root = session.root.clone().unwrap_or_default();
    Profiles::load(&root, session.trust.trusted)
}

fn roles(session: &Session) -> Vec<(String, String, String)> {
    session.roles()
}

/// The session's pickers as `configOptions`; `served`: the models the server said it serves.
pub fn config_options(
    session: &Session,
    picked: &Picked,
    served: &[String],
) -> Vec<acp::SessionConfigOption> {
    let roles: Vec<acp::SessionConfigSelectOption> = roles(session)
        .into_iter()
        .map(|(id, name, description)| acp::SessionConfigSelectOption::new(id, name).description(description))
        .collect();
    let mut models = vec![acp::SessionConfigSelectOption::new(DEFAULT, "The settings' model")];
    for name in session.settings.profiles.keys() {
        models.push(acp::SessionConfigSelectOption::new(name.clone(), format!("[profiles.{name}]")));
    }
    for name in served {
        models.push(
            acp::SessionConfigSelectOption::new(format!("{SERVED}{name}"), name.clone())
                .description("served by the model's server".to_string()),
        );
    }
    let current_model = match (&picked.served, &picked.model) {
        (Some(name), _) => format!("{SERVED}{name}"),
        (None, Some(profile)) => profile.clone(),
        (None, None) => DEFAULT.to_string(),
    };
    vec![
        acp::SessionConfigOption::select(
            MODE,
            "Role",
            picked.role.clone().unwrap_or_else(|| AUTO.to_string()),
            roles,
        )
        .category(acp::SessionConfigOptionCategory::Mode),
        acp::SessionConfigOption::select(MODEL, "Model", current_model, models)
            .category(acp::SessionConfigOptionCategory::Model),
        acp::SessionConfigOption::select(
            APPROVAL,
            "Approval",
            picked.approval.clone().unwrap_or_else(|| DEFAULT.to_string()),
            APPROVALS
                .iter()
                .map(|(id, name, description)| {
                    acp::SessionConfigSelectOption::new(*id, *name).description(*description)
                })
                .collect::<Vec<_>>(),
        ),
    ]
}

/// The role picker as the legacy `modes`.
pub fn modes(session: &Session, picked: &Picked) -> acp::SessionModeState {
    let available = roles(session)
        .into_iter()
        .map(|(id, name, description)| acp::SessionMode::new(id, name).description(description))
        .collect();
    acp::SessionModeState::new(picked.role.clone().unwrap_or_else(|| AUTO.to_string()), available)
}

/// Sets picker `id` to `value`, or says why not (`served`: what the server serves).
pub fn set(
    session: &Session,
    picked: &mut Picked,
    id: &str,
    value: &str,
    served: &[String],
) -> Result<(), String> {
    match id {
        MODE if value == AUTO => picked.role = None,
        MODE => {
            let profiles = profiles(session);
            let profile = profiles.get(value).ok_or_else(|| {
                format!("there is no role {value}; the roles are {}", profiles.names().join(", "))
            })?;
            picked.role = Some(profile.name.clone());
        }
        MODEL if value == DEFAULT => (picked.model, picked.served) = (None, None),
        MODEL if session.settings.profiles.contains_key(value) => {
            (picked.model, picked.served) = (Some(value.to_string()), None);
        }
        MODEL if value.strip_prefix(SERVED).is_some_and(|name| served.iter().any(|s| s == name)) => {
            (picked.model, picked.served) = (None, value.strip_prefix(SERVED).map(str::to_string));
        }
        MODEL => return Err(format!("there is no [profiles.{value}] in the settings")),
        APPROVAL if value == DEFAULT => picked.approval = None,
        APPROVAL if APPROVALS.iter().any(|(id, ..)| *id == value) => {
            picked.approval = Some(value.to_string())
        }
        APPROVAL => {
            let values: Vec<&str> = APPROVALS.iter().map(|(id, ..)| *id).collect();
            return Err(format!("approval takes {}, not {value}", values.join(", ")));
        }
        other => {
            return Err(format!(
                "there is no option {other}; the options are {MODE}, {MODEL} and {APPROVAL}"
            ));
        }
    }
    Ok(())
}

/// The models a run uses with what was picked: a picked profile's model over the settings'.
pub fn models(session: &Session, picked: &Picked) -> ModelChoice {
    let mut choice = session.models();
    if let Some(profile) = picked.model.as_ref().and_then(|name| choice.profiles.get(name)) {
        choice.model = choice.model.overlay(profile);
    }
    if let Some(name) = &picked.served {
        choice.model.model = Some(name.clone());
    }
    choice
}
