//! The `agentry` binary on a pseudo-terminal, as a person runs it: for the
//! tests of what it shows on a terminal (the progress display).
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

/// What a command run on a terminal showed, and how it ended.
#[derive(Debug)]
pub struct OnTerminal {
    /// Everything written to the terminal, escape sequences and all.
    pub screen: String,
    /// The exit code.
    pub code: u32,
}

/// A command to run on a terminal: `agentry ARGS` in `dir` with only `env`.
pub struct TerminalRun {
    pub dir: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// When set, stdout goes to this file instead of the terminal (stdin
    /// and stderr stay on it).
    pub stdout_to: Option<PathBuf>,
    /// Killed (and the test failed) past this.
    pub timeout: Duration,
}

impl TerminalRun {
    /// `agentry ARGS` in `dir`, with an empty environment but for
    /// `TERM`, a minute at most.
    pub fn new(dir: &Path, args: &[&str]) -> Self {
        Self {
            dir: dir.to_owned(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: vec![("TERM".to_owned(), "xterm-256color".to_owned())],
            stdout_to: None,
            timeout: Duration::from_secs(60),
        }
    }

    /// Adds the variable `name`.
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.env.push((name.to_owned(), value.into()));
        self
    }

    /// Sends stdout to `file`.
    pub fn stdout_to(mut self, file: PathBuf) -> Self {
        self.stdout_to = Some(file);
        self
    }

    /// Allows `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs it to the end (blocking: call it off an async runtime).
    pub fn run(self) -> OnTerminal {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("a pseudo-terminal");
        let binary = assert_cmd::cargo::cargo_bin("agentry");
        let mut command = match &self.stdout_to {
            // The shell leaves stderr on the terminal and points stdout at the file.
            Some(_) => {
                let mut command = CommandBuilder::new("/bin/sh");
                command.arg("-c");
                command.arg("exec \"$0\" \"$@\" >\"$AGENTRY_TEST_STDOUT\"");
                command.arg(&binary);
                command
            }
            None => CommandBuilder::new(&binary),
        };
        command.args(&self.args);
        command.env_clear();
        if let Some(file) = &self.stdout_to {
            command.env("AGENTRY_TEST_STDOUT", file);
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command.cwd(&self.dir);
        let mut child = pty
            .slave
            .spawn_command(command)
            .expect("agentry starts on the terminal");
        // Only the child holds the terminal now: its end is the reader's end.
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pty.master.try_clone_reader().expect("the terminal's reader");
        let reading = {
            let screen = Arc::clone(&screen);
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                // Linux answers EIO once the child's side is closed.
                while let Ok(read @ 1..) = reader.read(&mut buffer) {
                    screen
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend_from_slice(&buffer[..read]);
                }
            })
        };
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("the child's status") {
                break status;
            }
            if started.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                let shown =
                    String::from_utf8_lossy(&screen.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
                panic!(
                    "agentry {:?} ran past {:?}; the terminal showed:\n{shown}",
                    self.args, self.timeout
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // The reader ends when the terminal closes; a grandchild holding it
        // open (none should) must not hang the test.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !reading.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(pty.master);
        let screen = String::from_utf8_lossy(&screen.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
        OnTerminal {
            screen,
            code: status.exit_code(),
        }
    }
}

impl OnTerminal {
    /// The terminal's screen at the end, as a terminal (40 × 200) shows it:
    /// what the person is left with once the progress is cleared.
    pub fn final_screen(&self) -> String {
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a terminal size");
        let mut terminal = vt100::Parser::new(size(ROWS), size(COLS), 0);
        terminal.process(self.screen.as_bytes());
        terminal.screen().contents()
    }

    /// Everything written, escape sequences taken out ([`plain`]): every
    /// line the progress display drew along the way is in it.
    pub fn everything(&self) -> String {
        plain(&self.screen)
    }
}

const ROWS: u16 = 40;
const COLS: u16 = 200;

/// `text` without its terminal escape sequences (CSI and OSC) and carriage
/// returns, for reading what a person saw.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte.
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
