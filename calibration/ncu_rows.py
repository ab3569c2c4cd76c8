"""Turns Nsight Compute's CSV (`ncu --csv --metrics ...`, one launch per row of a program's test)
into the project's rows, so that `sim validate` reads the counters like any measurement:

    python3 ncu_rows.py FILE TEST [--prefixed]

FILE holds the program's own rows (`test,param,value,unit`, as cluster_ncu.sh's output follows
them) and then ncu's CSV; the k-th launch ncu reports is labelled with the k-th row of TEST in
FILE. With --prefixed, every line of FILE starts with two fields naming one run (as
cutlass_gemm.sh writes `binary,size,` before each line of its ncu runs): each run is read as a
FILE of its own. Prints `ncu_<metric>,<label>,<value>,<unit>` rows with a header, the metric's
name kept (`ncu_lts__t_bytes.sum`), numbers without thousands separators.
"""
import csv
import sys


def rows(lines, test):
    """The rows of one FILE's lines (comments and blank lines already gone)."""
    labels, launches = [], {}
    ncu_at = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    for row in csv.reader(lines[:ncu_at]):
        if row and row[0] == test:
            labels.append(row[1])
    for r in csv.DictReader(lines[ncu_at:]):
        launches.setdefault(int(r["ID"]), []).append(
            (r["Metric Name"], r["Metric Value"].replace(",", ""), r["Metric Unit"]))
    if len(launches) != len(labels):
        sys.exit(f"{len(launches)} launches in ncu's rows, {len(labels)} `{test}` rows")
    for (_, metrics), label in zip(sorted(launches.items()), labels):
        for name, value, unit in metrics:
            yield f"ncu_{name},{label},{value},{unit}"


def main(path, test, prefixed=None):
    with open(path) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    runs = {}
    if prefixed == "--prefixed":
        for l in lines:
            a, b, rest = l.split(",", 2)
            if not rest.startswith("=="):  # ncu's notes (==PROF==, ==WARNING==)
                runs.setdefault((a, b), []).append(rest)
    else:
        runs[None] = lines
    print("test,param,value,unit")
    for run in runs.values():
        for r in rows(run, test):
            print(r)


if __name__ == "__main__":
    main(*sys.argv[1:4])
