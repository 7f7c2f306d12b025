//! The Seatbelt backend (macOS): a profile for `/usr/bin/sandbox-exec` made from the policy,
//! as OpenAI's Codex CLI and Anthropic's sandbox runtime confine commands there — nothing
//! allowed but what is listed; processes may start and signal their own; a short list of
//! Mach services by name; the whole disk
//! readable but the hidden paths; writes only to the policy's folders and the terminal
//! devices; the network only when allowed. The paths go in as `-D` parameters, never spliced
//! into the profile's text, so no path can change its meaning.

use super::Policy;

/// Where macOS keeps it.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read-data)
(allow ipc-posix-shm-write-data)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-read-metadata)
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
"#;

/// The Mach services a command may look up: what the C library, the Security framework and
/// Foundation ask for to resolve users and groups, log, read preferences, check certificates,
/// find the temp folder and fonts — not the pasteboard, the keychain's agents, Apple Events,
/// LaunchServices (`open -a` would start a program outside the sandbox), the window server or
/// anything else of the user's session.
const MACH_SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.opendirectoryd.membership",
    "com.apple.system.DirectoryService.libinfo_v1",
    "com.apple.system.logger",
    "com.apple.logd",
    "com.apple.diagnosticd",
    "com.apple.system.notification_center",
    "com.apple.distributed_notifications@Uv3",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.bsd.dirhelper",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.securityd.xpc",
    "com.apple.SecurityServer",
    "com.apple.FontObjectsServer",
    "com.apple.fonts",
    "com.apple.PowerManagement.control",
];

/// `sandbox-exec`'s arguments that run `argv` under `policy`: `-p` the profile, a `-D`
/// parameter per path, then the command.
pub fn command_line(policy: &Policy, argv: &[String]) -> Vec<String> {
    let mut profile = BASE.to_string();
    profile.push_str("(allow mach-lookup\n");
    for service in MACH_SERVICES {
        profile.push_str(&format!("  (global-name \"{service}\")\n"));
    }
    profile.push_str(")\n");
    let mut args = Vec::new();
    let mut parameter = |kind: &str, index: usize, path: &std::path::Path| {
        let name = format!("{kind}_{index}");
        args.extend(["-D".to_string(), format!("{name}={}", path.display())]);
        name
    };
    for (index, path) in policy.hidden.iter().enumerate() {
        let name = parameter("HIDDEN", index, path);
        profile.push_str(&format!("(deny file-read* (subpath (param \"{name}\")))\n"));
    }
    for (index, path) in policy.writable.iter().enumerate() {
        let name = parameter("WRITABLE", index, path);
        profile.push_str(&format!("(allow file-read* file-write* (subpath (param \"{name}\")))\n"));
    }
    if policy.network {
        profile.push_str("(allow network*)\n(allow system-socket)\n");
    } else {
        // a Unix socket pair or a local one the command makes itself, nothing further
        profile.push_str("(allow network* (local unix-socket))\n");
    }
    let mut line = vec!["-p".to_string(), profile];
    line.extend(args);
    line.extend(argv.iter().cloned());
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_profile_denies_by_default_and_names_paths_only_as_parameters() {
        let policy = Policy {
            writable: vec![
                PathBuf::from("/Users/me/Library/Caches/tokamak/copy"),
                PathBuf::from("/private/tmp/x"),
            ],
            hidden: vec![PathBuf::from("/Users/me/.ssh"), PathBuf::from("/Users/me/\")) (allow default")],
            network: false,
        };
        let line = command_line(&policy, &["pytest".to_string(), "-q".to_string()]);
        assert_eq!(line[0], "-p");
        let profile = &line[1];
        assert!(profile.starts_with("(version 1)\n(deny default)\n"), "{profile}");
        assert!(!profile.contains("/Users/me"), "no path is spliced into the profile: {profile}");
        assert!(!profile.contains("(allow network*)"), "{profile}");
        // Mach services by name only: no lookup of the user's session's others
        assert!(!profile.contains("(allow mach-lookup)"), "{profile}");
        assert!(
            profile
                .contains("(allow mach-lookup\n  (global-name \"com.apple.system.opendirectoryd.libinfo\")"),
            "{profile}"
        );
        for outside in ["com.apple.pboard", "launchservicesd", "com.apple.lsd", "com.apple.windowserver"] {
            assert!(!profile.contains(outside), "{outside}: {profile}");
        }
        // the denials come after the general read, the writable folders after the denials:
        // Seatbelt lets the last matching rule decide
        let read_all = profile.find("(allow file-read*)").unwrap();
        let denied = profile.find("(deny file-read* (subpath (param \"HIDDEN_0\")))").unwrap();
        let writable =
            profile.find("(allow file-read* file-write* (subpath (param \"WRITABLE_1\")))").unwrap();
        assert!(read_all < denied && denied < writable, "{profile}");
        assert_eq!(
            line[2..],
            [
                "-D",
                "HIDDEN_0=/Users/me/.ssh",
                "-D",
                "HIDDEN_1=/Users/me/\")) (allow default",
                "-D",
                "WRITABLE_0=/Users/me/Library/Caches/tokamak/copy",
                "-D",
                "WRITABLE_1=/private/tmp/x",
                "pytest",
                "-q"
            ]
        );
        let open = command_line(&Policy { network: true, ..policy }, &["true".to_string()]);
        assert!(open[1].contains("(allow network*)"), "{}", open[1]);
    }
}
