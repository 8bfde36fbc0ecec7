"""Checks, with h5py and hdf5plugin, the compressed files mpi_compression wrote on 3 ranks
(<dir>/<layout>-<codec>[-shuffle].h5, layouts vds and subfiles, codecs zstd, lz4 and deflate):
- h5py reads /f64 and /i32 whole and in a box, every value exactly the C test's formula;
- each tile's source dataset is chunked, and its filter pipeline (id, flags, cd_values, in
  order) is the one h5py itself writes for `shuffle=...` with hdf5plugin.Zstd(clevel=3),
  hdf5plugin.LZ4(nbytes=1 MiB) or compression="gzip", compression_opts=6; h5py reports
  `compression == "gzip"` for deflate and `shuffle` as written;
- HDF5 1.10's h5dump (Debian's hdf5-tools, where installed), given hdf5plugin's filter plugins
  through HDF5_PLUGIN_PATH, dumps a tile file of each codec exactly;
- the master's h5tile_chunk_checksums are, tile by tile, XXH3-64 (xxhash) of each chunk as
  HDF5 stores it (h5py's read_direct_chunk), chunks in row-major order of the chunk grid;
- with TOOL (the h5tile command-line tool): `h5tile pack` of a zstd (shuffled) and an lz4 file
  gives chunked datasets with those same pipelines, which h5py reads exactly, and with
  `--compression none` contiguous ones.
Exits non-zero on any mismatch, listing them all.

usage: h5py_compression.py DIR [TOOL]
"""

import itertools
import json
import os
import subprocess
import sys
import tempfile

import h5py
import hdf5plugin
import numpy as np
import xxhash

R, C = 900, 1000
ALL = np.arange(R * C, dtype=np.uint64).reshape(R, C)
F64 = (ALL // 7).astype(np.float64) * 0.5 - 1000.0
I32 = (ALL % 977).astype(np.int32) - 400
H5DUMP = "/usr/bin/h5dump"


def reference_filters(codec: str, shuffle: bool, dtype: np.dtype) -> list:
    """The pipeline h5py writes for `codec` (with hdf5plugin), as (id, flags, cd_values)."""
    options = {
        "zstd": dict(hdf5plugin.Zstd(clevel=3)),
        "lz4": dict(hdf5plugin.LZ4(nbytes=1 << 20)),
        "deflate": dict(compression="gzip", compression_opts=6),
    }[codec]
    with tempfile.TemporaryDirectory() as d:
        with h5py.File(os.path.join(d, "ref.h5"), "w") as f:
            ds = f.create_dataset("x", shape=(8, 8), dtype=dtype, chunks=(4, 8), shuffle=shuffle,
                                  **options)
            return pipeline(ds)


def pipeline(ds: h5py.Dataset) -> list:
    plist = ds.id.get_create_plist()
    return [tuple(plist.get_filter(i)[:3]) for i in range(plist.get_nfilters())]


def stored_chunk_sums(ds: h5py.Dataset) -> list:
    """XXH3-64 of each chunk of `ds` as stored, in row-major order of its chunk grid."""
    grid = [range(0, n, c) for n, c in zip(ds.shape, ds.chunks)]
    return [xxhash.xxh3_64_intdigest(ds.id.read_direct_chunk(at)[1])
            for at in itertools.product(*grid)]


def main() -> int:
    directory = sys.argv[1]
    errors: list[str] = []
    names = sorted(n for n in os.listdir(directory) if n.endswith(".h5"))
    if len(names) != 12:
        errors.append(f"{len(names)} files in {directory}, expected 12: {names}")
    dumped: set[str] = set()
    for name in names:
        layout, codec, *rest = name[:-3].split("-")
        shuffle = rest == ["shuffle"]
        path = os.path.join(directory, name)
        with h5py.File(path, "r") as f:
            for key, want in (("f64", F64), ("i32", I32)):
                ds = f[key]
                if not ds.is_virtual:
                    errors.append(f"{name}:/{key} is not a virtual dataset")
                    continue
                if not np.array_equal(ds[...], want):
                    errors.append(f"{name}:/{key}: values differ")
                if not np.array_equal(ds[123:456, 7:901], want[123:456, 7:901]):
                    errors.append(f"{name}:/{key}[123:456, 7:901]: values differ")
                reference = reference_filters(codec, shuffle, want.dtype)
                sources = ds.virtual_sources()
                if len(sources) != 3:
                    errors.append(f"{name}:/{key}: {len(sources)} sources, expected 3 (one a rank)")
                first = ds.attrs.get("h5tile_chunk_checksum_first")
                sums = ds.attrs.get("h5tile_chunk_checksums")
                if first is None or sums is None or len(first) != len(sources) + 1:
                    errors.append(f"{name}:/{key}: no chunk checksums for its {len(sources)} tiles")
                    first = None
                for i, s in enumerate(sources):
                    file = os.path.join(directory, s.file_name)
                    with h5py.File(file, "r") as t:
                        tile = t[s.dset_name]
                        where = f"{name}:/{key} source {s.file_name}:{s.dset_name}"
                        if tile.chunks is None:
                            errors.append(f"{where} is not chunked")
                        got = pipeline(tile)
                        if got != reference:
                            errors.append(f"{where}: filters {got}, h5py writes {reference}")
                        if tile.shuffle != shuffle:
                            errors.append(f"{where}: h5py reports shuffle={tile.shuffle}")
                        if codec == "deflate" and tile.compression != "gzip":
                            errors.append(f"{where}: h5py reports compression={tile.compression!r}")
                        if first is not None:
                            got = stored_chunk_sums(tile)
                            want_sums = [int(x) for x in sums[first[i]:first[i + 1]]]
                            if got != want_sums:
                                errors.append(f"{where}: stored chunks' XXH3 {got[:4]}... differ from "
                                              f"the master's {want_sums[:4]}...")
                        offset = tile.attrs["h5tile_offset"]
                        part = want[offset[0]:offset[0] + tile.shape[0], offset[1]:offset[1] + tile.shape[1]]
                        if not np.array_equal(tile[...], part):
                            errors.append(f"{where}: values differ")
                        if layout == "vds" and codec not in dumped and os.path.exists(H5DUMP):
                            dumped.add(codec)
                            errors += check_h5dump(file, part)
    packed = 0
    if len(sys.argv) > 2:
        packed, found = check_packed(sys.argv[2], directory)
        errors += found
    print(f"h5py_compression: {'FAILED' if errors else 'OK'} ({len(names)} files, {packed} packed, h5py "
          f"{h5py.version.version}, HDF5 {h5py.version.hdf5_version}, hdf5plugin {hdf5plugin.version}"
          f"{', h5dump of ' + ' '.join(sorted(dumped)) if dumped else ''})")
    for e in errors:
        print("  " + e)
    return 1 if errors else 0


def check_packed(tool: str, directory: str) -> tuple[int, list[str]]:
    """`TOOL pack` of two compressed files keeps their codecs (and `--compression none` makes
    contiguous datasets): h5py reads the packed datasets exactly, with h5py's own pipelines."""
    errors: list[str] = []
    cases = [("vds-zstd-shuffle.h5", [], "zstd", True),
             ("subfiles-lz4.h5", [], "lz4", False),
             ("vds-zstd-shuffle.h5", ["--compression", "none"], None, False)]
    with tempfile.TemporaryDirectory() as d:
        for k, (name, options, codec, shuffle) in enumerate(cases):
            src, dst = os.path.join(directory, name), os.path.join(d, f"packed{k}.h5")
            what = f"h5tile pack {' '.join(options)} {name}"
            run = subprocess.run([tool, "pack", "--json", *options, src, dst],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                errors.append(f"{what}: rc {run.returncode}: {run.stderr.strip()[:500]}")
                continue
            doc = json.loads(run.stdout)
            codecs = sorted({(p["compression"] or {}).get("codec") for p in doc["packed"]},
                            key=str)
            if codecs != [codec]:
                errors.append(f"{what}: pack reports codecs {codecs}, expected {codec}")
            with h5py.File(dst, "r") as f:
                for key, want in (("f64", F64), ("i32", I32)):
                    ds = f[key]
                    where = f"{what}:/{key}"
                    if ds.is_virtual:
                        errors.append(f"{where} is virtual")
                    if codec is None:
                        if ds.chunks is not None:
                            errors.append(f"{where} is chunked {ds.chunks}, not contiguous")
                    elif pipeline(ds) != reference_filters(codec, shuffle, want.dtype):
                        errors.append(f"{where}: filters {pipeline(ds)}, h5py writes "
                                      f"{reference_filters(codec, shuffle, want.dtype)}")
                    if not np.array_equal(ds[...], want):
                        errors.append(f"{where}: values differ")
                    if not np.array_equal(ds[123:456, 7:901], want[123:456, 7:901]):
                        errors.append(f"{where}[123:456, 7:901]: values differ")
    return len(cases), errors


def check_h5dump(file: str, want: np.ndarray) -> list[str]:
    """h5dump -b of /tile in `file`, with hdf5plugin's plugins, is `want`'s bytes."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "tile.bin")
        env = dict(os.environ, HDF5_PLUGIN_PATH=hdf5plugin.PLUGIN_PATH)
        dump = subprocess.run([H5DUMP, "-d", "/tile", "-b", "NATIVE", "-o", out, file],
                              capture_output=True, text=True, env=env)
        if dump.returncode != 0:
            return [f"h5dump {file}: rc {dump.returncode}: {dump.stderr.strip()[:500]}"]
        got = np.fromfile(out, dtype=want.dtype)
        if not np.array_equal(got, want.ravel()):
            return [f"h5dump {file}: the values differ"]
    return []


if __name__ == "__main__":
    sys.exit(main())
