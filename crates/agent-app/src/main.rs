//! `agentry`: tool-using LLM agents from the command line. See `agentry --help`.

fn main() -> std::process::ExitCode {
    agent_app::cli::main()
}
