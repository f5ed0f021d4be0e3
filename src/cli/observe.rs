//! `boardroom view`, `boardroom export`, and what `run --view` and
//! `run --otlp` add to a run: the web view and the trace exporter, both
//! fed from the run's event stream next to the renderer.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::thread::JoinHandle;

use boardroom::otlp::{OtlpConfig, OtlpExporter};
use boardroom::store::list_runs;
use boardroom::view::ViewServer;
use boardroom::{Event, EventKind};
use crossbeam_channel::Receiver;

use super::exit::{CliError, Kind, Outcome};

/// Loopback: what the view binds unless `--host` says otherwise.
const LOOPBACK: &str = "127.0.0.1";

#[derive(Debug, clap::Args)]
pub(crate) struct ViewArgs {
    /// The run to open (its id, a unique prefix, `last`, or its directory);
    /// without it, the page lists the runs.
    run: Option<String>,
    /// The port (0: a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The address to listen on (default 127.0.0.1, this machine only).
    /// An address off loopback needs --token.
    #[arg(long)]
    host: Option<String>,
    /// The access token every request must carry (as `?token=` on the
    /// printed URL, a cookie, or `Authorization: Bearer`); required with a
    /// --host off loopback.
    #[arg(long, env = "BOARDROOM_VIEW_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ExportArgs {
    /// The run (its id, a unique prefix, `last`, or its directory).
    run: String,
    /// The OTLP/HTTP collector (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    /// else OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Put prompts, answers and tool arguments and results into the spans.
    #[arg(long)]
    otlp_content: bool,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
}

/// Starts the view server, saying where it listens.
fn serve(
    runs_dir: &Path,
    host: Option<&str>,
    port: u16,
    token: Option<&str>,
) -> Result<ViewServer, CliError> {
    let bind = host.unwrap_or(LOOPBACK);
    match ViewServer::start_with_token(runs_dir, bind, port, token) {
        Ok(v) => {
            if host.is_some_and(|h| !is_loopback(h)) {
                eprintln!(
                    "view: listening on {} as asked by --host: anyone who can reach it and has the token can read these runs",
                    v.addr()
                );
            }
            Ok(v)
        }
        Err(e @ boardroom::view::ViewError::NeedsToken { .. }) => {
            Err(CliError::bad_input(format!(
                "view: {e}; give --token TOKEN (or set BOARDROOM_VIEW_TOKEN) to require it of every request, or leave out --host"
            )))
        }
        Err(e) => Err(CliError::context(Kind::BadInput, "view", e)),
    }
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) fn view(args: &ViewArgs) -> Result<Outcome, CliError> {
    let (runs_dir, run_id) = match &args.run {
        Some(run) => {
            let dir = super::runs::find_run(&args.runs_dir, run).map_err(CliError::bad_input)?;
            let id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let parent = dir
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            (parent, Some(id))
        }
        None => (args.runs_dir.clone(), None),
    };
    if run_id.is_none() && list_runs(&runs_dir).is_ok_and(|r| r.is_empty()) {
        eprintln!(
            "no runs in {} yet: start one with `boardroom run --view \"TASK\"`",
            runs_dir.display()
        );
        return Ok(Outcome::Done);
    }
    let token = args.token.as_deref().filter(|t| !t.is_empty());
    let server = serve(&runs_dir, args.host.as_deref(), args.port, token)?;
    let mut url = run_id.map_or_else(|| server.url(), |id| server.run_url(&id));
    if let Some(token) = token {
        url = format!("{url}?token={token}");
    }
    println!("{url}");
    eprintln!("view: serving {} (Ctrl-C to stop)", runs_dir.display());
    server.wait();
    Ok(Outcome::Done)
}

pub(crate) fn export(args: &ExportArgs) -> Result<Outcome, CliError> {
    let config = OtlpConfig::from_env(args.otlp.as_deref())
        .map_err(CliError::bad_input)?
        .ok_or_else(|| {
            CliError::bad_input(
                "export: no collector: give --otlp URL or set OTEL_EXPORTER_OTLP_ENDPOINT",
            )
        })?
        .content(args.otlp_content);
    let dir = super::runs::find_run(&args.runs_dir, &args.run).map_err(CliError::bad_input)?;
    let report = boardroom::otlp::export_run(&dir, &config).map_err(CliError::failed)?;
    if report.dropped > 0 {
        return Err(CliError::failed(report.to_string()));
    }
    println!(
        "exported {} spans of {} to {}",
        report.exported,
        dir.display(),
        report.endpoint
    );
    Ok(Outcome::Done)
}

/// What `run --view` / `run --otlp` add to a run.
#[derive(Debug, Default)]
pub(crate) struct Observers {
    view: Option<ViewServer>,
    exporter: Option<OtlpExporter>,
    tee: Option<JoinHandle<Option<String>>>,
}

impl Observers {
    /// Starts the view and the exporter the flags (and the OTEL_
    /// variables) ask for, or why they cannot be had.
    pub(crate) fn start(
        view: bool,
        otlp: Option<&str>,
        otlp_content: bool,
        runs_dir: &Path,
    ) -> Result<Self, CliError> {
        let config = OtlpConfig::from_env(otlp)
            .map_err(CliError::bad_input)?
            .map(|c| c.content(otlp_content));
        let exporter = match config {
            Some(c) => Some(
                OtlpExporter::start_with_turns(c, Some(runs_dir.to_path_buf()))
                    .map_err(CliError::failed)?,
            ),
            None => None,
        };
        let view = if view {
            std::fs::create_dir_all(runs_dir).ok();
            let v = serve(runs_dir, None, 0, None)?;
            eprintln!("view: {}", v.url());
            Some(v)
        } else {
            None
        };
        Ok(Observers {
            view,
            exporter,
            tee: None,
        })
    }

    /// The stream the renderer should read: `rx` itself, or a copy that a
    /// tee thread forwards while it hands each event to the exporter too
    /// and says the run's page once the run has an id.
    pub(crate) fn tee(&mut self, rx: Receiver<Event>) -> Receiver<Event> {
        if self.view.is_none() && self.exporter.is_none() {
            return rx;
        }
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let to_exporter = self.exporter.as_ref().map(OtlpExporter::events);
        let run_url = self.view.as_ref().map(|v| v.run_url(""));
        let tee = std::thread::Builder::new()
            .name("boardroom-tee".into())
            .spawn(move || {
                let mut run_id = None;
                for event in rx {
                    if run_id.is_none() {
                        if let (Some(url), EventKind::RunStarted { .. }) = (&run_url, &event.kind) {
                            eprintln!("view: {url}{}", event.run_id);
                        }
                        run_id = Some(event.run_id.clone());
                    }
                    if let Some(x) = &to_exporter {
                        let _ = x.send(event.clone());
                    }
                    let _ = out_tx.send(event);
                }
                run_id
            });
        match tee {
            Ok(t) => {
                self.tee = Some(t);
                out_rx
            }
            Err(e) => {
                eprintln!(
                    "warning: cannot start the event tee ({e}); no view or traces for this run"
                );
                self.exporter = None;
                out_rx
            }
        }
    }

    /// After the run: waits for the exporter (one warning when spans were
    /// dropped); the view, if any, is handed back to be served once the
    /// run's outcome is reported (see [`Lingering`]).
    pub(crate) fn finish(mut self) -> Option<Lingering> {
        let run_id = self.tee.take().and_then(|t| t.join().ok()).flatten();
        if let Some(x) = self.exporter.take() {
            let report = x.finish();
            if report.dropped > 0 {
                eprintln!("warning: {report}");
            }
        }
        let view = self.view.take()?;
        Some(Lingering { view, run_id })
    }
}

/// The view of a run that is over, served until Ctrl-C; the caller then
/// exits with the run's own code.
#[derive(Debug)]
pub(crate) struct Lingering {
    view: ViewServer,
    run_id: Option<String>,
}

impl Lingering {
    /// Serves the page until Ctrl-C (or, when SIGINT does not reach this
    /// process, until it is killed).
    pub(crate) fn serve(self) {
        let Lingering { view, run_id } = self;
        let url = run_id.map_or_else(|| view.url(), |id| view.run_url(&id));
        match ctrl_c() {
            Some(presses) => {
                eprintln!(
                    "view: the run is over; still serving {url} (Ctrl-C to stop: boardroom then exits with the run's code)"
                );
                let _ = presses.recv();
                // The process ends now, its threads with it: a client that
                // stopped reading an event stream must not hold the exit
                // up (stop() would join its worker).
                std::mem::forget(view);
            }
            None => {
                // SIGINT is ignored (a background job) or taken: say how
                // to stop it rather than hang on a Ctrl-C that never comes.
                eprintln!(
                    "view: the run is over; still serving {url} (Ctrl-C does not reach this process: stop it with `kill {}`)",
                    std::process::id()
                );
                view.wait();
            }
        }
    }
}

/// Ctrl-C presses, one message each; `None` when SIGINT cannot be caught
/// here (it is ignored, or another handler took it). The handler is
/// installed once per process, on first use: every caller shares it.
pub(crate) fn ctrl_c() -> Option<Receiver<()>> {
    static PRESSES: OnceLock<Option<Receiver<()>>> = OnceLock::new();
    PRESSES
        .get_or_init(|| {
            let (tx, rx) = crossbeam_channel::unbounded();
            // `ctrlc` runs the handler on a thread of its own.
            match ctrlc::try_set_handler(move || {
                let _ = tx.send(());
            }) {
                Ok(()) => Some(rx),
                Err(e) => {
                    log::debug!("no Ctrl-C handler: {e}");
                    None
                }
            }
        })
        .clone()
}
