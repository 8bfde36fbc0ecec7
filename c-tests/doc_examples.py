"""Runs every example of README.md and docs/*.md as a reader would: each fenced block tagged
sh, c, cmake, fortran or python, in the order of the pages (README.md first), in one shared
folder with its own $HOME, so a page's later examples see what its earlier ones made.

A block may be preceded by a marker, an HTML comment the rendered page does not show:

    <!-- example: DIRECTIVE; DIRECTIVE ... -->

    skip: REASON          not run; the reason is required and printed
    file PATH             the block is the file PATH (relative to the shared folder), written
                          for later examples to use; a C program with main is also run
    in DIR                run from DIR: "repo" is the clone (e.g. `make install`), anything
                          else a folder of the shared one
    given FILE:DATASET    before the block, FILE is written by h5tile with a 64x48 float64
                          DATASET on 4 ranks (doc_examples/fixture.c)
    harness NAME          a fragment (C or Fortran): pasted into doc_examples/NAME in place
                          of its EXAMPLE line, which gives the declarations it assumes (its
                          #include lines go to the top of the file)
    replace "OLD" "NEW" (WHY)   OLD in the block becomes NEW, for what must not run as
                          written (e.g. a path under /etc); WHY is required
    ranks N               MPI ranks for a C or Fortran program (default 4); a Python block
                          runs under mpirun only when given

Unmarked: sh and python run as they are; a C or Fortran block must be a whole program
(compiled with the MPI's wrapper against PREFIX through pkg-config or the Fortran module, run
under mpirun). A cmake block must be a `file` (a later sh block builds it). Untagged blocks
are listings and not examples; any other tag fails, so no example goes unrun unnoticed.

Usage: doc_examples.py REPO PREFIX SCRATCH MPICC MPIFC MPIRUN
The programs' environment names `mpicc`, `mpif90` and `mpirun` for the MPI under test, puts
PREFIX/bin first on PATH and sets PREFIX=$HOME/opt/h5tile, as the docs' install line names it.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

LANGUAGES = {"sh", "c", "cmake", "fortran", "python"}
HERE = Path(__file__).resolve().parent / "doc_examples"


class Example:
    def __init__(self, page, line, lang, text, marker):
        self.page, self.line, self.lang, self.text = page, line, lang, text
        self.skip = None
        self.file = None
        self.where = None
        self.given = []
        self.harness = None
        self.replace = []
        self.ranks = 4
        self.ranks_given = False
        # Directives are split at a ';' that a directive's name follows (a replacement may
        # hold one).
        directives = re.split(r";\s*(?=(?:skip:|file |in |given |harness |replace |ranks ))",
                              marker)
        for directive in filter(None, (d.strip() for d in directives)):
            word, _, rest = directive.partition(" ")
            if directive.startswith("skip:"):
                self.skip = directive[len("skip:"):].strip()
                if not self.skip:
                    self.fail("a skip marker needs its reason")
            elif word == "file":
                self.file = rest.strip()
            elif word == "in":
                self.where = rest.strip()
            elif word == "given":
                self.given += rest.split()
            elif word == "harness":
                self.harness = rest.strip()
            elif word == "replace":
                quoted = re.fullmatch(r'"([^"]*)" "([^"]*)"\s*(.*)', rest)
                if not quoted:
                    self.fail(f'replace needs "OLD" "NEW" (WHY): {rest!r}')
                old, new, why = quoted.groups()
                if not why:
                    self.fail(f"replace {old!r}: say why beside it")
                if old not in self.text:
                    self.fail(f"replace: {old!r} is not in the example")
                self.replace.append((old, new))
            elif word == "ranks":
                self.ranks = int(rest)
                self.ranks_given = True
            else:
                self.fail(f"unknown marker directive {directive!r}")

    def fail(self, why):
        raise SystemExit(f"{self.name()}: {why}")

    def name(self):
        return f"{self.page}:{self.line} ({self.lang})"

    def source(self):
        text = self.text
        for old, new in self.replace:
            text = text.replace(old, new)
        if self.harness:
            frame = (HERE / self.harness).read_text()
            marker = re.search(r"^[ \t]*(/\* EXAMPLE \*/|! EXAMPLE|# EXAMPLE)[ \t]*$", frame,
                               re.M)
            if not marker:
                self.fail(f"harness {self.harness} has no EXAMPLE line")
            # A fragment's #include lines belong at the top of the file, not in main.
            includes = "".join(re.findall(r"^#include .*\n", text, re.M))
            text = re.sub(r"^#include .*\n", "", text, flags=re.M)
            text = includes + frame[: marker.start()] + text + frame[marker.end():]
        return text


def examples_of(page, root):
    """The tagged fenced blocks of `page`, with the marker on the line before each."""
    lines = (root / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        lang = fence.group(1)
        marker = re.match(r"^<!-- example: (.*) -->$", lines[i - 1]) if i else None
        if lang:
            if lang not in LANGUAGES:
                raise SystemExit(f"{page}:{i + 1}: fenced block tagged '{lang}': run it here "
                                 f"(doc_examples.py) or leave it untagged if it is a listing")
            text = "\n".join(lines[i + 1: end]) + "\n"
            found.append(Example(page, i + 1, lang, text, marker.group(1) if marker else ""))
        elif marker:
            raise SystemExit(f"{page}:{i + 1}: a marker before an untagged block")
        i = end + 1
    return found


class Runner:
    def __init__(self, repo, prefix, scratch, mpicc, mpifc, mpirun):
        self.repo, self.prefix, self.scratch = repo, prefix, scratch
        self.mpirun = mpirun
        if scratch.exists():
            shutil.rmtree(scratch)
        self.work = scratch / "work"
        self.home = scratch / "home"
        tools = scratch / "tools"
        for d in (self.work, self.home, tools):
            d.mkdir(parents=True)
        # The names the docs use, for the MPI under test (Debian's plain names may be the other):
        # scripts, not links, since MPICH's launcher finds its proxy beside the name it is run by.
        for name, target in (("mpicc", mpicc), ("mpif90", mpifc), ("mpirun", mpirun)):
            target = shutil.which(target) or target
            (tools / name).write_text(f'#!/bin/sh\nexec {shlex.quote(target)} "$@"\n')
            (tools / name).chmod(0o755)
        (tools / "hdf5-reader").write_text(
            f"#!{sys.executable}\n" + (HERE / "hdf5_reader.py").read_text())
        (tools / "hdf5-reader").chmod(0o755)
        self.env = dict(os.environ, HOME=str(self.home),
                        PATH=f"{tools}:{prefix / 'bin'}:{os.environ['PATH']}",
                        PREFIX=str(self.home / "opt" / "h5tile"),
                        PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
        self.env.pop("CMAKE_PREFIX_PATH", None)
        # Python finds the installed package, and mpi4py's wheel runs on libh5tile's MPI (the
        # wheel asks for MPICH as libmpi.so.12, which Debian calls libmpich.so.12).
        self.env["PYTHONPATH"] = str(prefix / "share" / "h5tile" / "python")
        if os.environ.get("MPI") == "mpich":
            found = re.search(r"libmpich\.so\.12 .*=> (\S+)",
                              subprocess.run(["ldconfig", "-p"], capture_output=True,
                                             text=True).stdout)
            if found:
                (tools / "libmpi.so.12").symlink_to(found.group(1))
            self.env["MPI4PY_LIBMPI"] = "libmpich.so.12"
            self.env["LD_LIBRARY_PATH"] = f"{tools}:{os.environ.get('LD_LIBRARY_PATH', '')}"
        else:
            self.env["MPI4PY_LIBMPI"] = "libmpi.so.40"
        # The Rust toolchain `make install` builds with stays the one in the real home.
        for var, default in (("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")):
            self.env.setdefault(var, os.environ.get(var, str(Path.home() / default)))
        self.fixture = None
        self.count = 0

    def run(self, args, cwd, what):
        done = subprocess.run(args, cwd=cwd, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            sys.stdout.write(done.stdout)
            raise SystemExit(f"{what}: exit status {done.returncode}")
        return done.stdout

    def give(self, spec, ex):
        path, _, dataset = spec.partition(":")
        if not dataset:
            ex.fail(f"given {spec}: FILE:DATASET")
        if self.fixture is None:
            self.fixture = self.scratch / "fixture"
            self.compile_c(HERE / "fixture.c", self.fixture, "the fixture writer")
        (self.work / path).parent.mkdir(parents=True, exist_ok=True)
        self.run([self.mpirun, "-n", "4", self.fixture, path, dataset], self.work,
                 f"{ex.name()}: given {spec}")

    def compile_c(self, source, out, what):
        flags = self.run(["pkg-config", "--cflags", "--libs", "h5tile"], self.work, what)
        self.run(["mpicc", "-std=c11", "-Wall", "-Werror", str(source), "-o", str(out),
                  *shlex.split(flags)], self.work, f"{what}: compiling")

    def example(self, ex):
        self.count += 1
        if ex.skip:
            print(f"doc example {ex.name()}: skipped: {ex.skip}")
            return "skipped"
        for spec in ex.given:
            self.give(spec, ex)
        cwd = self.repo if ex.where == "repo" else self.work / (ex.where or ".")
        cwd.mkdir(parents=True, exist_ok=True)
        text = ex.source()
        if ex.file:
            (self.work / ex.file).parent.mkdir(parents=True, exist_ok=True)
            (self.work / ex.file).write_text(text)
        program = self.scratch / f"example{self.count}"
        if ex.lang == "sh":
            self.run(["bash", "-euo", "pipefail", "-c", text], cwd, ex.name())
        elif ex.lang == "python":
            launch = [self.mpirun, "-n", str(ex.ranks)] if ex.ranks_given else []
            self.run([*launch, sys.executable, "-c", text], cwd, ex.name())
        elif ex.lang == "cmake":
            if not ex.file:
                ex.fail("a cmake block is a file (marker: file DIR/CMakeLists.txt), built by a "
                        "later sh block")
            return "file"
        elif ex.lang == "c":
            if "int main(" not in text:
                if ex.file:
                    return "file"
                ex.fail("a C fragment needs a harness (marker: harness NAME.c)")
            source = program.with_suffix(".c")
            source.write_text(text)
            self.compile_c(source, program, ex.name())
            self.run([self.mpirun, "-n", str(ex.ranks), program], cwd, ex.name())
        elif ex.lang == "fortran":
            if not re.search(r"^\s*program\s", text, re.M | re.I):
                if ex.file:
                    return "file"
                ex.fail("a Fortran fragment needs a harness (marker: harness NAME.f90)")
            source = program.with_suffix(".f90")
            source.write_text(text)
            module = self.scratch / f"module{self.count}"
            module.mkdir()
            lib = self.prefix / "lib"
            self.run(["mpif90", "-J", str(module), str(self.prefix / "include" / "h5tile.f90"),
                      str(source), "-o", str(program), f"-L{lib}", "-lh5tile",
                      f"-Wl,-rpath,{lib}"], self.work, f"{ex.name()}: compiling")
            self.run([self.mpirun, "-n", str(ex.ranks), program], cwd, ex.name())
        print(f"doc example {ex.name()}: ok")
        return "ok"


def main():
    repo, prefix, scratch = (Path(a).resolve() for a in sys.argv[1:4])
    runner = Runner(repo, prefix, scratch, *sys.argv[4:7])
    pages = ["README.md"] + sorted(str(p.relative_to(repo)) for p in (repo / "docs").glob("*.md"))
    examples = [ex for page in pages for ex in examples_of(page, repo)]
    outcome = [runner.example(ex) for ex in examples]
    ran, skipped = outcome.count("ok"), outcome.count("skipped")
    print(f"doc_examples: {ran} passed, 0 failed, {skipped} skipped "
          f"({outcome.count('file')} kept as files for later examples)")
    if ran == 0:
        raise SystemExit("doc_examples: no example ran")


if __name__ == "__main__":
    main()
