//! How values are written, the same in every command: shapes, byte counts, element values as
//! text and as JSON, and the one JSON document a command prints with `--json`.

use crate::failure::Failure;
use h5tile::internals::tool::Scalar;
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

/// Rows of cells as text, each column as wide as its widest cell, two spaces apart.
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
            cells.join("  ")
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
