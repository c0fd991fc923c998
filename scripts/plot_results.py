#!/usr/bin/env python3
"""Plots of one `parcrypt-lab --output DIR` run, written as PNGs into DIR.

    python3 scripts/plot_results.py DIR

Reads DIR/results.json (or DIR/results.jsonl, for a run that was interrupted) and draws,
for the scenarios the run has:

    sweep-throughput.png  MB/s against input size, per cipher and backend
    s0-times.png          the seed's ms next to ours, per technology (log scale)
    s1-speedup.png        speedup over one thread against size, Blowfish and RC6
    s2-throughput.png     MB/s against size, encryption and decryption, seed points marked
    s2-speedup.png        speedup over one thread against size, crossover marked, seed curve
    s3-heatmap.png        MB/s relative to the best shape, per work-items per group and size
    s4-time-energy.png    time (and energy, when metered) at 1000 KB

Requires matplotlib (`pip install matplotlib`); without it the script stops with a one-line
message. Figures are drawn as recorded; nothing is recomputed but ratios of recorded medians.

How the plots read: a marker is a measured figure; a line joins two markers of one series
only where no size lies between them that the panel measured and the series did not (no line
pretends to know a size nobody measured). Each series has one legend entry. An axis is
logarithmic only where the plotted values span 10x or more; otherwise it is linear from 0,
so small differences look small. Times and speeds spanning orders of magnitude are drawn as
dots on a log axis, never as log-scale bars.
"""

import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("plot_results.py: matplotlib is missing: pip install matplotlib")

# The seed figures the plots mark (docs/SEEDS.md).
S2_SIZES = [1 << 10, 100 << 10, 1 << 20, 10 << 20, 100 << 20, 500 << 20, 1 << 30]
S2_SPEEDUP = [0.00, 0.14, 1.15, 10.9, 32.1, 36.4, 39.7]
S2_GPU_MBPS = {1 << 10: 0.10, 1 << 20: 75.0, 100 << 20: 2134.0, 1 << 30: 2580.0}
S2_CPU_MBPS = (62.0, 68.0)
S0_SEED = [
    ("C seq", 2500.9, 3089.5),
    ("OpenMP", 826.3, 1004.2),
    ("Java seq", 504.6, 704.0),
    ("Java Threads", 210.6, 212.6),
    ("ForkJoin", 203.8, 219.3),
    ("CUDA (launch only)", 0.0089, 0.0099),
]

COLOURS = {
    "seq": "#1f77b4",
    "threads": "#9467bd",
    "pool": "#2ca02c",
    "auto": "#17becf",
    "opencl": "#d62728",
    "cuda": "#ff7f0e",
    "openssl": "#7f7f7f",
}



# Plotted values spanning this factor or more get a logarithmic axis; less, a linear one.
LOG_SPAN = 10.0


def wants_log(values):
    """Whether `values` (the positive ones) span LOG_SPAN or more."""
    positive = [v for v in values if v is not None and v > 0]
    return bool(positive) and max(positive) / min(positive) >= LOG_SPAN


def value_scale(axes, values):
    """A log y axis where `values` span 10x or more, else a linear one starting at 0."""
    if wants_log(values):
        axes.set_yscale("log")
    else:
        axes.set_ylim(bottom=0)


def segments(sizes, values, panel_sizes):
    """The runs of a series that a line may join: consecutive points with no size of the
    panel between them that this series lacks."""
    order = sorted(set(panel_sizes))
    position = {size: index for index, size in enumerate(order)}
    runs, current = [], []
    for size, value in sorted(zip(sizes, values)):
        if current and position[size] != position[current[-1][0]] + 1:
            runs.append(current)
            current = []
        current.append((size, value))
    if current:
        runs.append(current)
    return runs


def plot_series(axes, sizes, values, panel_sizes, name, **style_options):
    """Markers at every measured size, lines only between adjacent measured sizes, and one
    legend entry for the series."""
    linestyle = style_options.pop("linestyle", "-")
    colour_value = style_options.pop("color", None)
    first = True
    for run in segments(sizes, values, panel_sizes):
        xs = [point[0] for point in run]
        ys = [point[1] for point in run]
        axes.plot(xs, ys, linestyle=linestyle if len(run) > 1 else "none", marker="o", markersize=4, color=colour_value, label=name if first else "_nolegend_", **style_options)
        first = False


def plot_labels(axes, records, panel_sizes, ceiling=False):
    """One MB/s series per label of `records` (the memory ceiling's dotted and grey); returns
    every value drawn, for the panel's scale."""
    plotted = []
    for name in labels_of(records):
        sizes, points = series(records, name)
        values = [p["mb_per_s"] for p in points]
        plotted += values
        if ceiling:
            plot_series(axes, sizes, values, panel_sizes, f"memory ceiling, {name}", linestyle=":", color="#bbbbbb")
        else:
            plot_series(axes, sizes, values, panel_sizes, name, linestyle=style(name), color=colour(name))
    return plotted


def figure_legend(figure, axes_list, columns=6):
    """One legend for the figure, one entry per series name across every panel."""
    legend = {}
    for axes in axes_list:
        for handle, name in zip(*axes.get_legend_handles_labels()):
            if not name.startswith("_"):
                legend.setdefault(name, handle)
    if legend:
        figure.legend(list(legend.values()), list(legend.keys()), loc="outside lower center", ncol=min(columns, len(legend)), fontsize=8)


def records_of(report, scenario):
    """The records of one scenario, in run order."""
    return [r for r in report["records"] if r["scenario"] == scenario]


def panel_row(count, width, height):
    """A figure of `count` panels side by side, each `width` x `height` inches; the axes
    come back as a row (`axes_row[0]`) even for one panel."""
    return plt.subplots(1, count, figsize=(width * count, height), squeeze=False, layout="constrained")

def load(folder):
    """The run as a dict with 'run', 'records' and 'notes'."""
    path = os.path.join(folder, "results.json")
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    report = {"run": None, "records": [], "notes": []}
    with open(os.path.join(folder, "results.jsonl")) as handle:
        for line in handle:
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                break  # a last line cut short by an interruption
            kind = item.pop("kind", None)
            if kind == "run":
                report["run"] = item
            elif kind == "record":
                report["records"].append(item)
            elif kind == "note":
                report["notes"].append(item)
    return report


def label(record):
    """The backend as the tables name it (parcrypt-lab: summary::backend_label)."""
    name = record["backend"]
    if name in ("threads", "pool", "auto") or (name == "openssl" and record["threads"] > 1):
        name = f"{name} x{record['threads']}"
    if record["timing"] == "kernel_only":
        name += " (kernel)"
    elif record.get("transfer") not in (None, "pageable"):
        name += f" ({record['transfer']})"
    return name


def colour(name):
    return COLOURS.get(name.split(" ")[0], "#000000")


def style(name):
    """Dotted for OpenSSL, dashed for kernel-only figures and one-thread pools."""
    if name.startswith("openssl"):
        return ":"
    if "(kernel)" in name or name.endswith(" x1"):
        return "--"
    return "-"


def size_text(value, _position=None):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            number = value / scale
            return f"{number:.0f} {unit}" if number == int(number) else f"{number:.1f} {unit}"
    return f"{value:.0f} B"


def size_axis(axes):
    axes.set_xscale("log", base=2)
    axes.xaxis.set_major_formatter(FuncFormatter(size_text))
    axes.tick_params(axis="x", labelrotation=30)


def series(records, name):
    """(sizes, records) of one backend label, by size."""
    chosen = sorted((r for r in records if label(r) == name), key=lambda r: r["bytes"])
    return [r["bytes"] for r in chosen], chosen


def labels_of(records):
    seen = []
    for record in records:
        name = label(record)
        if name not in seen:
            seen.append(name)
    return seen


def title_line(report):
    run = report.get("run") or {}
    return f"{run.get('cpu', '?')}, {run.get('threads', '?')} threads"


def save(figure, folder, name, written, dpi=110, title=None, report=None):
    """Writes `figure` as `name` in `folder` and closes it; with `title`, first heads it with
    the title and the run's line."""
    if title is not None:
        figure.suptitle(f"{title} - {title_line(report)}")
    path = os.path.join(folder, name)
    figure.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(figure)
    written.append(path)


def speedup_to_seq(records, name):
    """(sizes, speedups) of `name` over seq at each size both measured."""
    seq = {r["bytes"]: r["median_s"] for r in records if label(r) == "seq"}
    sizes, chosen = series(records, name)
    pairs = [(b, seq[b] / r["median_s"]) for b, r in zip(sizes, chosen) if b in seq]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def crossover(sizes, speedups):
    """The smallest size from which the speedup stays above 1, or None."""
    start = None
    for size, speedup in reversed(list(zip(sizes, speedups))):
        if speedup > 1:
            start = size
        else:
            break
    return start


def plot_sweep(report, folder, written):
    records = [r for r in records_of(report, "sweep") if r["timing"] != "file"]
    ciphers = [c for c in dict.fromkeys(r["cipher"] for r in records) if c != "memory"]
    if not ciphers:
        return
    columns = min(3, len(ciphers))
    rows = (len(ciphers) + columns - 1) // columns
    figure, axes_grid = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.8 * rows), squeeze=False, layout="constrained")
    ceiling = [r for r in records if r["cipher"] == "memory"]
    for index, cipher in enumerate(ciphers):
        axes = axes_grid[index // columns][index % columns]
        chosen = [r for r in records if r["cipher"] == cipher and r["direction"] == "encrypt"]
        if not chosen:
            chosen = [r for r in records if r["cipher"] == cipher]
        panel_sizes = [r["bytes"] for r in chosen]
        plotted = plot_labels(axes, chosen, panel_sizes)
        plotted += plot_labels(axes, ceiling, [r["bytes"] for r in ceiling], ceiling=True)
        axes.set_title(f"{cipher} {chosen[0]['direction']}")
        value_scale(axes, plotted)
        axes.set_ylabel("MB/s")
        size_axis(axes)
        axes.grid(True, which="both", alpha=0.3)
    for index in range(len(ciphers), rows * columns):
        axes_grid[index // columns][index % columns].axis("off")
    # One legend for every panel: the same backends everywhere.
    figure_legend(figure, list(axes_grid.flat))
    save(figure, folder, "sweep-throughput.png", written, dpi=90 if rows > 3 else 110, title="Sweep, in memory, end to end, MB/s (log axis only where a panel spans 10x)", report=report)


def plot_s0(report, folder, written):
    records = [r for r in records_of(report, "s0") if r["timing"] != "file"]
    if not records:
        return
    ours = []
    for name in labels_of(records):
        encrypt = [r for r in records if label(r) == name and r["direction"] == "encrypt"]
        decrypt = [r for r in records if label(r) == name and r["direction"] == "decrypt"]
        if encrypt and decrypt:
            ours.append((f"{name} (here)", encrypt[0]["mean_s"] * 1e3, decrypt[0]["mean_s"] * 1e3))
    rows = [(f"{name} (seed)", e, d) for name, e, d in S0_SEED] + ours
    figure, axes = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.5), layout="constrained")
    positions = list(range(len(rows)))
    values = [r[1] for r in rows] + [r[2] for r in rows]
    if wants_log(values):
        # Orders of magnitude apart: dots on a log axis (bar lengths would mean nothing).
        axes.scatter([r[1] for r in rows], [p - 0.12 for p in positions], label="encrypt", color="#1f77b4", marker="o")
        axes.scatter([r[2] for r in rows], [p + 0.12 for p in positions], label="decrypt", color="#ff7f0e", marker="s")
        axes.set_xscale("log")
        scale = "log scale"
    else:
        height = 0.38
        axes.barh([p - height / 2 for p in positions], [r[1] for r in rows], height, label="encrypt", color="#1f77b4")
        axes.barh([p + height / 2 for p in positions], [r[2] for r in rows], height, label="decrypt", color="#ff7f0e")
        scale = "linear scale"
    axes.set_yticks(positions)
    axes.set_yticklabels([r[0] for r in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"ms for 17.9 MB (mean), {scale}; the seed's CUDA figure timed a launch only")
    axes.grid(True, axis="x", which="both", alpha=0.3)
    axes.legend()
    axes.set_title(f"S0: AES-128, seed (i5-8250U + MX150) and here - {title_line(report)}")
    save(figure, folder, "s0-times.png", written)


def plot_speedups(records, axes, title, extra_values=()):
    """Speedup over seq against size for every backend but seq; where each GPU series starts
    to win (a vertical line), or a note that it never does up to the largest size."""
    panel_sizes = [r["bytes"] for r in records]
    plotted = list(extra_values) + [1.0]
    notes = []
    for name in labels_of(records):
        if name == "seq":
            continue
        sizes, speedups = speedup_to_seq(records, name)
        if not sizes:
            continue
        plotted += speedups
        plot_series(axes, sizes, speedups, panel_sizes, name, linestyle=style(name), color=colour(name))
        if name.startswith(("pool", "threads", "auto", "openssl")):
            continue
        start = crossover(sizes, speedups)
        if start is not None:
            axes.axvline(start, color=colour(name), alpha=0.5, linestyle="-.", label=f"{name} wins from {size_text(start)}")
        else:
            notes.append(f"{name}: never faster than seq up to {size_text(max(sizes))}")
    axes.axhline(1, color="black", linewidth=0.8)
    value_scale(axes, plotted)
    if notes:
        axes.text(0.02, 0.97, "\n".join(notes), transform=axes.transAxes, fontsize=7, va="top")
    axes.set_ylabel("speedup over seq (x)")
    axes.set_title(title)
    size_axis(axes)
    axes.grid(True, which="both", alpha=0.3)


def plot_s1(report, folder, written):
    records = records_of(report, "s1")
    ciphers = list(dict.fromkeys(r["cipher"] for r in records))
    if not ciphers:
        return
    figure, axes_row = panel_row(len(ciphers), 6, 4.2)
    seed = {"bf-ecb": 24, "rc6-128-ecb": 17}
    for axes, cipher in zip(axes_row[0], ciphers):
        chosen = [r for r in records if r["cipher"] == cipher]
        plot_speedups(chosen, axes, f"{cipher} encryption", [seed[cipher]] if cipher in seed else ())
        if cipher in seed:
            axes.axhline(seed[cipher], color="#999999", linestyle="--", linewidth=0.8)
            axes.annotate(f"seed's best GPU speedup: {seed[cipher]}x (GTX 465)", (min(r["bytes"] for r in chosen), seed[cipher]), textcoords="offset points", xytext=(4, 3), fontsize=7, color="#666666")
    figure_legend(figure, list(axes_row[0]))
    save(figure, folder, "s1-speedup.png", written, title="S1: speedup over one thread", report=report)


def plot_s2(report, folder, written):
    records = records_of(report, "s2")
    if not records:
        return
    directions = [d for d in ("encrypt", "decrypt") if any(r["direction"] == d for r in records)]
    figure, axes_row = panel_row(len(directions), 6.2, 4.4)
    for axes, direction in zip(axes_row[0], directions):
        chosen = [r for r in records if r["direction"] == direction]
        panel_sizes = [r["bytes"] for r in chosen]
        plotted = plot_labels(axes, chosen, panel_sizes)
        if direction == "encrypt":
            # The seed's measured sizes only, as markers: it published no others.
            sizes = sorted(S2_GPU_MBPS)
            axes.scatter(sizes, [S2_GPU_MBPS[s] for s in sizes], marker="x", color="#999999", label="seed GPU (RX 7600)")
            axes.axhspan(*S2_CPU_MBPS, color="#cccccc", alpha=0.6, label="seed CPU (serial C++)")
            plotted += list(S2_GPU_MBPS.values()) + list(S2_CPU_MBPS)
        value_scale(axes, plotted)
        axes.set_ylabel("MB/s (10^6 B/s)")
        axes.set_title(f"AES-128-ECB {direction}ion, end to end")
        size_axis(axes)
        axes.grid(True, which="both", alpha=0.3)
    figure_legend(figure, list(axes_row[0]), columns=4)
    save(figure, folder, "s2-throughput.png", written, title="S2: throughput against input size", report=report)

    figure, axes_row = panel_row(len(directions), 6.2, 4.4)
    for axes, direction in zip(axes_row[0], directions):
        seed_values = [max(v, 0.005) for v in S2_SPEEDUP] if direction == "encrypt" else []
        plot_speedups([r for r in records if r["direction"] == direction], axes, f"AES-128-ECB {direction}ion", seed_values)
        if direction == "encrypt":
            axes.scatter(S2_SIZES, seed_values, marker="x", color="#999999", label="seed GPU / CPU (RX 7600)")
            # The seed's crossover: its GPU starts to win near 1 MB.
            axes.axvline(1 << 20, color="#999999", alpha=0.6, linestyle="--", label="seed crossover (about 1 MB)")
    figure_legend(figure, list(axes_row[0]), columns=4)
    save(figure, folder, "s2-speedup.png", written, title="S2: speedup over one thread; vertical lines: where a GPU starts to win (ours and the seed's)", report=report)


def plot_s3(report, folder, written):
    records = [r for r in records_of(report, "s3") if r.get("variant") == "sweep"]
    panels = list(dict.fromkeys((r["backend"], r["cipher"]) for r in records))
    if not panels:
        return
    figure, axes_row = panel_row(len(panels), 4.8, 4.6)
    image = None
    for axes, (backend, cipher) in zip(axes_row[0], panels):
        chosen = [r for r in records if r["backend"] == backend and r["cipher"] == cipher]
        shapes = sorted({r["threads_per_group"] for r in chosen})
        sizes = sorted({r["bytes"] for r in chosen})
        best = {s: max(r["mb_per_s"] for r in chosen if r["bytes"] == s) for s in sizes}
        grid = [[float("nan")] * len(sizes) for _ in shapes]
        for r in chosen:
            grid[shapes.index(r["threads_per_group"])][sizes.index(r["bytes"])] = r["mb_per_s"] / best[r["bytes"]]
        image = axes.imshow(grid, aspect="auto", origin="lower", cmap="viridis", vmin=0.5, vmax=1.0)
        for column, size in enumerate(sizes):
            row = max(range(len(shapes)), key=lambda i: grid[i][column] if grid[i][column] == grid[i][column] else -1)
            axes.scatter([column], [row], marker="*", color="white", s=40)
        axes.set_xticks(range(len(sizes)))
        axes.set_xticklabels([size_text(s) for s in sizes], rotation=45, fontsize=7)
        axes.set_yticks(range(len(shapes)))
        axes.set_yticklabels([str(s) for s in shapes], fontsize=7)
        axes.set_xlabel("input size")
        axes.set_ylabel("work-items per group")
        axes.set_title(f"{backend} {cipher}", fontsize=9)
    figure.colorbar(image, ax=axes_row[0].tolist(), label="MB/s relative to the best shape at that size", shrink=0.85)
    save(figure, folder, "s3-heatmap.png", written, title="S3: launch-shape sweep (star: best)", report=report)


def plot_s4(report, folder, written):
    records = records_of(report, "s4")
    if not records:
        return
    metered = [r for r in records if r.get("energy_j") is not None]
    panels = 2 if metered else 1
    figure, axes_row = panel_row(panels, 6.5, 3.6)
    names = [f"{label(r)}: {r.get('variant') or 'host memory'}" for r in records]
    axes = axes_row[0][0]
    times = [r["median_s"] * 1e3 for r in records]
    colours = [colour(label(r)) for r in records]
    if wants_log(times):
        # Orders of magnitude apart: dots on a log axis (bar lengths would mean nothing).
        axes.scatter(times, range(len(records)), color=colours)
        axes.set_xscale("log")
        scale = "log scale"
    else:
        axes.barh(range(len(records)), times, color=colours)
        scale = "linear scale"
    axes.set_yticks(range(len(records)))
    axes.set_yticklabels(names, fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel(f"ms per 1000 KB (median), {scale}")
    axes.grid(True, axis="x", which="both", alpha=0.3)
    if metered:
        axes = axes_row[0][1]
        joules = [r["energy_j"] for r in metered]
        if wants_log(joules):
            axes.scatter(joules, range(len(metered)), color=[colour(label(r)) for r in metered])
            axes.set_xscale("log")
        else:
            axes.barh(range(len(metered)), joules, color=[colour(label(r)) for r in metered])
        axes.set_yticks(range(len(metered)))
        axes.set_yticklabels([f"{label(r)}: {r.get('variant') or 'host memory'}" for r in metered], fontsize=7)
        axes.invert_yaxis()
        axes.set_xlabel(f"joules per job ({metered[0].get('energy_meter')})")
    else:
        axes.set_title("no energy meter readable on this machine (see the report's notes)", fontsize=8)
    save(figure, folder, "s4-time-energy.png", written, title="S4: AES-128 at 1000 KB", report=report)


def main(arguments):
    if len(arguments) != 1 or arguments[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if arguments and arguments[0] in ("-h", "--help") else 2
    folder = arguments[0]
    report = load(folder)
    written = []
    for plot in (plot_sweep, plot_s0, plot_s1, plot_s2, plot_s3, plot_s4):
        plot(report, folder, written)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"no records to plot in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
