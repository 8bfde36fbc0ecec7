//! `h5tile`, the command-line tool: list (`ls`), check (`check`), copy (`cp`), pack (`pack`)
//! and remove (`rm`) h5tile's files (a master with its tile files or subfiles) and any other
//! HDF5 file, as far as it allows. One module per command; each turns its arguments into output
//! on stdout (text, or one JSON document with `--json`) or a `Failure`.

mod check;
mod check_parts;
mod cp;
mod dataset_json;
mod failure;
mod ls;
mod pack;
mod progress;
mod rm;
mod series;
mod series_files;
mod show;

use clap::{CommandFactory, Parser, Subcommand};
use failure::{FailedJson, Failure};
use std::process::ExitCode;

const ABOUT: &str = "List, check, copy, pack and remove h5tile's datasets and their tile files";

const LONG_ABOUT: &str = "\
List, check, copy, pack and remove h5tile's datasets: a master file holding virtual datasets
and the tile files or subfiles in its tile folder (<master>.tiles/). Works on any HDF5 file as
far as it allows: contiguous, chunked and compact datasets, and the virtual datasets h5py and
Legate write.

A series folder (numbered checkpoints ckpt.<step>.h5 and the record `latest`, as h5tile's
series write them) is taken whole: `ls` lists its checkpoints, `check` checks its latest
complete one, `cp` copies it, `pack` packs its latest complete checkpoint, `rm` removes it.

Every command takes --json (one JSON document on stdout instead of text, on success and on
failure) and --progress WHEN (auto, always or never: whether check, cp and pack show their
progress on stderr). Exit status: 0 on success; 1 when `check` found problems or a command
could not finish its work; 2 for a bad command line, an input that cannot be opened, or a
refusal an option would lift. On failure one line on stderr says what failed and why:
`h5tile: <what failed>: <why>`; with --json, the document then holds \"ok\": false and
\"failure\": {\"exit\", \"kind\" (\"problems\" for exit status 1, \"usage\" for 2), \"status\" (the
library's status name, or null), \"message\" (the line on stderr without \"h5tile: \")}: the
command's own document where it has one (check, ls of several, rm), else {\"ok\", \"command\",
\"failure\"}.";

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
    #[command(long_about = ls::LONG_ABOUT, after_long_help = ls::EXAMPLES,
              override_usage = "h5tile ls [OPTIONS] <FILE|DIR>... [DATASET]")]
    Ls(ls::Args),
    /// Check that virtual datasets' sources are there and their checksums match (of a file, or
    /// of a series' latest checkpoint)
    #[command(long_about = check::LONG_ABOUT, after_long_help = check::EXAMPLES)]
    Check(check::Args),
    /// Copy a master with the tile files it refers to, verified (or a series: its complete
    /// checkpoints and record)
    #[command(long_about = cp::LONG_ABOUT, after_long_help = cp::EXAMPLES)]
    Cp(cp::Args),
    /// Pack a file (or a series' latest complete checkpoint) into one self-contained file, its
    /// virtual datasets made contiguous (or compressed, as their tiles are)
    #[command(long_about = pack::LONG_ABOUT, after_long_help = pack::EXAMPLES)]
    Pack(pack::Args),
    /// Remove a master and the tile files it refers to (or a whole series)
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

/// The name of `command` on the command line.
fn name_of(command: &Command) -> &'static str {
    match command {
        Command::Ls(_) => "ls",
        Command::Check(_) => "check",
        Command::Cp(_) => "cp",
        Command::Pack(_) => "pack",
        Command::Rm(_) => "rm",
        Command::CheckPart(_) => "check-part",
        Command::Completions { .. } => "completions",
    }
}

/// Prints `failure` of `command` as the one JSON document of a command that has none of its
/// own.
fn print_failure(command: Option<String>, failure: &Failure) {
    let doc = FailedJson {
        ok: false,
        command,
        failure: failure.json(),
    };
    // Nothing else can be said when stdout fails too: the line on stderr still is.
    let _ = show::json(&doc);
}

/// The command line, or its error. With --json a bad command line is one JSON document too
/// (clap's own message stays on stderr); help and the version are printed as asked.
fn parse() -> Result<Cli, ExitCode> {
    let error = match Cli::try_parse() {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = args.iter().take_while(|a| *a != "--");
    let shown = matches!(
        error.kind(),
        clap::error::ErrorKind::DisplayHelp
            | clap::error::ErrorKind::DisplayVersion
            | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !shown && options.clone().any(|a| a == "--json") {
        // The command, where the first word that is no option names one.
        let command = options
            .filter(|a| !a.starts_with('-'))
            .find(|a| Cli::command().find_subcommand(a).is_some())
            .cloned();
        // clap's first paragraph, on one line: "the following required arguments were not
        // provided: <DST>".
        let rendered = error.render().to_string();
        let first: Vec<&str> = rendered
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .map(str::trim)
            .collect();
        let first = first.join(" ");
        let message = first.strip_prefix("error: ").unwrap_or(&first).to_string();
        print_failure(command, &Failure::usage(message));
    }
    let _ = error.print();
    Err(ExitCode::from(error.exit_code().clamp(0, 255) as u8))
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
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
        Command::Completions { shell } => completions(*shell, json),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if json && !failure.reported {
                print_failure(Some(name_of(&cli.command).to_string()), &failure);
            }
            eprintln!("h5tile: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// `h5tile completions SHELL`: the script; with --json, {"shell", "script"}.
fn completions(shell: clap_complete::Shell, json: bool) -> Result<(), Failure> {
    let mut command = Cli::command();
    if !json {
        clap_complete::generate(shell, &mut command, "h5tile", &mut std::io::stdout());
        return Ok(());
    }
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "h5tile", &mut script);
    show::json(&serde_json::json!({
        "shell": shell.to_string(),
        "script": String::from_utf8_lossy(&script),
    }))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
