//! Logging: `tracing` to stderr (never stdout, which carries LSP) or a writer in its place (the
//! command line's stand-in, a test's buffer), filtered by `TOKAMAK_LOG`; `TOKAMAK_LOG_STDERR=0`
//! leaves stderr out where the language server forwards its log.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The filter when `TOKAMAK_LOG` is unset: our own info and above, others' warnings.
const DEFAULT_FILTER: &str = "warn,tokamak=info";
/// The command line's: its output is the report, so only warnings go to stderr.
const CLI_FILTER: &str = "warn";

/// Logging for the command-line front-ends: warnings and errors to `writer` (stderr, or the
/// command line's stand-in for it), unless `TOKAMAK_LOG` says otherwise. Calling it twice is
/// harmless: the first writer stays.
pub fn init_cli<W>(writer: W)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    install_into(None::<tracing_subscriber::layer::Identity>, writer, CLI_FILTER);
}

/// Installs the global subscriber: stderr, plus `extra` (the language server forwards to
/// `window/logMessage` through it). `TOKAMAK_LOG=debug` (or any `EnvFilter` directive) turns
/// the level up. Calling it twice is harmless.
pub fn init<L>(extra: Option<L>)
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    install(extra, DEFAULT_FILTER);
}

/// [`init`], the lines going to `writer` instead of stderr: a language server inside a test's
/// process, whose log the test reads.
pub fn init_into<L, W>(extra: Option<L>, writer: W)
where
    L: Layer<Registry> + Send + Sync + 'static,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    install_into(extra, writer, DEFAULT_FILTER);
}

/// The global subscriber: `extra`, and the lines to `writer`, filtered by `TOKAMAK_LOG` or else
/// `default`.
fn install_into<L, W>(extra: Option<L>, writer: W, default: &str)
where
    L: Layer<Registry> + Send + Sync + 'static,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_env("TOKAMAK_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let lines = tracing_subscriber::fmt::layer().with_writer(writer).with_target(false).with_ansi(false);
    let _ = tracing_subscriber::registry().with(extra).with(lines).with(filter).try_init();
}

fn install<L>(extra: Option<L>, default: &str)
where
    L: Layer<Registry> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_env("TOKAMAK_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // an editor that shows both stderr and `window/logMessage` in one place (VS Code's output
    // channel) would show every line twice: it says so with TOKAMAK_LOG_STDERR=0
    let quiet = extra.is_some() && std::env::var("TOKAMAK_LOG_STDERR").is_ok_and(|v| v == "0" || v == "off");
    let stderr = (!quiet).then(|| {
        tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_target(false).with_ansi(false)
    });
    let _ = tracing_subscriber::registry().with(extra).with(stderr).with(filter).try_init();
}
