#!/usr/bin/env python3
"""Turns one `parcrypt bench --output DIR` run into a Markdown report with plots.

    python3 scripts/report.py DIR [--parcrypt PATH]

Draws the plots into DIR (scripts/plot_results.py), then runs `parcrypt bench --report DIR`,
which writes DIR/README.md: the machine, every seed's figure next to ours, each scenario's
tables and notes, and the plots. PATH defaults to target/release/parcrypt of this checkout,
then to `parcrypt` on the PATH.

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


def parcrypt_binary(arguments):
    if "--parcrypt" in arguments:
        index = arguments.index("--parcrypt")
        return arguments[index + 1]
    built = os.path.join(HERE, "..", "target", "release", "parcrypt")
    if os.path.exists(built):
        return built
    found = shutil.which("parcrypt")
    if found:
        return found
    sys.exit("report.py: no parcrypt binary: build it (cargo build --release) or pass --parcrypt PATH")


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if arguments else 2
    folder = arguments[0]
    status = plot_results.main([folder])
    if status != 0:
        return status
    completed = subprocess.run([parcrypt_binary(arguments[1:]), "bench", "--report", folder], stdout=subprocess.DEVNULL)
    if completed.returncode != 0:
        return completed.returncode
    print(f"wrote {os.path.join(folder, 'README.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
