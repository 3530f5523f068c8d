//! A throwaway PostgreSQL server for tests (feature `test-cluster`).
//!
//! [`TempCluster::start`] runs the installed server's own tools: `initdb`
//! into a new temporary directory, then `pg_ctl start` on a free port of
//! 127.0.0.1, with durability off (`fsync = off`: the data is thrown away
//! anyway). Tests skip when PostgreSQL is not installed, unless
//! [`REQUIRE_ENV`] is set (as CI does): then they fail.
//!
//! `initdb` refuses to run as root, so when this process is root the tools
//! run as the `postgres` system user (`runuser -u postgres`; the Debian
//! `postgresql` package creates that user), which then owns the directory.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use sqlx_core::connection::Connection as _;
use sqlx_core::executor::Executor as _;
use sqlx_postgres::PgConnection;

/// The environment variable that turns a missing PostgreSQL from a skipped
/// test into a failed one.
pub const REQUIRE_ENV: &str = "AGENTRY_REQUIRE_POSTGRES";

/// The user the server runs as when this process is root.
const SYSTEM_USER: &str = "postgres";

/// Where Debian and Ubuntu install each major version's binaries.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// Attempts at finding a free port before giving up.
const PORT_ATTEMPTS: usize = 3;

/// A PostgreSQL server of its own, in a temporary directory, reachable as
/// the superuser `postgres` without a password. Dropping it stops the
/// server (immediately: nothing is flushed) and removes the directory.
///
/// A cluster that is never dropped (kept in a `static`, or in a process
/// that crashes) is cleaned up all the same: a small watchdog process
/// stops the server and removes the directory within about a second of
/// this process ending.
#[derive(Debug)]
pub struct TempCluster {
    /// Removed when dropped (after the server stopped).
    dir: Option<tempfile::TempDir>,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    /// `Some("postgres")` when the tools run as that user.
    run_as: Option<&'static str>,
    watchdog: Option<Child>,
}

impl TempCluster {
    /// Starts a server. `Ok(None)`, after a note on stderr, when PostgreSQL
    /// is not installed (neither `initdb` and `pg_ctl` on `PATH` nor the
    /// newest `/usr/lib/postgresql/*/bin`) and [`REQUIRE_ENV`] is not set;
    /// an error when it is, or when the server cannot be set up or started
    /// (with what the tools printed, and the server's log).
    pub fn start() -> Result<Option<Self>, String> {
        let Some(bin) = find_bin_dir() else {
            let reason = format!(
                "PostgreSQL is not installed (no initdb and pg_ctl on PATH or in {DEBIAN_ROOT}/*/bin; \
                 Debian: apt-get install postgresql)"
            );
            if std::env::var_os(REQUIRE_ENV).is_some() {
                return Err(format!("{reason}, and {REQUIRE_ENV} is set"));
            }
            eprintln!("note: skipping the PostgreSQL tests: {reason}; set {REQUIRE_ENV}=1 to fail instead");
            return Ok(None);
        };
        Self::start_with(&bin).map(Some)
    }

    /// Starts a server with the `initdb` and `pg_ctl` of `bin`.
    pub fn start_with(bin: &Path) -> Result<Self, String> {
        let run_as = if effective_uid_is_root()? {
            Some(SYSTEM_USER)
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix("agentry-pg-")
            .tempdir()
            .map_err(|error| format!("creating a temporary directory for PostgreSQL: {error}"))?;
        if let Some(user) = run_as {
            run(Command::new("chown").arg(format!("{user}:")).arg(dir.path()))
                .map_err(|error| format!("running as root, the server runs as `{user}`, but: {error}"))?;
        }
        let mut cluster = Self {
            data: dir.path().join("data"),
            dir: Some(dir),
            bin: bin.to_path_buf(),
            port: 0,
            run_as,
            watchdog: None,
        };
        cluster.init()?;
        cluster.launch()?;
        cluster.watchdog = cluster.spawn_watchdog().ok();
        Ok(cluster)
    }

    /// The URL of the `postgres` database, as the superuser `postgres`:
    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The server's TCP port (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates the database `name` (ASCII letters, digits, `_` and `-`, at
    /// most 63 bytes) and returns its URL; an error when it exists.
    pub async fn create_database(&self, name: &str) -> Result<String, String> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(format!("{name:?} is not a database name this helper accepts"));
        }
        let failed = |error: sqlx_core::error::Error| format!("creating database {name}: {error}");
        let mut conn = PgConnection::connect(&self.url()).await.map_err(failed)?;
        // The name was checked above: quoting it is enough.
        conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
            .await
            .map_err(failed)?;
        conn.close().await.map_err(failed)?;
        Ok(self.url_of(name))
    }

    fn url_of(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), tempfile::TempDir::path)
    }

    /// A command running `program` of the server's binaries, as the server's
    /// user, in the cluster's directory.
    fn tool(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut command = match self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        };
        command.current_dir(self.dir());
        command
    }

    /// `initdb`, then the settings of a fast throwaway server.
    fn init(&self) -> Result<(), String> {
        run(self.tool("initdb").arg("-D").arg(&self.data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]))
        .map_err(|error| format!("initdb failed: {error}"))?;
        let mut settings = String::from("\n# agent-store-postgres TempCluster\nlisten_addresses = '127.0.0.1'\n");
        let sockets = self.dir().display().to_string().replace('\'', "''");
        let _ = writeln!(settings, "unix_socket_directories = '{sockets}'");
        settings.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n");
        OpenOptions::new()
            .append(true)
            .open(self.data.join("postgresql.conf"))
            .and_then(|mut file| file.write_all(settings.as_bytes()))
            .map_err(|error| format!("configuring the server: {error}"))
    }

    /// `pg_ctl start` on a free port, trying another when the one picked
    /// was taken meanwhile.
    fn launch(&mut self) -> Result<(), String> {
        let log = self.dir().join("server.log");
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            self.port = free_port()?;
            let started = run(self
                .tool("pg_ctl")
                .args(["start", "-w", "-t", "60", "-D"])
                .arg(&self.data)
                .arg("-l")
                .arg(&log)
                .args(["-o", &format!("-p {}", self.port)]));
            let Err(error) = started else {
                return Ok(());
            };
            let server_log = std::fs::read_to_string(&log).unwrap_or_default();
            last = format!(
                "pg_ctl start failed: {error}\nserver log ({}):\n{server_log}",
                log.display()
            );
            if !server_log.contains("could not bind") {
                break;
            }
        }
        Err(last)
    }

    /// A process that stops the server and removes the directory once this
    /// process has ended, in case this cluster is never dropped.
    fn spawn_watchdog(&self) -> std::io::Result<Child> {
        use std::os::unix::process::CommandExt as _;
        let stop = self.tool("pg_ctl");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(
                r#"owner=$1; dir=$2; shift 2
                while kill -0 "$owner" 2>/dev/null; do sleep 1; done
                "$@" >/dev/null 2>&1
                rm -rf "$dir""#,
            )
            .arg("agentry-pg-watchdog")
            .arg(std::process::id().to_string())
            .arg(self.dir())
            .arg(stop.get_program())
            .args(stop.get_args())
            .args(["stop", "-m", "immediate", "-D"])
            .arg(&self.data)
            .current_dir(self.dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Not in the terminal's process group: Ctrl-C must not kill it.
            .process_group(0);
        command.spawn()
    }
}

impl Drop for TempCluster {
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        let _ = self
            .tool("pg_ctl")
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(&self.data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// Runs `command` to completion; its output as the error when it fails.
fn run(command: &mut Command) -> Result<Output, String> {
    let line = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("could not run `{line}`: {error}"))?;
    if output.status.success() {
        return Ok(output);
    }
    Err(format!(
        "`{line}` exited with {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Whether this process runs as root (`id -u`).
fn effective_uid_is_root() -> Result<bool, String> {
    let output = run(Command::new("id").arg("-u"))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// A TCP port of 127.0.0.1 that is free now.
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| format!("finding a free port: {error}"))
}

/// The directory holding `initdb` and `pg_ctl`: on `PATH`, else the newest
/// version's under [`DEBIAN_ROOT`].
fn find_bin_dir() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| has_tools(dir))
    {
        return Some(dir);
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry
                .file_name()
                .to_str()?
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            let bin = entry.path().join("bin");
            has_tools(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::net::TcpStream;

    use super::*;

    #[test]
    fn a_dropped_cluster_stops_its_server_and_removes_its_directory() {
        let Some(cluster) = TempCluster::start().unwrap() else {
            return;
        };
        let dir = cluster.dir().to_path_buf();
        let port = cluster.port();
        assert!(dir.join("data/PG_VERSION").is_file());
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(cluster.watchdog.is_some());
        drop(cluster);
        assert!(!dir.exists());
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    }

    #[tokio::test]
    async fn database_names_are_checked_before_anything_connects() {
        let cluster = TempCluster {
            dir: None,
            data: PathBuf::new(),
            bin: PathBuf::from("/nonexistent"),
            port: 1,
            run_as: None,
            watchdog: None,
        };
        for bad in ["", "a b", "x\";drop", &"x".repeat(64)] {
            let error = cluster.create_database(bad).await.err();
            assert!(error.is_some_and(|e| e.contains("not a database name")), "{bad:?}");
        }
        assert_eq!(cluster.url(), "postgres://postgres@127.0.0.1:1/postgres");
    }
}
