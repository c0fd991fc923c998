#!/usr/bin/env python3
"""Turns one `parcrypt-lab --output DIR` run into a Markdown report with plots.

    python3 scripts/report.py DIR [--lab PATH]

Draws the plots into DIR (scripts/plot_results.py), then runs `parcrypt-lab --report DIR`,
which writes DIR/README.md: the machine, every seed's figure next to ours, each scenario's
tables and notes, and the plots. PATH defaults to target/release/parcrypt-lab of this
checkout, then to `parcrypt-lab` on the PATH (build it with
`cargo build --release -p parcrypt-lab`). `--parcrypt PATH` is the old name of `--lab`.

Requires matplotlib for the plots: `pip install matplotlib` (without it the script stops
with a one-line message before doing anything).
"""

import os
import shutil
import subprocess
import sys

try:
    import matplotlib  # noqa: F401  (the plots need it; checked before anything runs)
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("report.py: matplotlib is missing: pip install matplotlib")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import plot_results  # noqa: E402  (the sibling script)


def lab_binary(arguments):
    for flag in ("--lab", "--parcrypt"):
        if flag in arguments:
            index = arguments.index(flag)
            if index + 1 >= len(arguments):
                sys.exit(f"report.py: {flag} needs a path")
            return arguments[index + 1]
    built = os.path.join(HERE, "..", "target", "release", "parcrypt-lab")
    if os.path.exists(built):
        return built
    found = shutil.which("parcrypt-lab")
    if found:
        return found
    sys.exit("report.py: no parcrypt-lab binary: build it (cargo build --release -p parcrypt-lab) or pass --lab PATH")


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if arguments else 2
    folder = arguments[0]
    status = plot_results.main([folder])
    if status != 0:
        return status
    completed = subprocess.run([lab_binary(arguments[1:]), "--report", folder], stdout=subprocess.DEVNULL)
    if completed.returncode != 0:
        return completed.returncode
    print(f"wrote {os.path.join(folder, 'README.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
