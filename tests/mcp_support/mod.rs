//! Shared by the MCP tests: where the reference servers are installed and
//! which processes are children of this test binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use boardroom::mcp::McpServerConfig;

/// The entry point of an installed reference server; fails (never skips)
/// when it is missing.
pub fn server_script(package: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup-mcp-servers.sh (npm install of the reference MCP servers)",
        path.display()
    );
    path
}

/// `server-everything` over stdio.
pub fn everything() -> McpServerConfig {
    let script = server_script("server-everything");
    McpServerConfig::new(
        "node",
        [script.to_string_lossy().into_owned(), "stdio".into()],
    )
}

/// `server-filesystem` allowed to touch `dir` only.
pub fn filesystem(dir: &Path) -> McpServerConfig {
    let script = server_script("server-filesystem");
    McpServerConfig::new(
        "node",
        [
            script.to_string_lossy().into_owned(),
            dir.to_string_lossy().into_owned(),
        ],
    )
}

/// Whether a process with this id exists (a reaped child does not).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Kills a process with SIGKILL.
pub fn kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {pid} failed");
}

/// Ids of the live child processes of this test binary.
pub fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let _state = fields.next();
        if fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(me) {
            out.push(pid);
        }
    }
    out
}

/// `server-everything` over Streamable HTTP (`streamableHttp`, port from
/// `PORT`), a child of the test that can be killed and started again on
/// the same port. Killed and reaped on drop.
pub struct HttpEverything {
    port: u16,
    child: parking_lot::Mutex<Option<std::process::Child>>,
    log: PathBuf,
}

impl HttpEverything {
    /// Starts it on a free loopback port and waits (bounded) until it
    /// accepts connections.
    pub fn start() -> HttpEverything {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::env::temp_dir().join(format!("boardroom-everything-{port}.log"));
        let server = HttpEverything {
            port,
            child: parking_lot::Mutex::new(None),
            log,
        };
        server.revive();
        server
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().as_ref().map(|c| c.id()).expect("running")
    }

    /// What it wrote (stdout and stderr).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills it (SIGKILL) and reaps it.
    pub fn kill(&self) {
        if let Some(mut c) = self.child.lock().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it (again) on its port; waits up to 60 s for it to listen.
    pub fn revive(&self) {
        let script = server_script("server-everything");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = std::process::Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", self.port.to_string())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start node server-everything streamableHttp");
        *self.child.lock() = Some(child);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                std::time::Instant::now() < until,
                "server-everything did not listen on port {}: {}",
                self.port,
                self.output()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}
