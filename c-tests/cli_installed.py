"""Runs the installed `h5tile` tool on files h5py writes: plain contiguous and chunked datasets,
every element type, an h5py virtual dataset with relative sources and Legate's layout (absolute
sources), and the broken variants of the last two (one source missing), all made by
h5py_make_files.py. Checks `ls --json` (names, types, shapes, storage, tiles, files, layouts),
`ls -l -D --json` (each tile's box and source), `check` (0 on clean files; 1 on the broken
ones, naming the missing source, in text and JSON), `cp` (a relative VDS copied elsewhere reads
back equal with h5py; Legate's absolute sources refused, --shallow copies the master alone) and
`rm` (sources outside the tile folder kept), `pack` (every file packed and read back with h5py
equal to its original, virtual datasets now contiguous and other datasets as they were; groups,
attributes, soft, hard and external links, a string-typed virtual dataset, and attributes
holding references left out and reported; a missing source: exit 1, nothing left), and that a
file that is not HDF5 is exit status 2 with its path in the message. Exits non-zero on any
mismatch, listing them all.

With H5TILE_FILES_DIR (the files api_write_all_dtypes wrote: every element type in the VDS,
subfiled and single-file layouts), also checks the tool on h5tile's own files: `ls --json`
(layout, tiles, files, checksummed) and `ls -l --json` (each tile's min and max equal to
numpy's on the tile, NaNs passed over; for the single-file layout, the tiles recorded on its
contiguous dataset), `check` clean (0, every byte of the single-file datasets verified), and on a copy with one bit flipped
inside a tile's bytes: `check` 1 naming that tile file and `check --fast` 0 (it reads no tile
bytes); `pack` of every file (both layouts) reads back with h5py equal and contiguous, and of
the damaged copy fails (1) naming the tile file, leaving no file behind.

usage: cli_installed.py H5TILE_BINARY SCRATCH_DIR H5PY_MAKE_FILES_SCRIPT [H5TILE_FILES_DIR]
"""

import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean

FAILURES = []


def expect(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


def h5tile(*args, code=0):
    """Runs the tool; checks its exit status; returns (stdout, stderr)."""
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    expect(p.returncode == code,
           f"h5tile {' '.join(args)}: exit status {p.returncode}, not {code}\n"
           f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p.stdout, p.stderr


def h5tile_json(*args, code=0):
    out, _ = h5tile(*args, "--json", code=code)
    try:
        return json.loads(out)
    except ValueError:
        expect(False, f"h5tile {' '.join(args)} --json wrote no JSON: {out!r}")
        return {}


def one(listing):
    """The only dataset of an `ls --json` listing."""
    datasets = listing.get("datasets", [])
    expect(len(datasets) == 1, f"one dataset expected: {listing}")
    return datasets[0] if datasets else {}


def h5tile_files(d, scratch, F):
    """The tool on files h5tile wrote (see the module's documentation)."""
    for name in F.NAMES:
        for suffix, layout, files in (("", "h5tile-vds", 2), ("_subfiles", "h5tile-subfiles", 1)):
            path = os.path.join(d, name + suffix + ".h5")
            ds = one(h5tile_json("ls", "-l", path))
            v = ds.get("virtual", {})
            expect((ds.get("dtype"), ds.get("shape"), v.get("layout"), v.get("tiles"), v.get("files"),
                    v.get("checksummed")) == (name, [5, 7], layout, 2, files, True),
                   f"ls {name}{suffix}: {ds}")
            with h5py.File(path, "r") as h:
                data = h["data"][...]
            for t in v.get("tile_list", []):
                (r, c), (nr, nc) = t["offset"], t["shape"]
                tile = data[r:r + nr, c:c + nc]
                if name.startswith("complex"):
                    expect(t.get("min") is None, f"ls -l {name}{suffix}: min of complex: {t}")
                    continue
                values = tile.astype(np.float64)
                expect((t.get("min"), t.get("max")) == (np.nanmin(values), np.nanmax(values)),
                       f"ls -l {name}{suffix}: tile {t['offset']} min/max {t.get('min')}/{t.get('max')}, "
                       f"numpy {np.nanmin(values)}/{np.nanmax(values)}")
        path = os.path.join(d, name + "_single.h5")
        single = one(h5tile_json("ls", "-l", path))
        s = single.get("single", {})
        expect((single.get("storage"), s.get("layout"), s.get("tiles"), s.get("checksummed"))
               == ("contiguous", "h5tile-single", 2, True), f"ls {name}_single: {single}")
        with h5py.File(path, "r") as h:
            data = h["data"][...]
        for t in s.get("tile_list", []):
            (r, c), (nr, nc) = t["offset"], t["shape"]
            if not name.startswith("complex"):
                values = data[r:r + nr, c:c + nc].astype(np.float64)
                expect((t.get("min"), t.get("max")) == (np.nanmin(values), np.nanmax(values)),
                       f"ls -l {name}_single: tile {t['offset']} min/max {t.get('min')}/{t.get('max')}")
        checked = h5tile_json("check", path)["files"][0]["datasets"][0]
        expect(checked.get("verified_bytes") == data.nbytes and not checked.get("problems"),
               f"check {name}_single: {checked}")
        h5tile("check", os.path.join(d, name + ".h5"), os.path.join(d, name + "_subfiles.h5"))
    # one flipped bit inside a tile's bytes, in a copy
    damaged = os.path.join(scratch, "damaged")
    os.makedirs(damaged)
    h5tile("cp", os.path.join(d, "float64.h5"), os.path.join(damaged, "float64.h5"))
    tile = one(h5tile_json("ls", "-l", os.path.join(damaged, "float64.h5")))["virtual"]["tile_list"][1]
    with open(tile["path"], "r+b") as t:
        t.seek(tile["data_offset"] + 9)
        b = t.read(1)
        t.seek(tile["data_offset"] + 9)
        t.write(bytes([b[0] ^ 0x04]))
    doc = h5tile_json("check", os.path.join(damaged, "float64.h5"), code=1)
    text = json.dumps(doc)
    expect(doc.get("ok") is False and os.path.basename(tile["path"]) in text,
           f"check after a bit flip does not name {tile['path']}: {text}")
    h5tile("check", "--fast", os.path.join(damaged, "float64.h5"))
    # pack: every element type of both layouts, and the damaged copy refused
    packed = os.path.join(scratch, "packed_own")
    os.makedirs(packed)
    for name in F.NAMES:
        for suffix in ("", "_subfiles"):
            src = os.path.join(d, name + suffix + ".h5")
            dst = os.path.join(packed, name + suffix + ".h5")
            doc = h5tile_json("pack", "--slab-bytes", "40", src, dst)
            expect([(p["name"], p["read_by"], p["checksums_verified"]) for p in doc.get("packed", [])]
                   == [("/data", "h5tile", True)], f"pack {name}{suffix}: {doc}")
            expect(same_datasets(src, dst), f"pack {name}{suffix}: data differs")
    dst = os.path.join(damaged, "packed.h5")
    _, err = h5tile("pack", os.path.join(damaged, "float64.h5"), dst, code=1)
    expect(os.path.basename(tile["path"]) in err and "do not match" in err,
           f"pack after a bit flip does not name {tile['path']}: {err}")
    expect(not os.path.exists(dst) and not [n for n in os.listdir(damaged) if n.startswith(".")],
           f"pack after a bit flip left files: {os.listdir(damaged)}")


def layout(ds):
    """How a dataset keeps its elements (h5py.h5d.CONTIGUOUS, CHUNKED, COMPACT or VIRTUAL)."""
    return ds.id.get_create_plist().get_layout()


def same_datasets(src, dst, omitted=()):
    """Whether every dataset of `src` is in `dst` with equal type, shape, values, fill value and
    attributes (but h5tile's own and the ("/name", attribute) pairs `omitted`), contiguous in `dst` where it is virtual in `src`, with the
    storage it had otherwise; reports each difference."""
    ok = True
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        names = []
        a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        for n in names:
            x, y = a[n], b.get(n)
            if not isinstance(y, h5py.Dataset):
                expect(False, f"{dst}: no dataset {n}")
                ok = False
                continue
            want_layout = (h5py.h5d.CONTIGUOUS, None) if x.is_virtual else (layout(x), x.chunks)
            got_layout = (layout(y), y.chunks)
            checks = [
                (x.dtype == y.dtype, f"dtype {x.dtype} -> {y.dtype}"),
                (x.shape == y.shape, f"shape {x.shape} -> {y.shape}"),
                (np.array_equal(x[()], y[()], equal_nan=x.dtype.kind in "fc"), "values"),
                (got_layout == want_layout, f"layout {want_layout} -> {got_layout}"),
                (x.compression == y.compression, f"compression {x.compression} -> {y.compression}"),
                (str(x.fillvalue) == str(y.fillvalue), f"fill value {x.fillvalue} -> {y.fillvalue}"),
            ]
            kept = {k for k in x.attrs if not k.startswith("h5tile_") and ("/" + n, k) not in omitted}
            checks.append((kept == set(y.attrs), f"attributes {sorted(kept)} -> {sorted(y.attrs)}"))
            for k in kept & set(y.attrs):
                checks.append((np.array_equal(x.attrs[k], y.attrs[k]), f"attribute {k}"))
            for good, what in checks:
                if not good:
                    expect(False, f"{dst}:{n}: {what}")
                    ok = False
    return ok


def pack_h5py_files(scratch, fixtures, F):
    """`pack` on the files h5py wrote, and on one with groups, links, attributes of every kind,
    a string-typed virtual dataset and references (see the module's documentation)."""
    out = os.path.join(scratch, "packed")
    os.makedirs(out)
    for name in ["contiguous.h5", "chunked.h5", "dtypes.h5", "vds_rel.h5", "legate.h5"]:
        src, dst = os.path.join(fixtures, name), os.path.join(out, name)
        doc = h5tile_json("pack", src, out)
        expect(doc.get("destination") == dst, f"pack {name} into a folder: {doc}")
        expect(same_datasets(src, dst), f"pack {name}: data differs")
    with h5py.File(os.path.join(out, "vds_rel.h5"), "r") as h:
        expect(not h["vds"].is_virtual and h["vds"].id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS,
               "pack vds_rel: /vds is contiguous")
    # the relative sources gone: the packed file stands alone
    shutil.move(os.path.join(fixtures, "vds_rel_src"), os.path.join(scratch, "vds_rel_src_moved"))
    with h5py.File(os.path.join(out, "vds_rel.h5"), "r") as h:
        expect(np.array_equal(h["vds"][...], F.array("float64", (12, 10))), "pack vds_rel standalone")
    shutil.move(os.path.join(scratch, "vds_rel_src_moved"), os.path.join(fixtures, "vds_rel_src"))

    # a missing source: exit 1, nothing left
    dst = os.path.join(out, "broken.h5")
    _, err = h5tile("pack", os.path.join(fixtures, "legate_broken.h5"), dst, code=1)
    expect("3.h5" in err and "does not exist" in err and err.startswith("h5tile: cannot pack"),
           f"pack legate_broken: {err}")
    expect(not os.path.exists(dst) and not [n for n in os.listdir(out) if n.startswith(".")],
           f"pack legate_broken left files: {os.listdir(out)}")

    # groups, links, attributes, a string-typed VDS, references
    src = os.path.join(scratch, "extras.h5")
    with h5py.File(os.path.join(scratch, "extras_src.h5"), "w") as f:
        f["names"] = np.array([b"ab", b"cde", b"f", b"ghij"], dtype="S4")
        f["halves"] = np.arange(4) + 0.5
    with h5py.File(src, "w", track_order=True) as f:
        f.attrs["title"] = "a run"
        f.attrs["numbers"] = np.arange(4, dtype=np.int16)
        g = f.create_group("zgroup", track_order=True)
        g.attrs["step"] = 12
        g["b"] = F.array("float32", (3, 4))
        g["a"] = F.array("uint16", (6,))
        g["a"].attrs["unit"] = "m"
        layout = h5py.VirtualLayout(shape=(4,), dtype="S4")
        layout[:] = h5py.VirtualSource("extras_src.h5", "names", shape=(4,))
        v = f.create_virtual_dataset("strings", layout)
        v.attrs["kind"] = "labels"
        v.attrs["h5tile_checksums"] = np.arange(3, dtype=np.uint64)
        v.attrs["where"] = g["b"].ref
        layout = h5py.VirtualLayout(shape=(6,), dtype=np.float64)
        layout[:4] = h5py.VirtualSource("extras_src.h5", "halves", shape=(4,))
        f.create_virtual_dataset("partial", layout, fillvalue=-1.5)
        f["soft"] = h5py.SoftLink("/zgroup/b")
        f["ext"] = h5py.ExternalLink("contiguous.h5", "/data")
        f["zgroup/b_again"] = g["b"]
    dst = os.path.join(out, "extras.h5")
    doc = h5tile_json("pack", src, dst)
    expect([(p["name"], p["read_by"]) for p in doc.get("packed", [])]
           == [("/strings", "hdf5"), ("/partial", "h5tile")],
           f"pack extras: packed {doc.get('packed')}")
    expect([o["name"] for o in doc.get("omitted", [])] == ["/strings attribute 'where'"],
           f"pack extras: omitted {doc.get('omitted')}")
    links = {(x["name"], x["kind"], x["target"]) for x in doc.get("links", [])}
    expect(links == {("/ext", "external", "contiguous.h5:/data"), ("/soft", "soft", "/zgroup/b"),
                     ("/zgroup/b_again", "hard", "/zgroup/b")}, f"pack extras: links {links}")
    with h5py.File(dst, "r") as h:
        expect(h.attrs["title"] == "a run" and list(h.attrs["numbers"]) == [0, 1, 2, 3], "root attributes")
        expect(list(h.keys()) == ["zgroup", "strings", "partial", "soft", "ext"], f"root order: {list(h.keys())}")
        expect(list(h["zgroup"].keys()) == ["b", "a", "b_again"], f"group order: {list(h['zgroup'].keys())}")
        expect(h["zgroup"].attrs["step"] == 12 and h["zgroup/a"].attrs["unit"] == "m", "group attributes")
        s = h["strings"]
        expect(not s.is_virtual and list(s[...]) == [b"ab", b"cde", b"f", b"ghij"], f"strings: {s[...]}")
        p = h["partial"]
        expect(list(p[...]) == [0.5, 1.5, 2.5, 3.5, -1.5, -1.5] and p.fillvalue == -1.5,
               f"partial: {p[...]}, fill {p.fillvalue}")
        expect(dict(s.attrs) == {"kind": "labels"}, f"strings attributes: {dict(s.attrs)}")
        expect(h.get("soft", getlink=True).path == "/zgroup/b", "soft link kept")
        e = h.get("ext", getlink=True)
        expect((e.filename, e.path) == ("contiguous.h5", "/data"), "external link kept")
        expect(h["zgroup/b_again"].id == h["zgroup/b"].id, "hard links to one object")
    expect(same_datasets(src, dst, {("/strings", "where")}), "pack extras: data differs")
    pack_named_types(scratch, out)


def pack_named_types(scratch, out):
    """`pack` keeps a named datatype once: every dataset and attribute of it in the source is of
    its one copy in the packed file (a dataset reached before the type, an attribute of a
    dataset, of the root and of a virtual dataset, a virtual dataset of it made contiguous)."""
    src = os.path.join(scratch, "named_types.h5")
    with h5py.File(src, "w") as f:
        f["T"] = np.dtype("<f8")
        f.create_dataset("Aearly", data=np.arange(3.0), dtype=f["T"])  # before /T in name order
        d = f.create_dataset("d", data=np.arange(4.0) / 2, dtype=f["T"])
        d.attrs.create("a", 1.5, dtype=f["T"])
        f.attrs.create("g", 2.5, dtype=f["T"])
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        space = h5py.h5s.create_simple((4,))
        dcpl.set_virtual(space, b"extras_src.h5", b"halves", h5py.h5s.create_simple((4,)))
        v = h5py.h5d.create(f.id, b"v", f["T"].id, space, dcpl=dcpl)
        h5py.AttributeManager(h5py.Dataset(v)).create("b", 3.5, dtype=f["T"])
    dst = os.path.join(out, "named_types.h5")
    doc = h5tile_json("pack", src, dst)
    expect([p["name"] for p in doc.get("packed", [])] == ["/v"], f"pack named_types: {doc}")
    expect(same_datasets(src, dst), "pack named_types: data differs")

    def types(path):
        """(named datatypes' paths, the type each dataset and attribute is of: the path of the
        named datatype, "anonymous" for another committed type, None for a type of its own),
        and the reference count of each named datatype."""
        with h5py.File(path, "r") as h:
            named, found = {}, []
            h.visititems(lambda n, o: found.append((n, o)))
            for n, o in found:
                if isinstance(o, h5py.Datatype):
                    named[h5py.h5o.get_info(o.id).addr] = n
            def of(t):
                return named.get(h5py.h5o.get_info(t).addr, "anonymous") if t.committed() else None
            uses = {}
            for n, o in [("", h)] + found:
                if isinstance(o, h5py.Dataset):
                    uses[n] = of(o.id.get_type())
                for k in o.attrs:
                    uses[f"{n}@{k}"] = of(o.attrs.get_id(k).get_type())
            counts = {n: h5py.h5o.get_info(h[n].id).rc for n in named.values()}
            return sorted(named.values()), uses, counts

    want = (["T"], {"Aearly": "T", "d": "T", "d@a": "T", "@g": "T", "v": "T", "v@b": "T"}, {"T": 7})
    expect(types(src) == want, f"named_types.h5 is not as written: {types(src)}")
    expect(types(dst) == want, f"pack named_types: {types(dst)}, not {want}")
    with h5py.File(src, "r") as a, h5py.File(dst, "r") as b:
        names = [], []
        a.visit(names[0].append)
        b.visit(names[1].append)
        expect(names[0] == names[1], f"pack named_types: objects {names[0]} -> {names[1]}")


def main():
    global BIN
    BIN, scratch, make_files = (os.path.abspath(a) for a in sys.argv[1:4])
    own_files = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 else None
    shutil.rmtree(scratch, ignore_errors=True)
    fixtures = os.path.join(scratch, "files")
    subprocess.run([sys.executable, make_files, fixtures], check=True)
    sys.path.insert(0, os.path.dirname(make_files))
    import dtype_formulas as F  # noqa: E402
    f = lambda name: os.path.join(fixtures, name)  # noqa: E731

    # ls: plain datasets
    d = one(h5tile_json("ls", f("contiguous.h5")))
    expect((d.get("name"), d.get("dtype"), d.get("shape"), d.get("storage"), d.get("bytes"))
           == ("/data", "float64", [13, 17], "contiguous", 13 * 17 * 8), f"contiguous: {d}")
    expect("virtual" not in d, f"contiguous is not virtual: {d}")
    d = one(h5tile_json("ls", f("chunked.h5")))
    expect((d.get("name"), d.get("dtype"), d.get("shape"), d.get("storage"), d.get("chunks"))
           == ("/grp/ints", "int32", [20, 30], "chunked", [7, 8]), f"chunked: {d}")
    d = one(h5tile_json("ls", f("chunked.h5"), "grp/ints"))
    expect(d.get("name") == "/grp/ints", f"chunked by name: {d}")
    listing = h5tile_json("ls", f("dtypes.h5"))
    got = {x["name"]: (x["dtype"], x["shape"]) for x in listing.get("datasets", [])}
    expect(got == {"/" + n: (n, [5, 7]) for n in F.NAMES}, f"dtypes: {got}")

    # ls: virtual datasets h5tile did not write
    d = one(h5tile_json("ls", f("vds_rel.h5")))
    v = d.get("virtual", {})
    expect((d.get("shape"), d.get("dtype"), v.get("layout"), v.get("tiles"), v.get("files"),
            v.get("checksummed"), v.get("not_checksummed"), v.get("generation"))
           == ([12, 10], "float64", "other", 3, 3, False, 3, None), f"vds_rel: {d}")
    d = one(h5tile_json("ls", "-l", "-D", f("legate.h5")))
    v = d.get("virtual", {})
    expect((d.get("shape"), d.get("dtype"), v.get("layout"), v.get("tiles"), v.get("files"))
           == ([10, 9], "int64", "other", 4, 4), f"legate: {d}")
    blocks = [((0, 6), (0, 4)), ((0, 6), (4, 9)), ((6, 10), (0, 4)), ((6, 10), (4, 9))]
    tiles = v.get("tile_list", [])
    expect(len(tiles) == 4, f"legate tile_list: {tiles}")
    for i, (t, ((r0, r1), (c0, c1))) in enumerate(zip(tiles, blocks)):
        want = os.path.join(fixtures, "legate_legate_vds", f"{i}.h5")
        expect((t["offset"], t["shape"], t["file"], t["found"], t["min"], t["nan"])
               == ([r0, c0], [r1 - r0, c1 - c0], want, True, None, None),
               f"legate tile {i}: {t}")
    out, _ = h5tile("ls", "-D", f("legate.h5"))
    expect("other virtual, 4 tiles in 4 files, not checksummed" in out, f"ls -D: {out}")
    expect(os.path.join("legate_legate_vds", "3.h5") in out, f"ls -D names sources: {out}")

    # check: clean files pass, a missing source is named
    for name in ["contiguous.h5", "chunked.h5", "dtypes.h5", "vds_rel.h5", "legate.h5"]:
        out, _ = h5tile("check", f(name))
        expect(out.startswith(f(name) + ": ok"), f"check {name}: {out}")
    report = h5tile_json("check", f("vds_rel.h5"), f("legate.h5"))
    expect(report.get("ok") is True, f"check --json clean: {report}")
    missing = os.path.join(fixtures, "legate_broken_legate_vds", "3.h5")
    out, err = h5tile("check", f("legate_broken.h5"), code=1)
    expect(f"source file '{missing}' holding [6:10, 4:9] does not exist" in out,
           f"check legate_broken: {out}")
    expect(err.startswith("h5tile: check found 1 problem"), f"check legate_broken: {err}")
    report = h5tile_json("check", f("legate_broken.h5"), code=1)
    problems = [p for x in report.get("files", []) for d in x["datasets"] for p in d["problems"]]
    expect(report.get("ok") is False and len(problems) == 1, f"legate_broken: {report}")
    if problems:
        p = problems[0]
        expect((p["file"], p["problem"], p["offset"], p["shape"])
               == (missing, "does not exist", [6, 4], [4, 5]), f"legate_broken: {p}")
    out, _ = h5tile("check", "--fast", f("vds_rel_broken.h5"), code=1)
    expect("part1.h5" in out and "does not exist" in out, f"vds_rel_broken: {out}")

    # cp: relative sources go with the copy; absolute ones are refused
    copies = os.path.join(scratch, "copies")
    os.makedirs(copies)
    doc = h5tile_json("cp", f("vds_rel.h5"), os.path.join(copies, "moved.h5"))
    expect(len(doc.get("copied", [])) == 3, f"cp vds_rel: {doc}")
    os.chdir(copies)
    with h5py.File("moved.h5", "r") as h:
        expect(np.array_equal(h["vds"][...], F.array("float64", (12, 10))), "cp vds_rel data")
    _, err = h5tile("cp", f("legate.h5"), os.path.join(copies, "legate.h5"), code=2)
    expect("absolute" in err and "--shallow" in err, f"cp legate: {err}")
    expect(not os.path.exists(os.path.join(copies, "legate.h5")), "cp legate refused")
    h5tile("cp", "--shallow", f("legate.h5"), os.path.join(copies, "legate.h5"))
    with h5py.File("legate.h5", "r") as h:
        expect(np.array_equal(h["data"][...], F.array("int64", (10, 9))), "cp --shallow data")

    # rm: the master goes, sources outside the tile folder stay
    doc = h5tile_json("rm", os.path.join(copies, "moved.h5"))
    expect(len(doc.get("kept", [])) == 3 and not os.path.exists("moved.h5"), f"rm: {doc}")
    expect(os.path.exists(os.path.join(copies, "vds_rel_src", "part0.h5")), "rm kept sources")

    # not HDF5: exit status 2, the path named
    text = os.path.join(scratch, "notes.txt")
    with open(text, "w") as t:
        t.write("not HDF5\n")
    for command in ["ls", "check", "rm"]:
        _, err = h5tile(command, text, code=2)
        expect(err == f"h5tile: cannot open '{text}': not an HDF5 file\n", f"{command}: {err}")
    expect(os.path.exists(text), "rm leaves a file that is not HDF5")

    pack_h5py_files(scratch, fixtures, F)

    if own_files:
        h5tile_files(own_files, scratch, F)

    if FAILURES:
        print(f"cli_installed: {len(FAILURES)} failures", file=sys.stderr)
        sys.exit(1)
    print("cli_installed: all checks passed")


if __name__ == "__main__":
    main()
