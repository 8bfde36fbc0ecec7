//! Step 1 of a commit: the checks one rank makes alone, then the check that every rank was
//! given the same path, datasets, types, shapes, attribute names and options.

use super::{Checkpoint, MAX_NDIM};
use crate::ops::fnv::Fnv;
use crate::platform::comm::Comm;
use crate::platform::device::Buffer;
use crate::platform::hdf5::AttributeValue;
use crate::status::*;

/// Arguments one rank can check alone.
pub fn validate(ck: &Checkpoint) -> Result<()> {
    let o = &ck.options;
    if let (Some(c), false) = (o.compression, o.layout.compresses()) {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "{} cannot store tiles compressed ({c} asked): its ranks write their rows in \
                 place in one dataset; H5TILE_LAYOUT_VDS and H5TILE_LAYOUT_SUBFILES compress",
                o.layout.c_name()
            ),
        );
    }
    let several = ck.fields.len() > 1;
    for field in &ck.fields {
        // One dataset's messages stay as they were before checkpoints: no name in front.
        let within = |e: Error| match several {
            true => e.context(&format!("dataset '{}'", field.dataset)),
            false => e,
        };
        validate_field(field).map_err(within)?;
    }
    let mut names: Vec<&str> = ck.datasets();
    names.sort();
    for pair in names.windows(2) {
        if pair[0] == pair[1] {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("dataset '{}' is given twice", pair[0]),
            );
        }
        if inside(pair[1], pair[0]) {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "dataset '{}' cannot hold dataset '{}': a dataset is not a group",
                    pair[0], pair[1]
                ),
            );
        }
    }
    for (i, a) in ck.attributes.iter().enumerate() {
        validate_attribute(a, &names)?;
        if ck.attributes[..i]
            .iter()
            .any(|b| (&b.object, &b.name) == (&a.object, &a.name))
        {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("attribute '{}' of '{}' is given twice", a.name, a.object),
            );
        }
    }
    Ok(())
}

fn validate_field(field: &super::Field) -> Result<()> {
    let ndim = field.global.len();
    if ndim == 0 || ndim > MAX_NDIM {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("ndim is {ndim}; it must be 1 to {MAX_NDIM}"),
        );
    }
    validate_dataset_name(&field.dataset)?;
    for (k, local) in field.tiles.iter().enumerate() {
        if !local.tile.fits_in(&field.global) {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "tile {k} {} lies outside the global shape {:?}",
                    local.tile, field.global
                ),
            );
        }
        let Some(need) = local.tile.bytes(field.dtype.size()) else {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("tile {k} {} is too large to address", local.tile),
            );
        };
        if let Buffer::Host(buf) = local.buf {
            if buf.len() < need {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!(
                        "buffer of tile {k} {} holds {} bytes, not {need}",
                        local.tile,
                        buf.len()
                    ),
                );
            }
        }
    }
    Ok(())
}

/// What the names of h5tile's own attributes on the datasets it writes start with.
const OWN_PREFIX: &str = "h5tile_";

/// An attribute's object, name and value, against the datasets written (`datasets`).
fn validate_attribute(a: &super::Attribute, datasets: &[&str]) -> Result<()> {
    let bad = |why: String| fail(H5TILE_ERR_INVALID_ARGUMENT, why);
    if a.object != "/" {
        validate_dataset_name(&a.object)?;
    }
    if a.name.is_empty() || a.name.contains('\0') {
        return bad(format!(
            "attribute name {:?} of '{}' is empty or holds a NUL",
            a.name, a.object
        ));
    }
    if a.name.starts_with(OWN_PREFIX) && datasets.contains(&a.object.as_str()) {
        return bad(format!(
            "attribute '{}' of '{}': names starting '{OWN_PREFIX}' on a dataset h5tile writes are \
             its own records (the master's index, checksums, extremes); choose another name",
            a.name, a.object
        ));
    }
    if let Some(d) = datasets.iter().find(|d| inside(&a.object, d)) {
        return bad(format!(
            "attribute '{}' is set on '{}', inside dataset '{d}': a dataset is not a group",
            a.name, a.object
        ));
    }
    match &a.value {
        AttributeValue::Numbers { dtype, bytes } if bytes.is_empty() => bad(format!(
            "attribute '{}' of '{}' holds no {} values; give at least one",
            a.name,
            a.object,
            dtype.name()
        )),
        AttributeValue::Numbers { dtype, bytes } if bytes.len() % dtype.size() != 0 => {
            bad(format!(
                "attribute '{}' of '{}': {} bytes are not whole {} values",
                a.name,
                a.object,
                bytes.len(),
                dtype.name()
            ))
        }
        AttributeValue::Text(t) if t.contains('\0') => bad(format!(
            "attribute '{}' of '{}': text holds a NUL",
            a.name, a.object
        )),
        _ => Ok(()),
    }
}

/// Whether path `inner` lies strictly inside path `outer` ("/a/b" inside "/a").
fn inside(inner: &str, outer: &str) -> bool {
    let (i, o) = (inner.trim_start_matches('/'), outer.trim_start_matches('/'));
    i.strip_prefix(o).is_some_and(|rest| rest.starts_with('/'))
}

/// A dataset path: '/'-separated names, none empty, "." or "..".
pub fn validate_dataset_name(dataset: &str) -> Result<()> {
    let parts: Vec<&str> = dataset
        .strip_prefix('/')
        .unwrap_or(dataset)
        .split('/')
        .collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("dataset name '{dataset}' is not a path like \"/data\" or \"/group/x\""),
        );
    }
    Ok(())
}

/// What each rank must pass alike, in users' words: (what it is, this rank's value). A fixed
/// number of entries, whatever the number of fields, so that ranks can compare them in one
/// allreduce even when they disagree on the fields.
fn arguments_alike(ck: &Checkpoint) -> [(&'static str, String); 9] {
    let o = &ck.options;
    let flags: Vec<&str> = [
        (o.no_overwrite, "H5TILE_NO_OVERWRITE"),
        (o.allow_partial, "H5TILE_ALLOW_PARTIAL"),
        (o.keep_others, "H5TILE_KEEP_OTHERS"),
        (o.no_sync, "H5TILE_NO_SYNC"),
    ]
    .iter()
    .filter_map(|&(set, name)| set.then_some(name))
    .collect();
    let one = ck.fields.len() == 1;
    // One field reads as before checkpoints: "the dataset: rank 0 passes '/a'".
    let per_field = |each: &dyn Fn(&super::Field) -> String| -> String {
        match one {
            true => each(&ck.fields[0]),
            false => {
                let all: Vec<String> = ck
                    .fields
                    .iter()
                    .map(|f| format!("'{}' {}", f.dataset, each(f)))
                    .collect();
                format!("[{}]", all.join(", "))
            }
        }
    };
    let names: Vec<String> = ck
        .fields
        .iter()
        .map(|f| format!("'{}'", f.dataset))
        .collect();
    let attributes: Vec<String> = ck
        .attributes
        .iter()
        .map(|a| format!("'{}' of '{}'", a.name, a.object))
        .collect();
    [
        ("path", format!("'{}'", ck.path.display())),
        (
            if one { "dataset" } else { "datasets" },
            match one {
                true => names[0].clone(),
                false => format!("[{}]", names.join(", ")),
            },
        ),
        (
            if one { "element type" } else { "element types" },
            per_field(&|f| f.dtype.name().to_string()),
        ),
        (
            if one { "global shape" } else { "global shapes" },
            per_field(&|f| format!("{:?}", f.global)),
        ),
        ("attributes", format!("[{}]", attributes.join(", "))),
        ("layout", o.layout.c_name().to_string()),
        (
            "write flags",
            match flags.is_empty() {
                true => "no flags".to_string(),
                false => flags.join("|"),
            },
        ),
        (
            "ranks per file",
            // With whether a subfile coalesces its tiles: rank 0 writes the master as the
            // group's first rank wrote the subfile only if they agree.
            format!(
                "{}{}",
                match o.ranks_per_file {
                    Some(k) => format!("{k} ranks per file"),
                    None => "the whole node per file".to_string(),
                },
                match o.coalesce {
                    true => "",
                    false => ", coalescing off (H5TILE_COALESCE=0)",
                }
            ),
        ),
        (
            "compression",
            match o.compression {
                Some(c) => c.to_string(),
                None => "none".to_string(),
            },
        ),
    ]
}

/// Every rank must name the same file, datasets, element types, shapes, attributes and
/// options; compared through a hash of each so the check costs one small allreduce whatever
/// the number of ranks. When they differ, the error (on every rank) names the first argument
/// that differs, rank 0's value and that of the first rank passing another.
pub fn same_arguments(comm: &Comm, ck: &Checkpoint) -> Result<()> {
    let fields = arguments_alike(ck);
    let mut v: Vec<u64> = fields
        .iter()
        .enumerate()
        .flat_map(|(i, (_, value))| {
            let mut h = Fnv::default();
            // The path as its bytes: two names shown alike (not UTF-8) may still differ.
            match i {
                0 => h.bytes(ck.path.as_os_str().as_encoded_bytes()),
                _ => h.bytes(value.as_bytes()),
            }
            [h.value(), !h.value()]
        })
        .collect();
    comm.all_min(&mut v);
    // Alike everywhere, min(h) and min(!h) are h and !h.
    let Some(i) = (0..fields.len()).find(|&i| v[2 * i] != !v[2 * i + 1]) else {
        return Ok(());
    };
    let (what, mine) = &fields[i];
    let mut first = mine.clone();
    comm.broadcast_text(0, &mut first);
    // Paths that differ only in bytes shown alike differ in no text: the last rank is named.
    let mut at = [match *mine != first {
        true => comm.rank() as u64,
        false => u64::MAX,
    }];
    comm.all_min(&mut at);
    let other_rank = at[0].min(comm.size() as u64 - 1) as usize;
    let mut other = mine.clone();
    comm.broadcast_text(other_rank, &mut other);
    fail(
        H5TILE_ERR_INVALID_ARGUMENT,
        format!(
            "ranks disagree on the {what}: rank 0 passes {first}, rank {other_rank} passes \
             {other} (every rank must pass the same path, datasets, element types, global \
             shapes, attribute names and options)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_inside_others_are_found() {
        assert!(inside("/a/b", "/a"));
        assert!(inside("a/b/c", "/a"));
        assert!(!inside("/ab", "/a"));
        assert!(!inside("/a", "/a"));
        assert!(!inside("/a", "/a/b"));
    }
}
