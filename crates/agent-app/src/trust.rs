//! `agentry trust`: records (or withdraws) the trust in a folder's
//! `agentry.toml`; the check itself is the facade's
//! ([`agentry::config::trust`]).

use std::path::{Path, PathBuf};

use agentry::config::{
    CONFIG_FILE_NAME, CONFIG_VAR, Env, Overrides, Settings, TrustStore, file_digest, sensitive_keys,
};

use crate::error::{AppError, EXIT_OK};
use crate::output::stdout_line;

/// `agentry trust`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TrustArgs {
    /// The folder whose agentry.toml to trust (default: the working directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Withdraw the trust instead.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List the trusted files, and whether each still has the contents it was trusted with.
    #[arg(long)]
    pub list: bool,
}

/// Records (or, with `--revoke`, withdraws) the trust in a folder's
/// `agentry.toml`, saying what the file may now do.
pub(crate) fn run(args: &TrustArgs, env: &Env, cwd: &Path) -> Result<u8, AppError> {
    let store = TrustStore::in_home(&env.agentry_home());
    if args.list {
        for (file, digest) in store.list()? {
            let state = match file_digest(&file) {
                Ok(now) if now == digest => "trusted",
                Ok(_) => "changed since trusted: not trusted",
                Err(_) => "missing",
            };
            stdout_line(&format!("{}  {state}", file.display()))?;
        }
        return Ok(EXIT_OK);
    }
    let dir = args.dir.as_ref().map_or_else(|| cwd.to_owned(), |dir| cwd.join(dir));
    let file = dir.join(CONFIG_FILE_NAME);
    if args.revoke {
        let said = if store.revoke(&file)? {
            format!("{} is no longer trusted", file.display())
        } else {
            format!("{} was not trusted", file.display())
        };
        stdout_line(&said)?;
        return Ok(EXIT_OK);
    }
    if !file.is_file() {
        return Err(AppError::Usage(format!("there is no {} to trust", file.display())));
    }
    // Read as a working-directory file, as it will be used: no overrides.
    let own_env = Env::from_pairs(env.iter().filter(|(name, _)| *name != CONFIG_VAR));
    let settings = Settings::read(&Overrides::default(), &own_env, &dir)?;
    let digest = file_digest(&file).map_err(|error| AppError::io(format!("reading {}", file.display()), error))?;
    let keys = sensitive_keys(&settings, &own_env);
    store.trust(&file, &digest)?;
    let mut said = format!("trusted {} (sha256 {digest})", file.display());
    if keys.is_empty() {
        said.push_str("\nit sets no key that runs a program or sends a secret");
    } else {
        said.push_str("\nit may now:");
        for key in &keys {
            said.push_str("\n  - ");
            said.push_str(key);
        }
    }
    stdout_line(&said)?;
    Ok(EXIT_OK)
}
