//! Property-based pass over the driver's configuration string (`HDF5_DRIVER_CONFIG`, or the
//! `config` argument of `H5Pset_driver_by_name`): whatever the text, `Config::parse` returns
//! the configuration or a message, never panics, and a configuration made of valid items
//! gives exactly the values they name.
//!
//! 64 cases per property by default; `PROPTEST_CASES=N` runs N (e.g. 100000 for a long run).

use h5tile_gds::{Config, Gds};
use proptest::prelude::*;

/// 64 cases, or `PROPTEST_CASES`.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The keys the parser knows.
const KEYS: [&str; 6] = ["gds", "block", "threads", "bounce", "direct", "writeback"];

/// One comma-separated piece of a configuration, as generated, with what it means.
#[derive(Clone, Debug)]
enum Item {
    /// `key=value` accepted by the parser, and the configuration it gives.
    Valid {
        text: String,
        key: &'static str,
        set: Setting,
    },
    /// A known key with a value it refuses.
    BadValue { text: String, key: &'static str },
    /// A key the parser does not know.
    UnknownKey { text: String, key: String },
    /// A piece without '='.
    NoEquals { text: String },
    /// Whitespace only: skipped.
    Blank { text: String },
}

#[derive(Clone, Copy, Debug)]
enum Setting {
    Gds(Gds),
    Block(usize),
    Threads(usize),
    Bounce(usize),
    Direct(bool),
    Writeback(bool),
}

impl Setting {
    fn apply(self, c: &mut Config) {
        match self {
            Setting::Gds(g) => c.gds = g,
            Setting::Block(n) => c.block = n,
            Setting::Threads(n) => c.threads = n,
            Setting::Bounce(n) => c.bounce = n,
            Setting::Direct(b) => c.direct = b,
            Setting::Writeback(b) => c.writeback = b,
        }
    }
}

impl Item {
    fn text(&self) -> &str {
        match self {
            Item::Valid { text, .. }
            | Item::BadValue { text, .. }
            | Item::UnknownKey { text, .. }
            | Item::NoEquals { text }
            | Item::Blank { text } => text,
        }
    }
}

/// Spaces and tabs around a piece of text (the parser trims keys and values).
fn padded(s: impl Strategy<Value = String> + 'static) -> impl Strategy<Value = String> {
    ("[ \t]{0,2}", s, "[ \t]{0,2}").prop_map(|(a, s, b)| format!("{a}{s}{b}"))
}

/// `key=value` with spaces around either side.
fn item_text(
    key: &'static str,
    value: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    (padded(Just(key.to_string())), padded(value))
        .prop_map(|(k, v)| format!("{k}={v}"))
        .boxed()
}

/// A size of `n` bytes written in one of the units `parse_size` reads (any case, a space
/// before the unit allowed), where `n` is a multiple of the unit.
fn size_text(n: usize) -> BoxedStrategy<String> {
    let mut forms: Vec<BoxedStrategy<String>> = vec![
        Just(n.to_string()).boxed(),
        Just(format!("{n}B")).boxed(),
        Just(format!("000{n}")).boxed(),
    ];
    for (shift, units) in [
        (10, ["k", "KB", "KiB", "kib"]),
        (20, ["m", "MB", "MiB", "mIb"]),
        (30, ["g", "GB", "GiB", "gib"]),
    ] {
        if n.is_multiple_of(1 << shift) {
            let units: Vec<String> = units.iter().map(|u| u.to_string()).collect();
            forms.push(
                (prop::sample::select(units), prop::bool::ANY)
                    .prop_map(move |(u, space)| {
                        format!("{}{}{u}", n >> shift, if space { " " } else { "" })
                    })
                    .boxed(),
            );
        }
    }
    prop::strategy::Union::new(forms).boxed()
}

/// A valid size of at least `at_least` bytes (a multiple of 4096).
fn valid_size(at_least: usize) -> BoxedStrategy<usize> {
    prop_oneof![
        // Small multiples of 4 KiB, whole MiB and whole GiB (still a multiple of 4096).
        (at_least / 4096..=1024usize).prop_map(|k| k * 4096),
        (1usize..=64).prop_map(|m| m << 20),
        (1usize..=4).prop_map(|g| g << 30),
    ]
    .boxed()
}

/// A size text that `key` refuses: not a multiple of 4096, below the least the key takes,
/// too large for usize, in an unknown unit, signed, fractional or empty.
fn bad_size_text(at_least: usize) -> BoxedStrategy<String> {
    prop_oneof![
        (0usize..1 << 20, 1usize..4096).prop_map(|(k, r)| (k * 4096 + r).to_string()),
        (0..at_least / 4096).prop_map(|k| (k * 4096).to_string()),
        Just("99999999999999999999".to_string()),
        Just(format!("{}GiB", usize::MAX >> 29)),
        Just(format!("{}", u128::from(u64::MAX) + 1)),
        "[0-9]{1,4}[xyzXYZ]iB",
        "[0-9]{1,3}\\.[0-9]MiB",
        "[-+][0-9]{4,6}",
        "MiB|B|KiB| ",
        Just(String::new()),
        "[0-9]{2}MiBs",
        Just("٤٠٩٦".to_string()),
    ]
    .boxed()
}

/// Any valid item, with its meaning.
fn valid_item() -> BoxedStrategy<Item> {
    let on_off = |key: &'static str, f: fn(bool) -> Setting| {
        prop::bool::ANY
            .prop_flat_map(move |b| {
                item_text(key, Just(if b { "on" } else { "off" }.to_string())).prop_map(
                    move |text| Item::Valid {
                        text,
                        key,
                        set: f(b),
                    },
                )
            })
            .boxed()
    };
    let size = |key: &'static str, at_least: usize, f: fn(usize) -> Setting| {
        valid_size(at_least)
            .prop_flat_map(move |n| {
                item_text(key, size_text(n)).prop_map(move |text| Item::Valid {
                    text,
                    key,
                    set: f(n),
                })
            })
            .boxed()
    };
    prop_oneof![
        prop::sample::select(vec![
            ("auto", Gds::Auto),
            ("on", Gds::On),
            ("off", Gds::Off)
        ])
        .prop_flat_map(|(v, g)| {
            item_text("gds", Just(v.to_string())).prop_map(move |text| Item::Valid {
                text,
                key: "gds",
                set: Setting::Gds(g),
            })
        }),
        size("block", 4096, Setting::Block),
        size("bounce", 64 << 10, Setting::Bounce),
        // `usize::from_str` takes a leading '+' and leading zeros.
        (1usize..=256, prop::sample::select(vec!["", "+", "00"])).prop_flat_map(|(n, sign)| {
            item_text("threads", Just(format!("{sign}{n}"))).prop_map(move |text| Item::Valid {
                text,
                key: "threads",
                set: Setting::Threads(n),
            })
        }),
        on_off("direct", Setting::Direct),
        on_off("writeback", Setting::Writeback),
    ]
    .boxed()
}

/// A known key with a value it refuses.
fn bad_value_item() -> BoxedStrategy<Item> {
    let bad = |key: &'static str, values: BoxedStrategy<String>| {
        item_text(key, values)
            .prop_map(move |text| Item::BadValue { text, key })
            .boxed()
    };
    // Words that are none of the accepted ones (case matters: "ON" is refused).
    let word = |accepted: &'static [&'static str]| {
        "([a-zA-Z]{0,6}|ON|Off|AUTO|yes|1|0|true|é|on off|\u{1F600})"
            .prop_filter("accepted", move |w: &String| {
                !accepted.contains(&w.as_str())
            })
            .boxed()
    };
    prop_oneof![
        bad("gds", word(&["auto", "on", "off"])),
        bad("direct", word(&["on", "off"])),
        bad("writeback", word(&["on", "off"])),
        bad("block", bad_size_text(4096)),
        bad("bounce", bad_size_text(64 << 10)),
        bad(
            "threads",
            prop_oneof![
                Just("0".to_string()),
                (257usize..100_000).prop_map(|n| n.to_string()),
                Just("99999999999999999999999".to_string()),
                "-[0-9]{1,3}",
                "[a-z ]{1,5}",
                Just("4.0".to_string()),
                Just(String::new()),
                Just("++4".to_string()),
            ]
            .boxed()
        ),
    ]
    .boxed()
}

/// A key the parser does not know (other words, other case, unicode), with any value.
fn unknown_key_item() -> BoxedStrategy<Item> {
    (
        "([a-zA-Z_]{1,10}|GDS|Block|gds2|ｇｄｓ|блок|\u{1F4A5})"
            .prop_filter("known", |k: &String| !KEYS.contains(&k.as_str())),
        "[^,]{0,12}",
    )
        .prop_map(|(key, value)| Item::UnknownKey {
            text: format!("{key}={value}"),
            key,
        })
        .boxed()
}

/// Any item, valid ones most often so that whole configurations parse often enough.
fn item() -> BoxedStrategy<Item> {
    prop_oneof![
        6 => valid_item(),
        1 => bad_value_item(),
        1 => unknown_key_item(),
        1 => "[^,=]{1,12}"
            .prop_filter("blank", |s: &String| !s.trim().is_empty())
            .prop_map(|text| Item::NoEquals { text }),
        1 => "[ \t]{0,3}".prop_map(|text| Item::Blank { text }),
    ]
    .boxed()
}

/// What `Config::parse` must say of `items` joined by commas: the configuration they set, or
/// a piece of the message about the first item that is refused (items are read in order).
fn expected(items: &[Item]) -> Result<Config, String> {
    let mut config = Config::default();
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        let key = match item {
            Item::Blank { .. } => continue,
            Item::NoEquals { text } => return Err(format!("'{}' is not key=value", text.trim())),
            Item::UnknownKey { key, .. } => key.trim(),
            Item::Valid { key, .. } | Item::BadValue { key, .. } => key,
        };
        if seen.contains(&key) {
            return Err(format!("'{key}' is given twice"));
        }
        seen.push(key);
        match item {
            Item::Valid { set, .. } => set.apply(&mut config),
            Item::BadValue { key, .. } => return Err(format!("{key}=")),
            Item::UnknownKey { .. } => return Err(format!("unknown key '{key}'")),
            _ => unreachable!(),
        }
    }
    Ok(config)
}

proptest! {
    #![proptest_config(config())]

    /// Any text at all: a configuration or a message, no panic. A text that parses prints as
    /// a text that parses back to it.
    #[test]
    fn any_text_parses_or_says_why(text in prop_oneof![
        any::<String>(),
        "[a-z=, \t0-9MiBKG]{0,40}",
        // Long texts and long numbers.
        "(block=[0-9]{1,40},){0,30}",
        Just("=".repeat(1000)),
        Just(",".repeat(10_000)),
    ]) {
        match Config::parse(&text) {
            Ok(c) => prop_assert_eq!(Config::parse(&c.to_string()), Ok(c)),
            Err(message) => prop_assert!(!message.is_empty()),
        }
    }

    /// Configurations made of valid items, refused values, unknown keys, pieces without '=',
    /// empty pieces and repeated keys: the values set when every item is valid (each key
    /// once), else a message about the first bad item.
    #[test]
    fn item_lists_give_their_values_or_name_the_first_bad_item(
        items in prop::collection::vec(item(), 0..8)
    ) {
        let text = items.iter().map(Item::text).collect::<Vec<_>>().join(",");
        match (Config::parse(&text), expected(&items)) {
            (Ok(got), Ok(want)) => {
                prop_assert_eq!(got, want, "{:?}", text);
                prop_assert_eq!(Config::parse(&got.to_string()), Ok(got));
            }
            (Err(message), Err(part)) => {
                prop_assert!(message.contains(&part), "{:?}: {:?} lacks {:?}", text, message, part);
            }
            (got, want) => prop_assert!(false, "{:?}: got {:?}, expected {:?}", text, got, want),
        }
    }
}
