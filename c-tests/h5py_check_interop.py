"""Checks, with h5py, the files api_write_all_dtypes wrote: for every element type, the dataset
/data of <dir>/<name>.h5 has the numpy dtype h5py gives that type (numpy.bool_, int8, ...,
float16, complex64, complex128), shape (5, 7) and exactly the values of dtype_formulas.py; it is
a virtual dataset whose sources are relative paths to files in <name>.h5.tiles/ holding
/tile; it reads the same from another working directory. <name>_single.h5 (the single-file
layout) holds the same as a contiguous dataset; <name>_subfiles.h5 (the subfiled layout,
written by one process) the same as a virtual dataset whose one source is the dataset /box.f0
of one file <name>_subfiles.h5.tiles/data.<generation>.s0.h5, named by a relative path: the
two tiles (rows 0-1 and 2-4) fill the dataset, so the subfile holds them as one contiguous
box (coalesced), mapped once. Also nested.h5:/a/b/c (3-D float64).
In both tiled layouts the master's checksums are checked as the README says a user would:
each tile from the master's index (h5tile_tiles, h5tile_sources, h5tile_source_boxes), its
bytes where h5tile_tile_bytes places them (one run, or its rows within a coalesced box),
xxhash.xxh3_64_intdigest of each 1 MiB block of them (its rows are narrower than the 8 KiB of
a box's, so its blocks are runs); and its h5tile_tile_min/max/nan against
numpy on each tile (none for complex).
Exits non-zero on any mismatch, listing them all.

usage: h5py_check_interop.py DIR
"""

import os
import re
import sys

import h5py
import numpy as np
import xxhash

sys.dont_write_bytecode = True  # keep the source folder clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dtype_formulas as F  # noqa: E402

errors = []


def expect(cond, what):
    if not cond:
        errors.append(what)
    return cond


def check_values(label, got, want):
    if not expect(got.dtype == want.dtype, f"{label}: dtype {got.dtype}, expected {want.dtype}"):
        return
    if not expect(got.shape == want.shape, f"{label}: shape {got.shape}, expected {want.shape}"):
        return
    if got.tobytes() != want.tobytes():
        bad = np.argwhere(got != want)
        first = tuple(bad[0]) if len(bad) else "(bytes differ)"
        errors.append(f"{label}: {len(bad)} values differ; first at {first}: "
                      f"{got[first] if len(bad) else ''} != {want[first] if len(bad) else ''}")


def check_data(ds, name, label):
    """/data as h5py reads it: the numpy dtype h5py gives `name` and the values of
    dtype_formulas.py, which every layout api_write_all_dtypes wrote must share (one check
    for all three, so that they cannot drift apart). Returns the values wanted."""
    want = F.array(name, (5, 7))
    expect(ds.dtype == np.dtype(F.NUMPY[name]),
           f"{label}: h5py sees dtype {ds.dtype}, expected {np.dtype(F.NUMPY[name])}")
    check_values(label, ds[...], want)
    return want


def check_dtype_file(d, name):
    path = os.path.join(d, name + ".h5")
    with h5py.File(path, "r") as f:
        ds = f["data"]
        want = check_data(ds, name, name)
        check_values(name + " [1:4, 2:6]", ds[1:4, 2:6], want[1:4, 2:6])
        if expect(ds.is_virtual, f"{name}: /data is not a virtual dataset"):
            sources = ds.virtual_sources()
            expect(len(sources) == 2, f"{name}: {len(sources)} VDS sources, expected 2")
            for s in sources:
                expect(not os.path.isabs(s.file_name),
                       f"{name}: VDS source '{s.file_name}' is an absolute path")
                expect(s.file_name.startswith(name + ".h5.tiles/"),
                       f"{name}: VDS source '{s.file_name}' is not in {name}.h5.tiles/")
                expect(s.dset_name in ("/tile", "tile"),
                       f"{name}: VDS source dataset is '{s.dset_name}', not /tile")
                src = os.path.join(d, s.file_name)
                if expect(os.path.isfile(src), f"{name}: source file {src} missing"):
                    with h5py.File(src, "r") as t:
                        expect(t["tile"].dtype == np.dtype(F.NUMPY[name]),
                               f"{name}: tile file dtype {t['tile'].dtype}")
    # bool must be h5py's enum {FALSE: 0, TRUE: 1}; complex h5py's {r, i} compound
    with h5py.File(path, "r") as f:
        tid = f["data"].id.get_type()
        if name == "bool":
            expect(tid.get_class() == h5py.h5t.ENUM, "bool: not stored as an enum")
        if name.startswith("complex"):
            expect(tid.get_class() == h5py.h5t.COMPOUND
                   and [tid.get_member_name(k) for k in range(tid.get_nmembers())] == [b"r", b"i"],
                   f"{name}: not stored as h5py's {{r, i}} compound")


def check_single_file(d, name):
    path = os.path.join(d, name + "_single.h5")
    with h5py.File(path, "r") as f:
        ds = f["data"]
        expect(not ds.is_virtual and ds.chunks is None,
               f"{name}_single: /data is not a contiguous dataset")
        check_data(ds, name, name + "_single")
    expect(not os.path.exists(path + ".tiles"), f"{name}_single: a tile folder exists")


def check_subfiles_file(d, name):
    path = os.path.join(d, name + "_subfiles.h5")
    tiles = name + "_subfiles.h5.tiles"
    subfiles = sorted(os.listdir(os.path.join(d, tiles)))
    if not expect(len(subfiles) == 1 and re.fullmatch(r"data\.[0-9a-f]{16}\.s0\.h5", subfiles[0]),
                  f"{name}_subfiles: {tiles}/ holds {subfiles}, expected data.<generation>.s0.h5"):
        return
    with h5py.File(path, "r") as f:
        ds = f["data"]
        want = check_data(ds, name, name + "_subfiles")
        check_values(name + "_subfiles [1:4, 2:6]", ds[1:4, 2:6], want[1:4, 2:6])
        if not expect(ds.is_virtual, f"{name}_subfiles: /data is not a virtual dataset"):
            return
        sources = ds.virtual_sources()
        expect([s.dset_name.lstrip("/") for s in sources] == ["box.f0"],
               f"{name}_subfiles: VDS sources {[s.dset_name for s in sources]}")
        expect(all(s.file_name == f"{tiles}/{subfiles[0]}" for s in sources),
               f"{name}_subfiles: VDS source files {[s.file_name for s in sources]}")
    # the subfile itself: the two tiles (rows 0-1 and 2-4) as one contiguous box
    with h5py.File(os.path.join(d, tiles, subfiles[0]), "r") as t:
        expect(sorted(t.keys()) == ["box.f0"], f"{name}_subfiles: the subfile holds {sorted(t.keys())}")
        if "box.f0" in t:
            expect(t["box.f0"].chunks is None and not t["box.f0"].is_virtual,
                   f"{name}_subfiles: box.f0 is not contiguous")
            check_values(f"{name}_subfiles box.f0", t["box.f0"][...], want)


def check_checksums(path, label, name):
    """The master's checksum and extremes attributes, checked with xxhash and numpy."""
    with h5py.File(path, "r") as f:
        ds = f["data"]
        attrs = ds.attrs
        for a in ("h5tile_checksum_boxes", "h5tile_checksum_first", "h5tile_checksums",
                  "h5tile_tile_bytes"):
            if not expect(a in attrs, f"{label}: the master has no attribute {a}"):
                return
        # Boxes of `row`-byte rows for tiles wider than that; these tiles are narrower, so
        # their blocks are runs of `block` bytes (test_single.py checks wide tiles' boxes).
        block, row = (int(x) for x in attrs["h5tile_checksum_boxes"])
        first, sums = attrs["h5tile_checksum_first"], attrs["h5tile_checksums"]
        places = attrs["h5tile_tile_bytes"]
        # The index: each tile's box, its file (empty: the previous tile's) and dataset, and
        # where tiles are coalesced, the box its dataset holds.
        boxes = attrs["h5tile_tiles"]
        names = bytes(attrs["h5tile_sources"]).split(b"\0")[:-1]
        files = []
        for f_name in names[0::2]:
            files.append(f_name.decode() if f_name else files[-1])
        within = attrs["h5tile_source_boxes"] if "h5tile_source_boxes" in attrs else boxes
        expect(len(first) == len(boxes) + 1, f"{label}: {len(first)} checksum starts")
        itemsize = np.dtype(F.NUMPY[name]).itemsize
        for i, ((r0, c0), (h, w)) in enumerate(boxes):
            n = h * w * itemsize
            expect(w * itemsize <= row, f"{label}: tile {i} is wider than a box's {row} bytes")
            offset = int(places[i][0])
            (b0, bc0), (_, bw) = within[i]
            with open(os.path.join(os.path.dirname(path), files[i]), "rb") as t:
                # the tile's rows, within its box (the tile itself when not coalesced)
                data = b""
                for r in range(h):
                    t.seek(offset + ((r0 - b0 + r) * bw + (c0 - bc0)) * itemsize)
                    data += t.read(w * itemsize)
            got = [xxhash.xxh3_64_intdigest(data[k:k + block]) for k in range(0, n, block)]
            expect(got == [int(x) for x in sums[first[i]:first[i + 1]]],
                   f"{label}: tile {i}'s checksums {got} differ from the master's")
            if name.startswith("complex"):
                expect("h5tile_tile_min" not in attrs, f"{label}: min/max recorded for complex")
                continue
            tile = ds[r0:r0 + h, c0:c0 + w]
            values = tile.astype(np.float64) if name == "bool" else tile
            for a, want in (("h5tile_tile_min", np.nanmin(values)), ("h5tile_tile_max", np.nanmax(values)),
                            ("h5tile_tile_nan", int(np.isnan(values).sum()) if values.dtype.kind == "f" else 0)):
                got = attrs[a][i]
                expect(got == want, f"{label}: tile {i}'s {a} is {got}, numpy says {want}")


def main():
    d = os.path.abspath(sys.argv[1])
    for name in F.NAMES:
        check_checksums(os.path.join(d, name + ".h5"), name, name)
        check_checksums(os.path.join(d, name + "_subfiles.h5"), name + "_subfiles", name)
    for name in F.NAMES:
        check_dtype_file(d, name)
        check_single_file(d, name)
        check_subfiles_file(d, name)
    with h5py.File(os.path.join(d, "nested.h5"), "r") as f:
        expect(isinstance(f.get("a/b"), h5py.Group), "nested.h5: /a/b is not a group")
        want = np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 1.5 - 20.25
        check_values("nested.h5:/a/b/c", f["a/b/c"][...], want)
    # relative sources resolve from the master's folder whatever the working directory
    os.chdir("/")
    with h5py.File(os.path.join(d, "int32.h5"), "r") as f:
        check_values("int32 read from /", f["data"][...], F.array("int32", (5, 7)))
    with h5py.File(os.path.join(d, "int32_subfiles.h5"), "r") as f:
        check_values("int32_subfiles read from /", f["data"][...], F.array("int32", (5, 7)))
    if errors:
        print("h5py_check_interop: FAILED", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(f"h5py_check_interop: OK ({len(F.NAMES)} element types)")


if __name__ == "__main__":
    main()
