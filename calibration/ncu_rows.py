"""Turns Nsight Compute's CSV (`ncu --csv --metrics ...`, one launch per row of a program's test)
into the project's rows, so that `sim validate` reads the counters like any measurement:

    python3 ncu_rows.py FILE TEST

FILE holds the program's own rows (`test,param,value,unit`, as cluster_ncu.sh's output follows
them) and then ncu's CSV; the k-th launch ncu reports is labelled with the k-th row of TEST in
FILE. Prints `ncu_<metric>,<label>,<value>,<unit>` rows with a header, the metric's dots and
underscores kept (`ncu_lts__t_bytes.sum`), numbers without thousands separators.
"""
import csv
import sys


def main(path, test):
    labels, launches = [], {}
    with open(path) as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    ncu_at = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    for row in csv.reader(lines[:ncu_at]):
        if row[0] == test:
            labels.append(row[1])
    for r in csv.DictReader(lines[ncu_at:]):
        launches.setdefault(int(r["ID"]), []).append(
            (r["Metric Name"], r["Metric Value"].replace(",", ""), r["Metric Unit"]))
    if len(launches) != len(labels):
        sys.exit(f"{len(launches)} launches in ncu's rows, {len(labels)} `{test}` rows")
    print("test,param,value,unit")
    for (launch, metrics), label in zip(sorted(launches.items()), labels):
        for name, value, unit in metrics:
            print(f"ncu_{name},{label},{value},{unit}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
