"""A SWMR reader in h5py through the h5tile_gds driver (HDF5_DRIVER=h5tile_gds, with h5py's
own HDF5), while a writer in another process (h5py, the default driver) appends 64 values at a
time to a chunked dataset in SWMR mode. The reader refreshes and reads the last value every
few milliseconds: every read must succeed and equal what was written (sec2 allows reads past a
SWMR reader's stale end of allocation; the driver must too).

usage: h5py_swmr.py SCRATCH_DIR        (HDF5_PLUGIN_PATH names the plugin's folder)
"""
import os
import subprocess
import sys
import time

BATCH, BATCHES = 64, 300

WRITER = f"""
import sys, time
import h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    d = f.create_dataset("data", (0,), maxshape=(None,), chunks=({BATCH},), dtype="i8")
    f.swmr_mode = True
    print("ready", flush=True)
    sys.stdin.readline()
    for b in range({BATCHES}):
        d.resize(((b + 1) * {BATCH},))
        d[b * {BATCH}:] = np.arange(b * {BATCH}, (b + 1) * {BATCH})
        d.flush()
        time.sleep(0.002)
"""


def main():
    scratch = sys.argv[1]
    os.makedirs(scratch, exist_ok=True)
    path = os.path.join(scratch, "swmr.h5")
    env = {k: v for k, v in os.environ.items() if k not in ("HDF5_DRIVER", "HDF5_DRIVER_CONFIG")}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, path], env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert writer.stdout.readline().strip() == "ready"
    os.environ["HDF5_DRIVER"] = "h5tile_gds"
    import h5py  # noqa: PLC0415 (after HDF5_DRIVER: the reader's files go through the plugin)

    reads, errors, first = 0, 0, None
    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        assert f.id.get_access_plist().get_driver() != h5py.h5fd.SEC2, "not through the plugin"
        d = f["data"]
        writer.stdin.write("go\n")
        writer.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = writer.poll() is not None
            try:
                d.refresh()
                n = d.shape[0]
                if n:
                    v = int(d[n - 1])
                    reads += 1
                    if v != n - 1:
                        errors += 1
                        first = first or f"value {n - 1} read as {v}"
            except OSError as e:
                errors += 1
                first = first or str(e)
            if done and d.shape[0] == BATCH * BATCHES:
                break
            time.sleep(0.005)
        d.refresh()
        whole = d[...]
    assert writer.wait() == 0
    print(f"h5py_swmr: {reads} reads, {errors} errors{': ' + first if first else ''}")
    assert errors == 0 and reads > 0
    assert len(whole) == BATCH * BATCHES and (whole == list(range(BATCH * BATCHES))).all()


if __name__ == "__main__":
    main()
