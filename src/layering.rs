//! The layering the module docs state, checked on the sources: a newcomer can trust the tree.
//! The checks read every line of production code: only test code is cut (items under
//! `#[cfg(test)]`, and the files of test modules), and comments and literals are blanked.

use std::path::{Path, PathBuf};

/// The layers, from the bottom up: each uses only those before it. (`ffi` cannot use `tool`
/// either: the library is built without it, and would not compile.)
const LAYERS: [&str; 8] = [
    "status", "dtype", "geometry", "platform", "layout", "ops", "tool", "ffi",
];

/// A token of blanked code: an identifier (or number), `::`, or one other character, with
/// where it starts (in characters) and its line (from 1).
#[derive(Debug, Clone)]
struct Token {
    text: String,
    start: usize,
    line: usize,
}

/// `text` with every comment and the inside of every string and character literal blanked
/// (spaces; line breaks stay, so lines keep their numbers). Lifetimes stay as they are.
fn blank_comments_and_literals(text: &str) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in &mut out[from..to.min(c.len())] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let word = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        match (c[i], at(i + 1)) {
            ('/', '/') => {
                let end = (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len());
                blank(&mut out, i, end);
                i = end;
            }
            ('/', '*') => {
                // Block comments nest.
                let (mut j, mut depth) = (i + 2, 1);
                while j < c.len() && depth > 0 {
                    match (c[j], at(j + 1)) {
                        ('/', '*') => (depth, j) = (depth + 1, j + 2),
                        ('*', '/') => (depth, j) = (depth - 1, j + 2),
                        _ => j += 1,
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            // A raw string (`r"…"`, `r#"…"#`, `br…`, `cr…`), not a raw identifier (`r#type`).
            ('r', '#' | '"')
                if i == 0
                    || !word(c[i - 1])
                    || (matches!(c[i - 1], 'b' | 'c') && (i < 2 || !word(c[i - 2]))) =>
            {
                let hashes = (i + 1..c.len()).take_while(|&j| c[j] == '#').count();
                if at(i + 1 + hashes) != '"' {
                    i += 1;
                    continue;
                }
                let body = i + 2 + hashes;
                let closes = |j: usize| c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#');
                let end = (body..c.len()).find(|&j| closes(j)).unwrap_or(c.len());
                blank(&mut out, body, end);
                i = end + 1 + hashes;
            }
            ('"', _) => {
                let mut j = i + 1;
                while j < c.len() && c[j] != '"' {
                    j += if c[j] == '\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j);
                i = j + 1;
            }
            // A character literal (`'x'`, `'\n'`, `'\''`), not a lifetime (`'a`).
            ('\'', next) if next == '\\' || at(i + 2) == '\'' => {
                let from = if next == '\\' { i + 3 } else { i + 2 };
                let end = (from..c.len()).find(|&j| c[j] == '\'').unwrap_or(c.len());
                blank(&mut out, i + 1, end);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The tokens of blanked code.
fn tokens(code: &[char]) -> Vec<Token> {
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let word = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < code.len() {
        let ch = code[i];
        let end = if ch == '\n' {
            line += 1;
            i += 1;
            continue;
        } else if ch.is_whitespace() {
            i += 1;
            continue;
        } else if word(ch) {
            (i..code.len())
                .find(|&j| !word(code[j]))
                .unwrap_or(code.len())
        } else if ch == ':' && code.get(i + 1) == Some(&':') {
            i + 2
        } else {
            i + 1
        };
        let text = code[i..end].iter().collect();
        out.push(Token {
            text,
            start: i,
            line,
        });
        i = end;
    }
    out
}

/// The index of the token closing the bracket opened at `open`.
fn closing(toks: &[Token], open: usize) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Whether `toks[k..]` starts an attribute `#[cfg(P)]` (or `#![cfg(P)]`, `inner`) whose
/// predicate holds in test builds only (`test`, `all(…, test, …)`): Some((inner, the token
/// after it)).
fn test_attribute(toks: &[Token], k: usize) -> Option<(bool, usize)> {
    let text = |j: usize| toks.get(j).map_or("", |t| t.text.as_str());
    if text(k) != "#" {
        return None;
    }
    let inner = text(k + 1) == "!";
    let open = k + 1 + inner as usize;
    if text(open) != "[" || text(open + 1) != "cfg" || text(open + 2) != "(" {
        return None;
    }
    let close = closing(toks, open + 2);
    let predicate: Vec<&str> = toks[open + 3..close.min(toks.len())]
        .iter()
        .map(|t| t.text.as_str())
        .collect();
    let test_only = match predicate.as_slice() {
        ["test"] => true,
        ["all", "(", args @ .., ")"] => args.split(|t| *t == ",").any(|a| a == ["test"]),
        _ => false,
    };
    (test_only && text(close + 1) == "]").then_some((inner, close + 2))
}

/// The end (one past its last token) of the item starting at `from`: its `;` or its block's
/// `}`, or the bracket that closes what holds it.
fn item_end(toks: &[Token], from: usize) -> usize {
    let mut depth = 0usize;
    for (j, t) in toks.iter().enumerate().skip(from) {
        match t.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" if depth == 0 => return j,
            ")" | "]" => depth -= 1,
            "}" if depth == 0 => return j,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return j + 1; // A block at the item's own level ends it (`fn`, `mod`).
                }
            }
            ";" if depth == 0 => return j + 1,
            _ => {}
        }
    }
    toks.len()
}

/// The production code of a source file's `text`: comments and literals blanked, and every
/// item under `#[cfg(test)]` (test modules, test-only functions, `use`s, …) blanked too; a
/// file under `#![cfg(test)]` is all blank. Also the names of the test modules declared here
/// whose code is in files of their own (`#[cfg(test)] mod tests;`).
pub(crate) fn production(text: &str) -> (String, Vec<String>) {
    let mut code = blank_comments_and_literals(text);
    let toks = tokens(&code);
    let mut test_modules = Vec::new();
    let mut k = 0;
    while k < toks.len() {
        let Some((inner, after)) = test_attribute(&toks, k) else {
            k += 1;
            continue;
        };
        let end = match inner {
            true => toks.len(),
            false => item_end(&toks, after),
        };
        let item: Vec<&str> = toks[after..end].iter().map(|t| t.text.as_str()).collect();
        if let [.., "mod", name, ";"] = item.as_slice() {
            test_modules.push(name.to_string());
        }
        let to = toks.get(end).map_or(code.len(), |t| t.start);
        for ch in &mut code[toks[k].start..to] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        k = end.max(k + 1);
    }
    (code.into_iter().collect(), test_modules)
}

/// The module path of the file `name` (relative to `src/`): `layout/vds.rs` is
/// `["layout", "vds"]`, `layout/mod.rs` `["layout"]`, `lib.rs` the crate root.
fn module_path(name: &str) -> Vec<String> {
    let mut path: Vec<String> = name
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// The first segment of each path of the `use` group opened at `open` (`{a::b, c, {d}}`:
/// a, c, d); `*` for a glob.
fn group_heads(toks: &[Token], open: usize) -> Vec<String> {
    let close = closing(toks, open);
    let mut heads = Vec::new();
    let mut j = open + 1;
    while j < close {
        match toks[j].text.as_str() {
            "{" => heads.extend(group_heads(toks, j)),
            "self" | "," => {}
            head => heads.push(head.to_string()),
        }
        // On to the next path of this group.
        let mut depth = 0;
        while j < close && !(depth == 0 && toks[j].text == ",") {
            match toks[j].text.as_str() {
                "{" | "(" | "[" => depth += 1,
                "}" | ")" | "]" => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        j += 1;
    }
    heads
}

/// The crate's top-level modules that the production `code` of the file `name` reaches, with
/// the line of each: `crate::m` (`$crate::m` in macros, across lines too), each head of
/// `crate::{…}`, and `super::` chains that climb to the crate root (inline modules counted).
fn modules_reached(name: &str, code: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let toks = tokens(&chars);
    let text = |j: usize| toks.get(j).map_or("", |t| t.text.as_str());
    let file = module_path(name);
    // The inline modules open at this point: (the brace depth inside them, their name).
    let (mut inline, mut depth): (Vec<(usize, String)>, usize) = (Vec::new(), 0);
    let mut out = Vec::new();
    for (k, t) in toks.iter().enumerate() {
        match t.text.as_str() {
            "{" => {
                depth += 1;
                if k >= 2 && text(k - 2) == "mod" {
                    inline.push((depth, text(k - 1).to_string()));
                }
            }
            "}" => {
                if inline.last().is_some_and(|(d, _)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        // Only where a path starts (not `a::crate`, not `pub(crate)`).
        if k > 0 && text(k - 1) == "::" {
            continue;
        }
        let after = match t.text.as_str() {
            "crate" if text(k + 1) == "::" => k + 2,
            "super" if text(k + 1) == "::" => {
                let mut j = k;
                while text(j) == "super" && text(j + 1) == "::" {
                    j += 2;
                }
                let here = file.len() + inline.len();
                if (j - k) / 2 < here {
                    continue; // Still inside this file's own top-level module.
                }
                j
            }
            _ => continue,
        };
        let reached = match text(after) {
            "{" => group_heads(&toks, after),
            "" => Vec::new(),
            m => vec![m.to_string()],
        };
        out.extend(reached.into_iter().map(|m| (t.line, m)));
    }
    out
}

/// Where the production `code` of the file `name` uses a layer above its own, one message each.
pub(crate) fn layer_violations(name: &str, code: &str) -> Vec<String> {
    let path = module_path(name);
    let own = path.first().map_or("", String::as_str);
    let Some(level) = LAYERS.iter().position(|l| *l == own) else {
        return Vec::new(); // Not a layer: the crate root, `testkit`.
    };
    modules_reached(name, code)
        .into_iter()
        .filter(|(_, m)| {
            // A glob over the crate root reaches every layer.
            m == "*"
                || LAYERS
                    .iter()
                    .position(|l| l == m)
                    .is_some_and(|l| l > level)
        })
        .map(|(line, m)| format!("{name}:{line} uses crate::{m}, a layer above {own}"))
        .collect()
}

/// The names of the functions that the production `code` exports (`#[no_mangle]`,
/// `#[unsafe(no_mangle)]`, `#[export_name = …]`).
pub(crate) fn exported_functions(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let toks = tokens(&chars);
    let text = |j: usize| toks.get(j).map_or("", |t| t.text.as_str());
    (0..toks.len())
        .filter(|&k| matches!(text(k), "no_mangle" | "export_name"))
        .filter_map(|k| (k..toks.len()).find(|&j| text(j) == "fn"))
        .map(|f| text(f + 1).to_string())
        .collect()
}

/// Every source file under `src/` but the files of test modules, with its production code, as
/// (path relative to `src/`, code).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    let mut out = Vec::new();
    let mut test_files = Vec::new();
    for p in files {
        let (code, test_modules) = production(&std::fs::read_to_string(&p).unwrap());
        // A module's children are beside `mod.rs` and `lib.rs`, in a folder named after it
        // otherwise.
        let dir = match p.file_stem().unwrap().to_str().unwrap() {
            "mod" | "lib" => p.parent().unwrap().to_path_buf(),
            _ => p.with_extension(""),
        };
        for m in test_modules {
            test_files.push(dir.join(format!("{m}.rs")));
            test_files.push(dir.join(m));
        }
        out.push((p, code));
    }
    out.into_iter()
        .filter(|(p, _)| !test_files.iter().any(|t| p.starts_with(t)))
        .map(|(p, code)| {
            let name = p.strip_prefix(&root).unwrap().to_string_lossy();
            (name.into_owned(), code)
        })
        .collect()
}

#[test]
fn libhdf5_is_called_from_platform_hdf5_only() {
    for (name, code) in sources() {
        if !name.starts_with("platform/hdf5/") {
            assert!(!code.contains("hdf5_sys"), "{name} calls libhdf5");
            assert!(!code.contains("hid_t"), "{name} handles raw HDF5 ids");
        }
    }
}

#[test]
fn mpi_is_called_from_platform_comm_only() {
    for (name, code) in sources() {
        if name == "platform/comm.rs" {
            continue;
        }
        // The C ABI names MPI's communicator type; nothing else of MPI appears elsewhere.
        let others = code.replace("mpi::ffi::MPI_Comm;", "");
        assert!(!others.contains("mpi::"), "{name} uses MPI");
    }
}

/// The driver's crate is reached through `platform` (`device`, `tile_bytes`, `hdf5::gds`),
/// so its API can change without the layers above it noticing.
#[test]
fn the_plugin_crate_is_used_from_platform_only() {
    for (name, code) in sources() {
        if !name.starts_with("platform/") {
            assert!(
                !code.contains("h5tile_gds::") && !code.contains("use h5tile_gds"),
                "{name} uses the h5tile_gds crate directly"
            );
        }
    }
}

#[test]
fn the_c_abi_is_exported_from_ffi_only() {
    for (name, code) in sources() {
        if !name.starts_with("ffi/") {
            let exported = exported_functions(&code);
            assert!(exported.is_empty(), "{name} exports {exported:?}");
        }
    }
}

/// Each layer uses only the layers below it, in whatever form it names a module.
#[test]
fn no_module_uses_a_layer_above_it() {
    let found: Vec<String> = sources()
        .iter()
        .flat_map(|(name, code)| layer_violations(name, code))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The scanner itself, on planted sources: each form of reaching a module is found in a file
/// of a lower layer, wherever it stands, and test code, comments and literals are not read.
mod scanner {
    use super::*;

    /// What the layer check finds in `text`, the whole source of the file `name`.
    fn found(name: &str, text: &str) -> Vec<String> {
        layer_violations(name, &production(text).0)
    }

    fn finds(name: &str, text: &str, layer: &str) {
        let found = found(name, text);
        assert!(
            found.len() == 1 && found[0].contains(&format!("crate::{layer}")),
            "{name} should use crate::{layer} once in:\n{text}\nfound: {found:?}"
        );
    }

    #[test]
    fn a_whole_module_is_found() {
        finds("geometry/tile.rs", "use crate::layout;\n", "layout");
        finds("dtype.rs", "pub(crate) use crate::layout;\n", "layout");
        finds("platform/comm.rs", "use crate::ops as operations;\n", "ops");
    }

    #[test]
    fn a_module_in_a_group_is_found() {
        finds(
            "geometry/tile.rs",
            "use crate::{dtype::Dtype, layout};\n",
            "layout",
        );
        let nested = "use crate::{\n    status::{fail, Result},\n    ops::{read, write},\n};\n";
        finds("layout/vds.rs", nested, "ops");
    }

    #[test]
    fn a_path_across_lines_is_found() {
        let text = "fn f() {\n    let x = crate::layout\n        ::index::read();\n}\n";
        finds("platform/spill.rs", text, "layout");
        finds(
            "platform/spill.rs",
            "fn f() { crate :: ops :: go(); }\n",
            "ops",
        );
    }

    #[test]
    fn a_super_chain_into_another_layer_is_found() {
        finds("geometry/tile.rs", "use super::super::ops::write;\n", "ops");
        finds("layout/vds.rs", "use super::super::{status, ffi};\n", "ffi");
        let inline = "mod inner {\n    use super::super::super::ops;\n}\n";
        finds("layout/vds.rs", inline, "ops");
        // Within its own layer, however far up.
        let own = "use super::index;\nuse super::super::layout::runs;\nmod inner {\n    use super::super::super::status;\n}\n";
        assert_eq!(found("layout/vds.rs", own), Vec::<String>::new());
    }

    #[test]
    fn a_macro_path_is_found() {
        let text = "macro_rules! m {\n    () => {\n        $crate::ffi::go()\n    };\n}\n";
        finds("ops/read/mod.rs", text, "ffi");
    }

    /// Code after test code is production code too: after a test-only item, after a test
    /// module, after `#[cfg(test)]` in a comment.
    #[test]
    fn code_after_test_code_is_read() {
        let after_item =
            "#[cfg(test)]\nfn helper() {}\n\nfn real() {\n    crate::ops::write::go();\n}\n";
        finds("layout/extremes.rs", after_item, "ops");
        let after_mod =
            "#[cfg(test)]\nmod tests {\n    use crate::ffi::x;\n}\n\nuse crate::ops::x;\n";
        finds("layout/extremes.rs", after_mod, "ops");
        let after_comment = "// Items under #[cfg(test)] are cut.\nuse crate::ops::x;\n";
        finds("layout/extremes.rs", after_comment, "ops");
        let after_use = "#[cfg(test)]\nuse crate::ffi::h5tile_write;\nuse crate::ops::write;\n";
        finds("platform/hdf5/mod.rs", after_use, "ops");
        let nested = "#[cfg(test)]\nfn f() {\n    if x { g() } else { h() }\n}\nfn real() {\n    crate::ops::go()\n}\n";
        finds("layout/extremes.rs", nested, "ops");
    }

    /// Test code may use any layer; comments and literals name no module.
    #[test]
    fn test_code_comments_and_literals_are_not_read() {
        let text = r####"//! Used by `crate::ops::write`.
/// As crate::ffi::h5tile_write says.
fn f<'a>(s: &'a str) -> (char, char, &'static str) {
    /* crate::ops::x /* nested */ crate::ffi::y */
    let _ = "crate::ops::write }";
    let _ = r#"crate::ffi:: "} "#;
    let _ = b"crate::ops::";
    ('}', '\'', "{")
}
#[cfg(test)]
mod tests {
    use crate::ops::write;
    fn g() -> char { let _ = "}"; let _ = r#"}"#; '}' }
}
#[cfg(all(test, unix))]
use crate::ffi::h5tile_read;
#[cfg(test)]
#[allow(dead_code)]
const C: [&str; 2] = ["crate::ops::a", "}"];
"####;
        assert_eq!(found("platform/staging.rs", text), Vec::<String>::new());
        // What is not test code stays.
        let kept = "#[cfg(not(test))]\nuse crate::ops::a;\n#[cfg(any(test, feature = \"internals\"))]\nuse crate::ffi::b;\n";
        assert_eq!(found("layout/mod.rs", kept).len(), 2, "{kept}");
    }

    #[test]
    fn own_and_lower_layers_pass() {
        let text = "use crate::{status, geometry::tile::Tile};\nuse crate::platform::comm::Comm;\nuse super::runs;\npub(crate) fn f() {}\npub(super) fn g() {}\n";
        assert_eq!(found("layout/vds.rs", text), Vec::<String>::new());
    }

    /// A module declared under `#[cfg(test)]` whose code is in a file of its own names that
    /// file, which then is not production code.
    #[test]
    fn test_modules_in_files_of_their_own_are_named() {
        let text = "mod agree;\n#[cfg(test)]\nmod compressed_tests;\nmod messages;\n#[cfg(test)]\npub(crate) mod tests;\n#[cfg(test)]\nmod inline {}\n";
        assert_eq!(production(text).1, ["compressed_tests", "tests"]);
        let whole = "#![cfg(test)]\nuse crate::ffi::x;\n";
        assert_eq!(found("ops/probe.rs", whole), Vec::<String>::new());
    }

    /// Every form of exporting a function is seen, and only in production code.
    #[test]
    fn exported_functions_are_found_in_every_form() {
        let text = "/// #[no_mangle] fn in_a_comment() {}\n#[no_mangle]\npub extern \"C\" fn a() {}\n#[unsafe(no_mangle)]\n#[allow(clippy::too_many_arguments)]\npub unsafe extern \"C\" fn b() {}\n#[export_name = \"c\"]\nextern \"C\" fn c_impl() {}\n#[cfg(test)]\n#[no_mangle]\nextern \"C\" fn in_a_test() {}\n";
        assert_eq!(
            exported_functions(&production(text).0),
            ["a", "b", "c_impl"]
        );
    }
}
