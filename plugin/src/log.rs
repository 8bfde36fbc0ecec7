//! `H5TILE_LOG=off|error|warn|info|debug`: what h5tile and its driver print to standard error.
//! Unset (or any other value): `warn`, so that nothing falls back to a slower or weaker path
//! unsaid; a run where nothing falls back prints nothing. `off` prints nothing at all.

use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off,
    Error,
    Warn,
    Info,
    Debug,
}

impl Level {
    pub fn parse(value: Option<&str>) -> Level {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("error") => Level::Error,
            Some("warn") | Some("warning") => Level::Warn,
            Some("info") => Level::Info,
            Some("debug") => Level::Debug,
            Some("off") | Some("none") => Level::Off,
            _ => Level::Warn,
        }
    }
}

fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| Level::parse(std::env::var("H5TILE_LOG").ok().as_deref()))
}

fn emit(at: Level, tag: &str, message: &str) {
    if level() >= at {
        // One write of the whole line: `eprintln!` writes its pieces apart, and the lines of
        // ranks sharing a terminal came out cut into each other.
        let line = format!("h5tile_gds {tag}: {message}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    }
}

pub fn error(message: &str) {
    emit(Level::Error, "error", message);
}

pub fn warn(message: &str) {
    emit(Level::Warn, "warn", message);
}

pub fn info(message: &str) {
    emit(Level::Info, "info", message);
}

pub fn debug(message: &str) {
    emit(Level::Debug, "debug", message);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Level::parse(None), Level::Warn);
        assert_eq!(Level::parse(Some("INFO")), Level::Info);
        assert_eq!(Level::parse(Some(" debug ")), Level::Debug);
        assert_eq!(Level::parse(Some("loud")), Level::Warn);
        assert_eq!(Level::parse(Some("off")), Level::Off);
        assert!(
            Level::Debug > Level::Info && Level::Info > Level::Warn && Level::Error > Level::Off
        );
    }
}
