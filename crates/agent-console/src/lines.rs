//! Where a chat's input comes from: a [`LineReader`] (the terminal's line
//! editor, plain lines, or a test's script) and [`Interrupts`] (Ctrl-C).

use std::io;
#[cfg(feature = "line-editor")]
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

/// What the user typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A line.
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D (end of input).
    Eof,
}

/// A source of input lines (the terminal's line editor, or a script).
pub trait LineReader {
    /// Reads one line, showing `prompt`.
    fn read_line(&mut self, prompt: &str) -> io::Result<Input>;

    /// Remembers a line for the editor's history.
    fn remember(&mut self, line: &str) {
        let _ = line;
    }
}

/// Interruptions (Ctrl-C) while a run is going on.
pub trait Interrupts: Send + Sync {
    /// Resolves at the next interruption.
    fn next(&self) -> BoxFuture<'static, ()>;
}

/// Ctrl-C, through `tokio::signal`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CtrlC;

impl Interrupts for CtrlC {
    fn next(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// No interruptions ever.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInterrupts;

impl Interrupts for NoInterrupts {
    fn next(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// Lines read as they come, with no editing or history: the reader of a
/// build without the `line-editor` feature. The prompt is written to `out`
/// before each line; the end of the input is Ctrl-D.
#[derive(Debug)]
pub struct PlainLines<R, W> {
    input: R,
    out: W,
}

impl PlainLines<io::StdinLock<'static>, io::Stdout> {
    /// Lines of stdin, prompts on stdout.
    pub fn stdio() -> Self {
        Self::new(io::stdin().lock(), io::stdout())
    }
}

impl<R: io::BufRead, W: io::Write> PlainLines<R, W> {
    /// Lines of `input`, prompts on `out`.
    pub fn new(input: R, out: W) -> Self {
        Self { input, out }
    }
}

impl<R: io::BufRead, W: io::Write> LineReader for PlainLines<R, W> {
    fn read_line(&mut self, prompt: &str) -> io::Result<Input> {
        self.out.write_all(prompt.as_bytes())?;
        self.out.flush()?;
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            return Ok(Input::Eof);
        }
        let end = line.trim_end_matches(['\n', '\r']).len();
        line.truncate(end);
        Ok(Input::Line(line))
    }
}

/// The terminal's line editor, with history kept in a file.
#[cfg(feature = "line-editor")]
pub struct Rustyline {
    editor: rustyline::DefaultEditor,
    history: Option<PathBuf>,
}

#[cfg(feature = "line-editor")]
impl std::fmt::Debug for Rustyline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rustyline")
            .field("history", &self.history)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "line-editor")]
impl Rustyline {
    /// An editor whose history is loaded from and saved to `history`.
    ///
    /// # Errors
    ///
    /// The editor cannot take the terminal.
    pub fn new(history: Option<PathBuf>) -> io::Result<Self> {
        let mut editor = rustyline::DefaultEditor::new()
            .map_err(|error| io::Error::other(format!("starting the line editor: {error}")))?;
        if let Some(path) = &history {
            let _ = editor.load_history(path);
        }
        Ok(Self { editor, history })
    }
}

#[cfg(feature = "line-editor")]
impl LineReader for Rustyline {
    fn read_line(&mut self, prompt: &str) -> io::Result<Input> {
        use rustyline::error::ReadlineError;
        match self.editor.readline(prompt) {
            Ok(line) => Ok(Input::Line(line)),
            Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(ReadlineError::Eof) => Ok(Input::Eof),
            Err(ReadlineError::Io(error)) => Err(error),
            Err(error) => Err(io::Error::other(error.to_string())),
        }
    }

    fn remember(&mut self, line: &str) {
        let _ = self.editor.add_history_entry(line);
        if let Some(path) = &self.history {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = self.editor.save_history(path);
        }
    }
}

/// Shares an [`Interrupts`] implementation.
impl<T: Interrupts + ?Sized> Interrupts for Arc<T> {
    fn next(&self) -> BoxFuture<'static, ()> {
        (**self).next()
    }
}
