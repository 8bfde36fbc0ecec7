"""The Legate tasks of `h5tile.legate`, registered with Legate when this module is first
imported. Legate reads each task's parameter types from its annotations at registration, so
this module keeps them as real objects (no `from __future__ import annotations`)."""

import os

import numpy as np
from legate.core.task import InputArray, OutputArray, task

from ._read import from_file as _read_region
from ._transaction import Writer


@task
def write_tile(array: InputArray, token_hex: str, dataset: str, records: str) -> None:
    """One partition point: writes its block of `array` as a tile of the transaction whose
    token is `token_hex`, and leaves its record in the folder `records`."""
    data = array.data()
    offset = tuple(int(v) for v in data.domain.lo)
    block = np.asarray(data)
    if block.size == 0:
        return
    record = Writer(bytes.fromhex(token_hex), (dataset,)).write_tile(block, offset)
    # Written whole, then named: the control process reads only whole records.
    name = os.path.join(records, "tile-" + "-".join(map(str, offset)))
    with open(name + ".part", "wb") as f:
        f.write(record)
    os.replace(name + ".part", name + ".record")


@task
def read_tile(out: OutputArray, path: str, dataset: str, verify: bool) -> None:
    """One partition point: reads its block of `out` from the dataset, its tiles checked."""
    data = out.data()
    region = tuple(slice(int(a), int(b) + 1) for a, b in zip(data.domain.lo, data.domain.hi))
    if any(s.stop <= s.start for s in region):
        return
    # Straight into the partition's memory: no copy, no second buffer.
    _read_region(path, dataset, region=region, out=np.asarray(data), verify=verify)
