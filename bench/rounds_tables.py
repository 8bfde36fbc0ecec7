"""The tables of the sections measured in rounds, each with its targets: a table prints
its rows and appends (what, met, value) to `checks`; most return what suite.json keeps of
the section."""

from measure import Bench
from settings import (BATCHED_KINDS, BATCHED_TARGET, BATCHED_TARGETS, CHECKPOINT_LAYOUTS, COMPRESSIONS, GIB, MIB,
                      NOSYNC_TURNS, READ_PAIRS, ZSTD1)


class RoundsTables(Bench):
    def report_throughput(self, rows, checks):
        """Each contender's throughput against h5py's and POSIX's (the h5tile rows with the
        h5tile section)."""

        def line(label, name, against=()):
            rate = self.rate(name)
            ratios = {b: rate / self.rate(b) for b in against}
            rows.append((label, rate, ratios))
            return ratios

        print(f"{'':34}{'GiB/s':>8}{'x h5py':>9}{'x POSIX':>9}   target")
        for kind in ("write", "read"):
            base = (f"{kind} h5py", f"{kind} POSIX")
            line(f"{kind} POSIX (dd)", f"{kind} POSIX")
            line(f"{kind} h5py, 1 process", f"{kind} h5py")
            if kind == "write":
                line("write h5py without fsync", "write h5py without fsync")
            if not self.wants("h5tile"):
                continue
            for r in self.ranks:
                ratios = line(f"{kind} h5tile, {r} rank{'s' if r > 1 else ''}", f"{kind} h5tile {r} ranks", base)
                checks.append((f"{kind} h5tile {r} ranks >= 1.0x h5py", ratios[base[0]] >= 1.0, ratios[base[0]]))
                checks.append((f"{kind} h5tile {r} ranks >= 0.8x POSIX", ratios[base[1]] >= 0.8, ratios[base[1]]))
        for label, rate, ratios in rows:
            h = next((f"{v:9.2f}" for k, v in ratios.items() if "h5py" in k), "")
            p = next((f"{v:9.2f}" for k, v in ratios.items() if "POSIX" in k), "")
            target = ">= 1.0 / >= 0.8" if ratios else ""
            print(f"{label:34}{rate:8.2f}{h:>9}{p:>9}   {target}")

    def report_verify(self, checks):
        """Checked reads against H5TILE_READ_NO_VERIFY, in one process and launched apart."""
        pairs = READ_PAIRS * self.rounds
        print(f"\n{'checking checksums on read':34}{'GiB/s':>8}{'x no check':>12}{'launched':>10}   target "
              f"(in one process, medians of {pairs} pairs)")
        verify = {}
        for r in self.ranks:
            checked = self.rate(f"read pairs {r} ranks")
            unchecked = self.rate(f"read pairs NO_VERIFY {r} ranks")
            ratio = checked / unchecked
            launched = self.rate(f"read h5tile {r} ranks") / self.rate(f"read h5tile NO_VERIFY {r} ranks")
            verify[f"{r} ranks"] = {"GiB_s": checked, "GiB_s_no_verify": unchecked, "ratio": ratio,
                                    "ratio_launched": launched}
            checks.append((f"checked read, {r} ranks, >= 0.9x H5TILE_READ_NO_VERIFY, in one process ({ratio:.2f}x; "
                           f"launched {launched:.2f}x)", ratio >= 0.9, ratio))
            print(f"{f'read, {r} rank' + ('s' if r > 1 else ''):34}{checked:8.2f}{ratio:12.2f}{launched:10.2f}"
                  f"   >= 0.90")
        return verify

    def report_layouts(self, checks):
        """The VDS layout's checked read against the single file's, the same data read in one
        process taking turns, and (launched, as legate's is) against legate.io.hdf5 on CPU."""
        print(f"\n{'VDS layout against one file':34}{'GiB/s':>8}{'x single':>10}{'x legate':>10}   target "
              f"(checked; in one process, medians of {READ_PAIRS * self.rounds} pairs)")
        legate = None if self.legate_missing or not self.wants("python") else self.rate("read legate")
        out = {}
        for r in self.ranks:
            vds, single = self.rate(f"read layouts vds {r} ranks"), self.rate(f"read layouts single {r} ranks")
            sums = {run["sum"] for name in (f"read layouts vds {r} ranks", f"read layouts single {r} ranks")
                    for run in self.runs[name]}
            assert len(sums) == 1, f"the two layouts read back different data: {sums}"
            ratio = vds / single
            out[f"{r} ranks"] = {"GiB_s_vds": vds, "GiB_s_single": single, "ratio": ratio}
            checks.append((f"checked read of the VDS layout, {r} ranks, >= 0.95x the single file's ({ratio:.2f}x)",
                           ratio >= 0.95, ratio))
            x_legate = ""
            if legate:
                launched = self.rate(f"read h5tile {r} ranks") / legate
                out[f"{r} ranks"]["x_legate"] = launched
                checks.append((f"read h5tile (VDS), {r} ranks, >= 1.2x legate.io.hdf5 on CPU ({launched:.2f}x)",
                               launched >= 1.2, launched))
                x_legate = f"{launched:10.2f}"
            print(f"{f'read, {r} rank' + ('s' if r > 1 else ''):34}{vds:8.2f}{ratio:10.2f}{x_legate:>10}"
                  f"   >= 0.95{' / >= 1.2' if legate else ''}")
        if not legate:
            why = self.legate_missing or "the python section did not run"
            print(f"(x legate: not measured: {why})")
        return out

    def report_subfiles(self, rows, checks):
        """The subfiled layout against the per-rank files (VDS) and h5py."""
        subfiles = {}
        if self.has_subfiles:
            print(f"\n{'subfiled layout (one subfile a node)':34}{'GiB/s':>8}{'x VDS':>9}{'x h5py':>9}"
                  f"{'x h5py':>9}   target")
            print(f"{'':34}{'':>8}{'(ranks)':>9}{'':>9}{'no fsync':>9}")
            for r in self.ranks:
                rr = f"{r} rank{'s' if r > 1 else ''}"
                for label, name, vds, target in (
                        (f"write subfiles, {rr}", f"write subfiles {r} ranks", f"write h5tile {r} ranks", "vds"),
                        (f"write subfiles NO_SYNC, {rr}", f"write subfiles NO_SYNC {r} ranks",
                         f"write h5tile {r} ranks", "nosync"),
                        (f"read subfiles, {rr}", f"read subfiles {r} ranks", f"read h5tile {r} ranks", "vds"),
                        (f"(write VDS NO_SYNC, {rr})", f"write VDS NO_SYNC {r} ranks", f"write h5tile {r} ranks",
                         None)):
                    rate = self.rate(name)
                    x_vds = rate / self.rate(vds)
                    h5 = "read h5py" if name.startswith("read") else "write h5py"
                    x_h5py = rate / self.rate(h5)
                    x_nosync = rate / self.rate("write h5py without fsync") if name.startswith("write") else None
                    rows.append((label, rate, {}))
                    subfiles[name] = {"GiB_s": rate, "x_vds": x_vds, "x_h5py": x_h5py, "x_h5py_no_fsync": x_nosync}
                    if target == "vds":
                        checks.append((f"{name} >= 0.95x VDS (per-rank files) ({x_vds:.2f}x)", x_vds >= 0.95, x_vds))
                        goal = ">= 0.95 x VDS"
                    elif target is None:
                        goal = "(context: x VDS is against VDS with fsync)"
                    else:
                        checks.append((f"{name} >= 0.9x h5py without fsync ({x_nosync:.2f}x)", x_nosync >= 0.9,
                                       x_nosync))
                        goal = ">= 0.9 x h5py no fsync"
                    nosync_col = f"{x_nosync:9.2f}" if x_nosync is not None else ""
                    print(f"{label:34}{rate:8.2f}{x_vds:9.2f}{x_h5py:9.2f}{nosync_col:>9}   {goal}")
            for what, f in self.files.items():
                if what.endswith("ranks"):
                    checks.append((f"{what}: files per dataset {f['on_disk']} == groups + 1 "
                                   f"({f['groups']} + 1)", f["on_disk"] == f["groups"] + 1, f["on_disk"]))
        return subfiles

    def report_nosync(self, checks):
        """Unsynced writes against pwrite of the same bytes by the same ranks (a new file
        each, no fsync): page allocation makes these jumpy here, so the fastest round is
        printed beside the median, and the target is on the fastest."""
        print(f"\n{'unsynced writes (H5TILE_NO_SYNC)':34}{'GiB/s':>8}{'fastest':>9}{'x pwrite':>10}"
              f"{'(median)':>10}   target (fastest of {self.rounds * NOSYNC_TURNS})")
        nosync = {}
        for r in self.ranks:
            rr = f"{r} rank{'s' if r > 1 else ''}"
            base = f"write pwrite {r} ranks"
            print(f"{'pwrite, ' + rr:34}{self.rate(base):8.2f}{self.fastest(base):9.2f}")
            for layout in ("VDS", "subfiles"):
                name = f"write {layout} NO_SYNC {r} ranks"
                x_fast = self.fastest(name) / self.fastest(base)
                x_median = self.rate(name) / self.rate(base)
                nosync[name] = {"GiB_s": self.rate(name), "fastest_GiB_s": self.fastest(name), "x_pwrite": x_fast,
                                "x_pwrite_median": x_median}
                checks.append((f"{name} >= 0.8x pwrite, fastest rounds ({x_fast:.2f}x)", x_fast >= 0.8, x_fast))
                print(f"{layout + ' NO_SYNC, ' + rr:34}{self.rate(name):8.2f}{self.fastest(name):9.2f}"
                      f"{x_fast:10.2f}{x_median:10.2f}   >= 0.8")
        return nosync

    def report_checkpoint(self, checks):
        """Checkpoints of many fields against one field of the same bytes, in each layout. The
        large pair are durable writes of 1 GiB, which page allocation makes jumpy here: the
        fastest round is printed beside the median, and their target is on the fastest (as
        for the unsynced writes); the small pair's is on the median."""
        r = self.checkpoint_ranks
        print(f"\n{'checkpoints, ' + str(r) + ' ranks':40}{'seconds':>8}{'x one':>9}{'fastest':>9}{'x one':>7}"
              f"   target")
        out = {}
        for layout in CHECKPOINT_LAYOUTS:
            one, small = f"checkpoint {layout} one field", f"checkpoint {layout} small one field"
            print(f"{layout + ': one field of ' + f'{self.bytes / GIB:.2f} GiB':40}{self.median(one):8.3f}"
                  f"{'':9}{self.least(one):9.3f}")
            print(f"{layout + ': one field of 64 KiB':40}{self.median(small):8.3f}")
            rows = [("32 fields of 1/32 the bytes", f"checkpoint {layout} 32 fields", one, 1.2, True),
                    ("32 fields of 64 KiB", f"checkpoint {layout} small 32 fields", small, 3.0, False)]
            if layout == "vds":
                rows.append(("32 h5tile_writes of 64 KiB", "checkpoint vds small 32 writes", small, None, False))
            for label, name, base, target, on_fastest in rows:
                x = self.median(name) / self.median(base)
                x_fast = self.least(name) / self.least(base)
                out[name] = {"seconds": self.median(name), "x_one_field": x, "fastest_seconds": self.least(name),
                             "fastest_x_one_field": x_fast}
                fast = f"{self.least(name):9.3f}{x_fast:7.2f}" if on_fastest else ""
                if target:
                    judged, how = (x_fast, "fastest rounds") if on_fastest else (x, "medians")
                    checks.append((f"{layout}: {label}: <= {target}x one field, {how} ({judged:.2f}x)",
                                   judged <= target, judged))
                goal = (f"<= {target}" + (" (fastest)" if on_fastest else "")) if target else "(before checkpoints)"
                print(f"{layout + ': ' + label:40}{self.median(name):8.3f}{x:9.2f}{fast:16}   {goal}")
        return out

    def report_compression(self, checks):
        """Each codec against the uncompressed write and read of the same smooth field
        (medians), its size on disk, and h5tile's zstd:1 + shuffle against h5py's. The writes
        are durable writes of 1 GiB, which page allocation makes jumpy here: the fastest round
        is printed beside the median, and the write targets are on the fastest (as for the
        unsynced writes and the large checkpoints); the read target is on the medians."""
        r = self.compression_ranks
        none_w, none_r = self.median("compress write none"), self.median("compress read none")
        none_fast = self.least("compress write none")
        print(f"\ncompressed tiles, {r} ranks, smooth field{'':>4}{'write s':>9}{'x none':>8}{'fastest':>9}"
              f"{'x none':>8}{'read s':>8}{'x none':>8}{'MiB':>8}{'ratio':>7}")
        out = {}
        for label in COMPRESSIONS:
            w, rd = self.median(f"compress write {label}"), self.median(f"compress read {label}")
            fast = self.least(f"compress write {label}")
            size = self.stored[label]
            out[label] = {"write_s": w, "write_x_none": w / none_w, "fastest_write_s": fast,
                          "fastest_write_x_none": fast / none_fast, "read_s": rd,
                          "read_rate_x_none": none_r / rd, "bytes_on_disk": size, "ratio": self.bytes / size}
            print(f"{label:40}{w:9.3f}{w / none_w:8.2f}{fast:9.3f}{fast / none_fast:8.2f}{rd:8.3f}"
                  f"{none_r / rd:8.2f}{size / MIB:8.0f}{self.bytes / size:7.2f}")
        h5py_name = f"compress write h5py {ZSTD1}"
        h5py_w, h5py_fast, h5py_size = self.median(h5py_name), self.least(h5py_name), self.stored[f"h5py {ZSTD1}"]
        print(f"{'h5py + hdf5plugin ' + ZSTD1 + ', 1 process':40}{h5py_w:9.3f}{h5py_w / none_w:8.2f}"
              f"{h5py_fast:9.3f}{h5py_fast / none_fast:8.2f}{'':>16}{h5py_size / MIB:8.0f}"
              f"{self.bytes / h5py_size:7.2f}")
        z = out[ZSTD1]
        x_fast = z["fastest_write_x_none"]
        checks.append((f"{ZSTD1} write <= 1.0x the uncompressed durable write, fastest rounds ({x_fast:.2f}x; "
                       f"medians {z['write_x_none']:.2f}x)", x_fast <= 1.0, x_fast))
        checks.append((f"{ZSTD1} >= 2x smaller ({z['ratio']:.2f}x)", z["ratio"] >= 2.0, z["ratio"]))
        checks.append((f"{ZSTD1} read from the page cache >= 0.7x uncompressed ({z['read_rate_x_none']:.2f}x)",
                       z["read_rate_x_none"] >= 0.7, z["read_rate_x_none"]))
        faster, faster_median = h5py_fast / z["fastest_write_s"], h5py_w / z["write_s"]
        out["h5py"] = {"write_s": h5py_w, "fastest_write_s": h5py_fast, "bytes_on_disk": h5py_size,
                       "h5tile_x_h5py": faster, "h5tile_x_h5py_median": faster_median}
        checks.append((f"{ZSTD1} write >= 3x faster than h5py + hdf5plugin.Zstd, fastest rounds ({faster:.2f}x; "
                       f"medians {faster_median:.2f}x)", faster >= 3.0, faster))
        if self.cold_missing:
            print(f"reads with the page cache dropped: not measured ({self.cold_missing})")
            out["cold"] = {"skipped": self.cold_missing}
        else:
            cn, cz = self.median("compress cold read none"), self.median(f"compress cold read {ZSTD1}")
            out["cold"] = {"none_s": cn, "zstd_s": cz, "zstd_x_none": cn / cz}
            print(f"{'cold read (page cache dropped): none':40}{'':>17}{cn:8.3f}")
            print(f"{'cold read: ' + ZSTD1:40}{'':>17}{cz:8.3f}{cn / cz:8.2f}")
            checks.append((f"{ZSTD1} read with the page cache dropped faster than uncompressed ({cn / cz:.2f}x)",
                           cz < cn, cn / cz))
        sums = {run["sum"] for name in self.runs if name.startswith(("compress read", "compress cold"))
                for run in self.runs[name]}
        assert len(sums) == 1, f"the compressed files read back different data: {sums}"
        return out

    def report_python(self, checks):
        """The Python package beside the C API on the same bytes, beside h5py (one process,
        written and fsynced, as h5tile.to_file returns with the data on disk) and beside
        legate.io.hdf5 on CPU where it can be imported."""
        print(f"\n{'Python (h5tile package, mpi4py)':34}{'GiB/s':>8}{'x C API':>9}{'x h5py':>9}   target")
        python = {}
        for kind in ("write", "read"):
            for r in self.ranks:
                name = f"{kind} python {r} ranks"
                rate = self.rate(name)
                x_c, x_h5py = rate / self.rate(f"{kind} h5tile {r} ranks"), rate / self.rate(f"{kind} h5py")
                python[name] = {"GiB_s": rate, "x_c_api": x_c, "x_h5py": x_h5py}
                checks.append((f"{name} within 5% of the C API ({x_c:.2f}x)", x_c >= 0.95, x_c))
                goal = ">= 0.95 x C API"
                if r == 1:
                    checks.append((f"{name} >= 1.0x h5py, 1 process ({x_h5py:.2f}x)", x_h5py >= 1.0, x_h5py))
                    goal += ", >= 1.0 x h5py"
                label = f"h5tile.{'to_file' if kind == 'write' else 'from_file'}, {r} rank{'s' if r > 1 else ''}"
                print(f"{label:34}{rate:8.2f}{x_c:9.2f}{x_h5py:9.2f}   {goal}")
        if self.legate_missing:
            print(f"legate.io.hdf5: not measured, it cannot be imported here ({self.legate_missing})")
            python["legate"] = {"skipped": self.legate_missing}
        else:
            for kind in ("write", "read"):
                rate, ours = self.rate(f"{kind} legate"), self.rate(f"{kind} python 1 ranks")
                python[f"{kind} legate"] = {"GiB_s": rate, "h5tile_x_legate": ours / rate}
                checks.append((f"{kind} python 1 rank >= 1.0x legate.io.hdf5 on CPU ({ours / rate:.2f}x)",
                               ours >= rate, ours / rate))
                print(f"{'legate.io.hdf5 ' + kind + ', CPU':34}{rate:8.2f}{'':>9}{rate / self.rate(kind + ' h5py'):9.2f}"
                      f"   h5tile.{'to_file' if kind == 'write' else 'from_file'} (1 rank) is {ours / rate:.2f}x it")
            # The "writes >= 1.1x the best durable peer, counting Legate": Legate's to_file
            # returns without an fsync, h5tile's write and h5py's here with one.
            peer = max(self.rate("write h5py"), self.rate("write legate"))
            for r in self.ranks:
                x = self.rate(f"write h5tile {r} ranks") / peer
                python[f"write h5tile {r} ranks x best peer"] = x
                checks.append((f"write h5tile {r} ranks >= 1.1x the best peer's, h5py (fsynced) or legate.io.hdf5 "
                               f"(not synced) ({x:.2f}x)", x >= 1.1, x))
                print(f"{f'h5tile write, {r} rank' + ('s' if r > 1 else ''):34}{'':8}   {x:.2f}x the faster of h5py's "
                      f"and legate.io.hdf5's writes (>= 1.1)")
            for layout, sums in self.legate_interop.items():
                same = sums["legate_sum"] == sums["h5py_sum"]
                python[f"legate reads {layout}"] = sums
                checks.append((f"legate.io.hdf5 reads h5tile's {layout} layout (64 tiles from 2 ranks) as h5py does",
                               same, sums["legate_sum"]))
                print(f"legate.io.hdf5 reads the {layout} layout: sum {sums['legate_sum']:.17g} "
                      f"{'=' if same else '!='} h5py's {sums['h5py_sum']:.17g}")
        return python

    def report_batched(self, checks):
        """Batched reads in each chunk edge against a whole read into a buffer already touched
        (a solver's restart reads into memory it holds), at batched_ranks ranks, all summing the
        data, taking turns in one process a chunk edge: medians (the targets), and the fastest
        beside them (this VM's page allocation scatters single passes by 2x); and, launched,
        against h5py reading the same chunks in as many processes."""
        r = self.batched_ranks
        print(f"\n{f'batched reads + sum, {r} rank' + ('s' if r > 1 else ''):34}{'GiB/s':>8}{'x whole':>9}"
              f"{'fastest':>9}{'x h5py':>8}{'x legate':>10}   target (x whole: against a whole read + sum into a touched "
              f"buffer, in the same process, medians; x h5py: launched, h5py's slices in as many processes; x legate: "
              f"launched, from_file_batched in one process)")
        out = {"ranks": r}
        legate_measured = all(self.batched_label("legate", c) in self.runs for c in self.chunks)
        if not legate_measured:
            why = self.legate_missing or "the python section did not run"
            print(f"(x legate: not measured: {why})")
        for c in self.chunks:
            target = BATCHED_TARGETS.get(c, BATCHED_TARGET)
            whole_name = self.batched_pairs_label("whole", c)
            whole = self.median(whole_name, "seconds_with_sum")
            whole_least = self.least(whole_name, "seconds_with_sum")
            h5py_name = self.batched_label("h5py", c)
            h5py = self.median(h5py_name)
            out[str(c)] = {"whole_GiB_s": self.bytes / whole / GIB, "h5py_GiB_s": self.bytes / h5py / GIB}
            print(f"{f'whole read, buffer touched ({c}x{c})':34}{self.bytes / whole / GIB:8.2f}")
            print(f"{f'h5py slices, {r} processes':34}{self.bytes / h5py / GIB:8.2f}")
            legate_name = self.batched_label("legate", c)
            legate = self.median(legate_name) if legate_measured else None
            if legate:
                out[str(c)]["legate_GiB_s"] = self.bytes / legate / GIB
                print(f"{'legate.io.hdf5 from_file_batched':34}{self.bytes / legate / GIB:8.2f}")
            for kind in BATCHED_KINDS:
                name = self.batched_pairs_label(kind, c)
                batched = self.median(name, "seconds_with_sum")
                rate, ratio = self.bytes / batched / GIB, whole / batched
                fastest = whole_least / self.least(name, "seconds_with_sum")
                launched = self.median(self.batched_label(kind, c))
                x_h5py = h5py / launched
                names = [name, whole_name, h5py_name, self.batched_label(kind, c)] + ([legate_name] if legate else [])
                sums = {run["sum"] for n in names for run in self.runs[n]}
                # Every element is a multiple of 0.5 and every partial sum far below 2^53: any
                # order of summing gives the same total.
                assert len(sums) == 1, f"{c}x{c} {kind}: the reads gave different sums: {sums}"
                out[str(c)][kind] = {"GiB_s": rate, "x_whole": ratio, "fastest_x_whole": fastest,
                                     "x_h5py": x_h5py, "target": target}
                checks.append((f"batched {c}x{c} ({kind}), {r} ranks, + sum >= {target}x a whole read + sum into a "
                               f"touched buffer ({ratio:.2f}x)", ratio >= target, ratio))
                x_legate = ""
                if legate:
                    x = legate / launched
                    out[str(c)][kind]["x_legate"] = x
                    checks.append((f"batched {c}x{c} ({kind}), {r} ranks, + sum >= 4x legate.io.hdf5's from_file_batched "
                                   f"({x:.2f}x)", x >= 4, x))
                    x_legate = f"{x:10.2f}"
                print(f"{f'{c}x{c}, {kind}':34}{rate:8.2f}{ratio:9.2f}{fastest:9.2f}{x_h5py:8.2f}{x_legate:>10}"
                      f"   >= {target:.2f}{'; >= 4 x legate' if legate else ''}")
        return out

    def report_memory(self, checks):
        """Peak resident memory per rank against the tile."""
        print(f"\n{'peak resident memory per rank':34}{'tile MiB':>10}{'peak MiB':>10}{'peak-tile':>11}   target <= 64 MiB over the tile")
        memory = {}
        sub = [f"{k} subfiles {r} ranks" for k in ("write", "read") for r in self.ranks] \
            if self.has_subfiles and self.wants("subfiles") else []
        for name in [f"write h5tile {r} ranks" for r in self.ranks] + [f"read h5tile {r} ranks" for r in self.ranks] + \
                sub + [self.batched_label(kind, c) for c in self.chunks for kind in BATCHED_KINDS]:
            tile = max(r["tile_bytes"] for r in self.runs[name]) / MIB
            peak = max(r["peak_rss_bytes"] for r in self.runs[name]) / MIB
            extra = peak - tile
            if name.startswith("batched"):
                extra = peak - 2 * tile  # the caller's buffer and the read-ahead buffer
            memory[name] = {"tile_MiB": tile, "peak_MiB": peak, "over_tile_MiB": extra}
            checks.append((f"{name}: peak {peak:.0f} MiB <= tile{'s' if name.startswith('batched') else ''} + 64 MiB", extra <= 64, extra))
            print(f"{name:34}{tile:10.0f}{peak:10.0f}{extra:11.0f}")
        h5py_peak = max(r["peak_rss_bytes"] for r in self.runs["read h5py"]) / MIB
        print(f"{'(read h5py, 1 process)':34}{self.bytes / MIB:10.0f}{h5py_peak:10.0f}{h5py_peak - self.bytes / MIB:11.0f}")
        return memory

    def report_overlap(self):
        """A write then a computation, against the two overlapped by h5tile_write_async."""
        r = self.ranks[0]
        write, work = self.median(f"write h5tile {r} ranks"), self.median("compute alone")
        serial, overlapped = self.median("write, then compute"), self.median("write_async + compute")
        best = (write + work) / max(write, work)
        overlap = {"sweeps": self.sweeps, "write_s": write, "compute_s": work, "serial_s": serial,
                   "async_s": overlapped, "speedup": serial / overlapped, "best_speedup": best}
        print(f"\nwrite_async ({r} rank{'s' if r > 1 else ''}): a write ({write:.2f} s alone) and a computation "
              f"({work:.2f} s alone) took {serial:.2f} s one after the other and {overlapped:.2f} s overlapped: "
              f"{serial / overlapped:.2f}x faster (at best {best:.2f}x)")
        return overlap
