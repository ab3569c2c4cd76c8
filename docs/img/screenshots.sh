#!/bin/sh
# Regenerates the screenshots of `sim report` in docs/stalls.md and of `sim explore` in
# docs/cli.md from the current code, with
# Debian's chromium (as tests/traces.rs). Run from the repository root; SIM names the binary
# (default `sim`, as `cargo install --path sim` puts it on PATH).
set -eu
sim=${SIM:-sim}
mkdir -p traces/docs
"$sim" run scenarios/fa3_pingpong.ron --trace traces/docs/fa3_report.json > /dev/null
"$sim" report traces/docs/fa3_report.json -o traces/docs/fa3_report.html
"$sim" explore -o traces/docs/explore.html
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
shot() {
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$profile" --window-size="$1" --screenshot="$2" \
        "file://$PWD/traces/docs/$3" 2> /dev/null
}
# The report: the first screen of a laptop, then the whole page.
shot 1280,800 docs/img/fa3_diagnosis.png fa3_report.html
shot 1300,2530 docs/img/fa3_report.png fa3_report.html
# The explorer's whole page, on its first values.
shot 1280,1160 docs/img/explore.png explore.html
