//! How values are written, the same in every command: shapes, byte counts, element values as
//! text and as JSON, and the one JSON document a command prints with `--json`.

use crate::failure::Failure;
use h5tile::internals::tool::{Codec, Compression, ListedNumber, ListedValue, Scalar, Stored};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

/// A shape as numpy writes it: "(6, 5)", "(12,)", "()" for a scalar.
pub fn shape(dims: &[u64]) -> String {
    match dims {
        [one] => format!("({one},)"),
        _ => {
            let parts: Vec<String> = dims.iter().map(u64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// A byte count for people: "240 B", "1.50 MiB".
pub fn bytes(n: u64) -> String {
    indicatif::BinaryBytes(n).to_string()
}

/// The space files use on disk, and their apparent size (the sum of their lengths) where it
/// differs: "8.01 MiB on disk (10.01 MiB apparent)". A file with holes (a large tile's data
/// aligned after its header) uses less than it seems; a small one a whole block.
pub fn disk_use(used: u64, apparent: u64) -> String {
    match used == apparent {
        true => format!("{} on disk", bytes(used)),
        false => format!("{} on disk ({} apparent)", bytes(used), bytes(apparent)),
    }
}

/// A compression as users write it: "zstd:1+shuffle", "lz4", "deflate:6".
pub fn compression(c: &Compression) -> String {
    let mut text = c.codec.name().to_string();
    if c.codec != Codec::Lz4 {
        text.push_str(&format!(":{}", c.level));
    }
    if c.shuffle {
        text.push_str("+shuffle");
    }
    text
}

/// How elements are stored, as `ls` and `pack` show it: "zstd:1+shuffle 3.10x (77.4 KiB on
/// disk)"; empty for elements stored as they are (no filters).
pub fn stored(s: &Stored) -> String {
    if !s.filtered() {
        return String::new();
    }
    let mut text = match &s.compression {
        Some(c) => compression(c),
        None => s
            .filters
            .iter()
            .map(|&id| filter_name(id))
            .collect::<Vec<_>>()
            .join("+"),
    };
    if s.mixed {
        text.push_str(" (its tiles' filters differ)");
    }
    if let Some(r) = s.ratio() {
        text.push_str(&format!(" {}", ratio(r)));
    }
    text.push_str(&format!(" ({} on disk)", bytes(s.stored_bytes)));
    text
}

/// A compression ratio: "3.10x".
pub fn ratio(r: f64) -> String {
    format!("{r:.2}x")
}

/// HDF5's name of a filter h5tile does not write itself, else "filter <id>".
fn filter_name(id: u32) -> String {
    match id {
        1 => "deflate".into(),
        2 => "shuffle".into(),
        3 => "fletcher32".into(),
        4 => "szip".into(),
        5 => "nbit".into(),
        6 => "scaleoffset".into(),
        32004 => "lz4".into(),
        32015 => "zstd".into(),
        other => format!("filter {other}"),
    }
}

/// An element value as JSON: a number, or null for NaN and infinities (which JSON lacks).
pub fn scalar_json(value: Scalar) -> serde_json::Value {
    match value {
        Scalar::Int(v) => v.into(),
        Scalar::UInt(v) => v.into(),
        Scalar::Float(v) => {
            serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into)
        }
    }
}

/// Attributes as `ls --json` writes them: {name: value} (in name order).
pub fn attributes_json(attributes: &[(String, ListedValue)]) -> serde_json::Map<String, Value> {
    attributes
        .iter()
        .map(|(name, value)| (name.clone(), attribute_json(value)))
        .collect()
}

/// An attribute's value as JSON: numbers as numbers (null for NaN and infinities, as
/// `scalar_json`; a float32 as the shortest decimal that reads back as it), bools as bools,
/// strings as strings (whole), an array of them as an array; any other value as its text
/// ("int64[1000]", "compound", "<unreadable: …>").
pub fn attribute_json(value: &ListedValue) -> Value {
    let number = |n: &ListedNumber| -> Value {
        match *n {
            ListedNumber::Int(v) => v.into(),
            ListedNumber::UInt(v) => v.into(),
            ListedNumber::Bool(v) => v.into(),
            ListedNumber::Float64(v) => scalar_json(Scalar::Float(v)),
            // 0.1f32 as 0.1, not 0.10000000149011612.
            ListedNumber::Float32(v) => {
                scalar_json(Scalar::Float(v.to_string().parse().unwrap_or(f64::NAN)))
            }
        }
    };
    let one_or_all = |mut values: Vec<Value>, array: bool| match array {
        false if values.len() == 1 => values.pop().expect("one"),
        _ => Value::Array(values),
    };
    match value {
        ListedValue::Numbers { values, array } => {
            one_or_all(values.iter().map(number).collect(), *array)
        }
        ListedValue::Texts { values, array } => {
            one_or_all(values.iter().map(|s| s.as_str().into()).collect(), *array)
        }
        other => other.to_string().into(),
    }
}

/// A path as text for JSON and messages.
pub fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Prints `value` as one JSON document on stdout.
pub fn json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)
        .map_err(|e| Failure::problems(format!("cannot write the JSON output: {e}")))?;
    writeln!(out).map_err(|e| Failure::io("cannot write the JSON output", &e))
}

/// Rows of cells as text, each column as wide as its widest cell, two spaces apart (none
/// after a row's last cell, empty or not).
pub fn columns(rows: &[Vec<String>]) -> Vec<String> {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..width)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(c, cell)| match c + 1 == row.len() {
                    true => cell.clone(),
                    false => format!("{cell:<w$}", w = widths[c]),
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_written_as_numpy_writes_them() {
        assert_eq!(shape(&[6, 5]), "(6, 5)");
        assert_eq!(shape(&[12]), "(12,)");
        assert_eq!(shape(&[]), "()");
    }

    #[test]
    fn columns_line_up() {
        let rows = vec![
            vec!["/a".to_string(), "x".to_string(), "end".to_string()],
            vec!["/bbb".to_string(), "yy".to_string(), "z".to_string()],
        ];
        assert_eq!(columns(&rows), ["/a    x   end", "/bbb  yy  z"]);
        let rows = vec![
            vec!["/a".to_string(), "x".to_string(), String::new()],
            vec!["/bbb".to_string(), "yy".to_string(), "z".to_string()],
        ];
        assert_eq!(columns(&rows), ["/a    x", "/bbb  yy  z"]);
    }

    #[test]
    fn attributes_are_json_of_their_kind() {
        use h5tile::internals::tool::ListedNumber::*;
        let numbers = |values, array| ListedValue::Numbers { values, array };
        assert_eq!(
            attribute_json(&numbers(vec![Float32(0.1)], false)),
            serde_json::json!(0.1)
        );
        assert_eq!(
            attribute_json(&numbers(vec![Int(1), Int(-2)], true)),
            serde_json::json!([1, -2])
        );
        assert_eq!(
            attribute_json(&numbers(vec![UInt(7)], true)),
            serde_json::json!([7])
        );
        assert_eq!(
            attribute_json(&numbers(vec![Bool(true)], false)),
            serde_json::json!(true)
        );
        let texts = ListedValue::Texts {
            values: vec!["a\nb".into()],
            array: false,
        };
        assert_eq!(attribute_json(&texts), serde_json::json!("a\nb"));
        let other = ListedValue::Other("int64[1000]".into());
        assert_eq!(attribute_json(&other), serde_json::json!("int64[1000]"));
    }

    #[test]
    fn nan_is_null_in_json() {
        assert_eq!(
            scalar_json(Scalar::Float(f64::NAN)),
            serde_json::Value::Null
        );
        assert_eq!(scalar_json(Scalar::Int(-3)), serde_json::json!(-3));
    }
}
