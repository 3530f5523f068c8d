//! The async runtime of the targets that drive async code.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Runtime};

/// Runs `future` to its end on one runtime kept for the process (a fuzzer
/// calls a target millions of times).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| match Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("the fuzz targets' runtime could not start: {error}"),
    });
    runtime.block_on(future)
}
