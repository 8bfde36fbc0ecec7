"""The installed package as a user gets it: `pip install <prefix>/share/h5tile/python` puts a
copy elsewhere that still finds <prefix>/lib/libh5tile.so.0 (recorded by make install), and
H5TILE_LIBRARY comes first. pip builds with the flit_core of this environment (no download),
and nothing is written into the prefix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import tree

WHERE = "import h5tile, h5tile._library as l; print(h5tile.__file__); print(l.path)"


def run(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "H5TILE_LIBRARY")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def test_pip_install_finds_the_prefix_library(scratch: Path, prefix: Path) -> None:
    package = prefix / "share" / "h5tile" / "python"
    before = tree(package)
    target = scratch / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-build-isolation", "--no-deps", "--no-index", "--target", str(target), str(package)],
        env=clean_env(), capture_output=True, text=True, timeout=120)
    assert pip.returncode == 0, pip.stderr
    assert (target / "h5tile" / "py.typed").exists()
    assert tree(package) == before  # no build leftovers in the prefix

    found = run(WHERE, clean_env(PYTHONPATH=str(target)), scratch)
    assert found.returncode == 0, found.stderr
    module, library = found.stdout.split()
    assert Path(module).is_relative_to(target)
    assert Path(library).resolve() == (prefix / "lib" / "libh5tile.so.0").resolve()

    # H5TILE_LIBRARY first, and no silent fallback when it is wrong.
    wrong = run(WHERE, clean_env(PYTHONPATH=str(target), H5TILE_LIBRARY=str(scratch / "nope.so")), scratch)
    assert wrong.returncode != 0 and "H5TILE_LIBRARY" in wrong.stderr and "nope.so" in wrong.stderr
    chosen = run(WHERE, clean_env(PYTHONPATH=str(target), H5TILE_LIBRARY=library), scratch)
    assert chosen.returncode == 0 and chosen.stdout.split()[1] == library


def test_used_in_place_the_package_finds_its_own_prefix(scratch: Path, prefix: Path) -> None:
    found = run(WHERE, clean_env(PYTHONPATH=str(prefix / "share" / "h5tile" / "python")), scratch)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.split()[1]).resolve() == (prefix / "lib" / "libh5tile.so.0").resolve()
