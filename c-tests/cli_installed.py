"""Runs the installed `h5tile` tool on files h5py writes: plain contiguous and chunked datasets,
every element type, an h5py virtual dataset with relative sources and Legate's layout (absolute
sources), and the broken variants of the last two (one source missing), all made by
h5py_make_files.py. Checks `ls --json` (names, types, shapes, storage, tiles, files, layouts),
`ls -l -D --json` (each tile's box and source), `check` (0 on clean files; 1 on the broken
ones, naming the missing source, in text and JSON), `cp` (a relative VDS copied elsewhere reads
back equal with h5py; Legate's absolute sources refused, --shallow copies the master alone) and
`rm` (sources outside the tile folder kept), and that a file that is not HDF5 is exit status 2
with its path in the message. Exits non-zero on any mismatch, listing them all.

With H5TILE_FILES_DIR (the files api_write_all_dtypes wrote: every element type in the VDS,
subfiled and single-file layouts), also checks the tool on h5tile's own files: `ls --json`
(layout, tiles, files, checksummed) and `ls -l --json` (each tile's min and max equal to
numpy's on the tile, NaNs passed over), `check` clean (0), and on a copy with one bit flipped
inside a tile's bytes: `check` 1 naming that tile file and `check --fast` 0 (it reads no tile
bytes).

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
        single = one(h5tile_json("ls", os.path.join(d, name + "_single.h5")))
        expect(single.get("storage") == "contiguous", f"ls {name}_single: {single}")
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

    if own_files:
        h5tile_files(own_files, scratch, F)

    if FAILURES:
        print(f"cli_installed: {len(FAILURES)} failures", file=sys.stderr)
        sys.exit(1)
    print("cli_installed: all checks passed")


if __name__ == "__main__":
    main()
