//! The driver's configuration string (`HDF5_DRIVER_CONFIG`, or the `config` argument of
//! `H5Pset_driver_by_name`): comma-separated `key=value`, sizes like `8MiB`. An unknown key or
//! a bad value fails the open with a message saying which and why.

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Gds {
    /// cuFile when usable, the compat path otherwise.
    #[default]
    Auto,
    /// cuFile or fail.
    On,
    /// Never cuFile.
    Off,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub gds: Gds,
    /// Bytes per cuFile/pread piece of a large transfer.
    pub block: usize,
    /// Workers moving the pieces of one large transfer in parallel.
    pub threads: usize,
    /// Bytes of each of the (at most two) staging buffers of the compat path.
    pub bounce: usize,
    /// O_DIRECT for raw data, through an aligned bounce buffer for unaligned ends.
    pub direct: bool,
    /// Start the disk writing each raw-data piece as soon as it is written, so a later fsync
    /// waits for the tail only instead of the whole transfer (writes overlap the disk).
    pub writeback: bool,
    /// Raw data is not written, only its place in the file reserved: another writer puts the
    /// bytes there afterwards, at the places HDF5 chose (h5tile's compressed subfiles, whose
    /// ranks write their own chunks once the file's first rank has laid them out).
    pub reserve: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            gds: Gds::Auto,
            block: 8 << 20,
            threads: 1,
            bounce: 16 << 20,
            direct: false,
            writeback: false,
            reserve: false,
        }
    }
}

/// The configuration as a value, for a driver registered in the same process as its caller
/// (`H5Pset_driver` with this as the driver information; HDF5 copies it byte for byte, the
/// class's `fapl_size`). The tag tells it from anything else.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverInfo {
    tag: u64,
    pub config: Config,
}

impl DriverInfo {
    const TAG: u64 = u64::from_le_bytes(*b"h5tgds01");

    pub fn new(config: Config) -> DriverInfo {
        DriverInfo {
            tag: DriverInfo::TAG,
            config,
        }
    }

    /// The configuration, when `self` is one of ours.
    pub fn config(&self) -> Option<Config> {
        (self.tag == DriverInfo::TAG).then_some(self.config)
    }
}

/// O_DIRECT and cuFile work in multiples of this.
pub const ALIGN: usize = 4096;

impl Config {
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut config = Config::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("'{item}' is not key=value"))?;
            if seen.contains(&key) {
                return Err(format!("'{key}' is given twice"));
            }
            seen.push(key);
            match key {
                "gds" => {
                    config.gds = match value {
                        "auto" => Gds::Auto,
                        "on" => Gds::On,
                        "off" => Gds::Off,
                        _ => return Err(format!("gds={value}: expected auto, on or off")),
                    }
                }
                "direct" => config.direct = on_off(key, value)?,
                "writeback" => config.writeback = on_off(key, value)?,
                "reserve" => config.reserve = on_off(key, value)?,
                "block" => config.block = aligned_size(key, value, ALIGN)?,
                "bounce" => config.bounce = aligned_size(key, value, 64 << 10)?,
                "threads" => {
                    config.threads = value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=256).contains(n))
                        .ok_or_else(|| format!("threads={value}: expected a whole number from 1 to 256"))?
                }
                _ => {
                    return Err(format!(
                        "unknown key '{key}' (known: gds=auto|on|off, block=SIZE, threads=N, bounce=SIZE, direct=on|off, writeback=on|off, reserve=on|off)"
                    ))
                }
            }
        }
        Ok(config)
    }
}

impl Config {
    /// Keys given that have no effect in this combination, said in words for a warning.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.direct && self.writeback {
            out.push(
                "writeback=on is ignored with direct=on (raw data bypasses the page cache)".into(),
            );
        }
        out
    }
}

/// The configuration as the text `parse` reads back (for the log).
impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gds = match self.gds {
            Gds::Auto => "auto",
            Gds::On => "on",
            Gds::Off => "off",
        };
        let on = |b: bool| if b { "on" } else { "off" };
        write!(
            f,
            "gds={gds},block={},threads={},bounce={},direct={},writeback={}",
            self.block,
            self.threads,
            self.bounce,
            on(self.direct),
            on(self.writeback)
        )?;
        match self.reserve {
            true => write!(f, ",reserve=on"),
            false => Ok(()),
        }
    }
}

fn on_off(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{key}={value}: expected on or off")),
    }
}

fn aligned_size(key: &str, value: &str, at_least: usize) -> Result<usize, String> {
    let bytes = parse_size(value)
        .ok_or_else(|| format!("{key}={value}: expected a size such as 8MiB, 512KiB or 1048576"))?;
    if bytes < at_least || bytes % ALIGN != 0 {
        return Err(format!(
            "{key}={value}: must be at least {at_least} bytes and a multiple of {ALIGN}"
        ));
    }
    Ok(bytes)
}

/// "8MiB", "8M", "8MB" (all 2^23), "512KiB", "1GiB", "4096", "4096B".
pub fn parse_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    number.checked_mul(1usize << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("8MiB"), Some(8 << 20));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("512KiB"), Some(512 << 10));
        assert_eq!(parse_size("1gib"), Some(1 << 30));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("4096B"), Some(4096));
        for bad in ["", "MiB", "8XiB", "-1", "1.5MiB", "99999999999999999999"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_full_config_parses_and_the_empty_one_is_the_default() {
        let c = Config::parse("gds=off, block=4MiB,threads=4,bounce=16MiB,direct=on,writeback=on")
            .unwrap();
        assert_eq!(
            c,
            Config {
                gds: Gds::Off,
                block: 4 << 20,
                threads: 4,
                bounce: 16 << 20,
                direct: true,
                writeback: true,
                reserve: false,
            }
        );
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert_eq!(Config::parse(" , ").unwrap(), Config::default());
    }

    #[test]
    fn a_config_prints_as_text_that_parses_back_to_it() {
        let c = Config::parse("gds=on,block=4MiB,threads=3,direct=on").unwrap();
        assert_eq!(Config::parse(&c.to_string()).unwrap(), c);
        let r = Config::parse("reserve=on").unwrap();
        assert!(r.reserve);
        assert_eq!(Config::parse(&r.to_string()).unwrap(), r);
        assert_eq!(DriverInfo::new(c).config(), Some(c));
    }

    #[test]
    fn keys_without_effect_are_named() {
        assert!(Config::parse("direct=on").unwrap().warnings().is_empty());
        let w = Config::parse("direct=on,writeback=on").unwrap().warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("writeback=on is ignored with direct=on"),
            "{w:?}"
        );
    }

    #[test]
    fn bad_keys_and_values_say_what_is_wrong() {
        let err = |s: &str| Config::parse(s).unwrap_err();
        assert!(err("speed=fast").contains("unknown key 'speed'"));
        assert!(err("gds=maybe").contains("gds=maybe"));
        assert!(err("block=3000").contains("multiple of 4096"));
        assert!(err("block=lots").contains("expected a size"));
        assert!(err("threads=0").contains("1 to 256"));
        assert!(err("bounce=4KiB").contains("at least 65536"));
        assert!(err("direct=yes").contains("on or off"));
        assert!(err("writeback=1").contains("writeback=1: expected on or off"));
        assert!(err("gds").contains("not key=value"));
        assert!(err("gds=on,gds=off").contains("twice"));
    }
}
