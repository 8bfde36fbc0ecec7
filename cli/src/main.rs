//! `h5tile`, the command-line tool: list (`ls`), check (`check`), copy (`cp`), pack (`pack`)
//! and remove (`rm`) h5tile's files (a master with its tile files or subfiles) and any other
//! HDF5 file, as far as it allows. One module per command; each turns its arguments into output
//! on stdout (text, or one JSON document with `--json`) or a `Failure`.

mod check;
mod check_parts;
mod cp;
mod failure;
mod ls;
mod pack;
mod progress;
mod rm;
mod series;
mod show;

use clap::{CommandFactory, Parser, Subcommand};
use failure::Failure;
use std::process::ExitCode;

const ABOUT: &str = "List, check, copy, pack and remove h5tile's datasets and their tile files";

const LONG_ABOUT: &str = "\
List, check, copy, pack and remove h5tile's datasets: a master file holding virtual datasets
and the tile files or subfiles in its tile folder (<master>.tiles/). Works on any HDF5 file as
far as it allows: contiguous, chunked and compact datasets, and the virtual datasets h5py and
Legate write.

Every command takes --json (one JSON document on stdout instead of text) and --progress WHEN
(auto, always or never: whether check, cp and pack show their progress on stderr). Exit
status: 0 on success; 1 when `check` found problems or a command could not finish its work; 2
for a bad command line, an input that cannot be opened, or a refusal an option would lift. On
failure one line on stderr says what failed and why: `h5tile: <what failed>: <why>`.";

#[derive(Parser)]
#[command(name = "h5tile", version, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// Write one JSON document on stdout instead of text
    #[arg(long, global = true)]
    json: bool,
    /// When to show the progress of check, cp and pack on stderr
    #[arg(long, global = true, value_name = "WHEN", value_enum, default_value_t)]
    progress: progress::When,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List datasets: type, shape, storage, and the tiles of virtual ones; or a series' checkpoints
    #[command(long_about = ls::LONG_ABOUT, after_long_help = ls::EXAMPLES)]
    Ls(ls::Args),
    /// Check that virtual datasets' sources are there and their checksums match (of a file, or
    /// of a series' latest checkpoint)
    #[command(long_about = check::LONG_ABOUT, after_long_help = check::EXAMPLES)]
    Check(check::Args),
    /// Copy a master with the tile files it refers to, verified
    #[command(long_about = cp::LONG_ABOUT, after_long_help = cp::EXAMPLES)]
    Cp(cp::Args),
    /// Pack a file into one self-contained file, its virtual datasets made contiguous (or
    /// compressed, as their tiles are)
    #[command(long_about = pack::LONG_ABOUT, after_long_help = pack::EXAMPLES)]
    Pack(pack::Args),
    /// Remove a master and the tile files it refers to
    #[command(long_about = rm::LONG_ABOUT, after_long_help = rm::EXAMPLES)]
    Rm(rm::Args),
    /// A share of `check`'s source files, opened for a `check` that runs it (not for users)
    #[command(hide = true)]
    CheckPart(check_parts::PartArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
}

const COMPLETIONS_EXAMPLES: &str = "\
Example:
  h5tile completions bash > ~/.local/share/bash-completion/completions/h5tile";

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands that only read end quietly when what reads their output stops (`h5tile ls
    // -l big.h5 | head`), as other Unix tools do; Rust would panic on the broken pipe. Those
    // that write files keep the signal ignored, so they always finish or clean up.
    if matches!(
        cli.command,
        Command::Ls(_) | Command::Check(_) | Command::CheckPart(_) | Command::Completions { .. }
    ) {
        // SAFETY: restoring a signal's default disposition before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let json = cli.json;
    let progress = cli.progress.with_json(json);
    let done = match &cli.command {
        Command::Ls(args) => ls::run(args, json),
        Command::Check(args) => check::run(args, json, progress),
        Command::CheckPart(args) => check_parts::run_part(args),
        Command::Cp(args) => cp::run(args, json, progress),
        Command::Pack(args) => pack::run(args, json, progress),
        Command::Rm(args) => rm::run(args, json),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(*shell, &mut command, "h5tile", &mut std::io::stdout());
            Ok(())
        }
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            eprintln!("h5tile: {message}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
