//! `boardroom serve`: the HTTP API that starts and steers runs from
//! outside (the library's `serve::Server`); this file reads the flags,
//! finds the token, says where the server listens and stops it on Ctrl-C.

use std::path::PathBuf;

use boardroom::Team;
use boardroom::serve::{ServeConfig, ServeError, Server, generate_token, write_token_file};

use super::exit::{CliError, Kind, Outcome};

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (default 127.0.0.1, this machine only).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port (0: a free one).
    #[arg(long, default_value_t = 8420)]
    port: u16,
    /// Where runs are saved (default: runs/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_RUNS_DIR", default_value_os_t = super::home::runs_dir(), hide_default_value = true)]
    runs_dir: PathBuf,
    /// Where chats with a partner are saved (default: chats/ in
    /// $BOARDROOM_HOME, else ~/.local/share/boardroom).
    #[arg(long, env = "BOARDROOM_CHATS_DIR", default_value_os_t = super::home::chats_dir(), hide_default_value = true)]
    chats_dir: PathBuf,
    /// The most chats open at once; a start past it is answered 429.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_chats: u64,
    /// The most runs live at once; a start past it is answered 429 with
    /// Retry-After (at least 1).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    max_runs: u64,
    /// A team directory requests may run, by its name (repeatable; the
    /// first is the default). The built-in team is always allowed, as
    /// `builtin`.
    #[arg(long = "team-dir", value_name = "DIR")]
    team_dirs: Vec<PathBuf>,
    /// The model of runs whose request names none (default: the team's
    /// `default` model, else `sim`).
    #[arg(long, env = "BOARDROOM_MODEL")]
    model: Option<String>,
    /// Where a generated token is written (mode 0600); unused when
    /// BOARDROOM_TOKEN is set (default: serve.token in $BOARDROOM_HOME).
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Neither use nor update the master's memory of earlier runs.
    #[arg(long)]
    no_memory: bool,
    /// The largest request body taken, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = boardroom::serve::DEFAULT_MAX_BODY)]
    max_body: usize,
}

pub(crate) fn serve(args: &ServeArgs) -> Result<Outcome, CliError> {
    let mut config = ServeConfig::new(&args.runs_dir, String::new())
        .host(&args.host)
        .port(args.port)
        .max_runs(usize::try_from(args.max_runs).unwrap_or(usize::MAX))
        .chats_dir(&args.chats_dir)
        .max_chats(usize::try_from(args.max_chats).unwrap_or(usize::MAX))
        .memory(!args.no_memory)
        .max_body(args.max_body);
    for dir in &args.team_dirs {
        let team = Team::load(dir).map_err(CliError::bad_input)?;
        team.check_models().map_err(CliError::bad_input)?;
        config = config.team(team);
    }
    if let Some(model) = &args.model {
        config = config.model(model);
    }
    // The token: BOARDROOM_TOKEN, else a new one in a file only this user
    // can read. Never printed, never logged.
    let (token, told) = match std::env::var("BOARDROOM_TOKEN") {
        Ok(t) if !t.trim().is_empty() => (t.trim().to_string(), "from BOARDROOM_TOKEN".to_string()),
        _ => {
            let path = args.token_file.clone().unwrap_or_else(|| {
                super::home::home()
                    .map_or_else(|| PathBuf::from("serve.token"), |h| h.join("serve.token"))
            });
            let token = generate_token();
            write_token_file(&path, &token).map_err(|e| {
                CliError::context(Kind::Failed, format!("serve: {}", path.display()), e)
            })?;
            (token, format!("in {} (mode 0600)", path.display()))
        }
    };
    config = config.token(token);
    let server = Server::start(config).map_err(|e| match e {
        e @ ServeError::WeakToken => CliError::bad_input(format!("BOARDROOM_TOKEN: {e}")),
        e @ (ServeError::Bind { .. } | ServeError::TeamTwice { .. }) => {
            CliError::context(Kind::BadInput, "serve", e)
        }
        e => CliError::context(Kind::Failed, "serve", e),
    })?;
    eprintln!(
        "serve: listening on {} (API under /v1, described at {}openapi.json); runs in {}; \
         teams: {}; at most {} runs at once",
        server.url(),
        server.url(),
        server.runs_dir().display(),
        server.teams().join(", "),
        args.max_runs
    );
    eprintln!("serve: the bearer token is {told}");
    match super::observe::ctrl_c() {
        Some(presses) => {
            eprintln!("serve: Ctrl-C to stop (live runs are saved, resumable)");
            let _ = presses.recv();
            eprintln!("serve: stopping: live runs are saved where they stand");
            server.stop();
        }
        None => server.wait(),
    }
    Ok(Outcome::Done)
}
