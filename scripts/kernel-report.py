#!/usr/bin/env python3
"""Static kernel report: what each CUDA kernel costs, read from its machine code, no GPU.

The kernels are compiled by the crate's own NVRTC path (the parcrypt-gpu example
`kernel_cubin`: the source, the -D defines and the options the CUDA host uses for a GPU with
Hopper's shared memory, plus ptxas -v), then read with cuobjdump (-res-usage and -sass).

Per kernel it reports registers, shared memory (ptxas's static bytes + the dynamic bytes a
launch asks for), spills, how many thread blocks of the host's 256 threads fit on one SM, and
SASS instructions per 16 bytes of data, with the throughput those instructions allow under a
simple issue model. THE GB/s FIGURES ARE A MODEL, NOT A MEASUREMENT: they only rank kernel
versions against each other. Only a GPU run measures anything.

HOW INSTRUCTIONS PER BLOCK ARE COUNTED
1. cuobjdump -sass lists each kernel's instructions with addresses. A branch to a lower
   address closes a loop; loops nest by their address ranges.
2. The block loop is the outermost loop that stores data (an STG): the grid-stride loop that
   handles one cipher block per thread per iteration. A kernel may have several (the compiler
   unswitches a loop on a launch-constant argument such as the counter rule, and the AES
   kernels have one loop per key size): each is a path, reported separately in the JSON. For
   ghash_segments the per-block loop is the innermost loop that loads one 16-byte block.
3. Blocks per iteration = STG instructions in the loop body (the compiler may unroll the
   grid-stride loop); ghash: 128-bit data loads in the body.
4. Instructions of inner loops (round loops the compiler did not unroll) are charged by work,
   not by position: a table cipher must make a known number of table lookups (LDS) per block
   (AES 16 per round: 160/192/224 for 10/12/14 rounds; Blowfish 64 per 8-byte block), so the
   lookups the loop body outside inner loops does not make are charged at the inner loops'
   own instructions per lookup. A path with no inner loop whose lookups per block differ from
   the key size's is not that key size's path (the AES kernels' per-key-size loops). RC6 and
   GHASH must have no inner loop in their block loop (an inner loop there is reported as
   unresolved, and the run fails).
5. Every instruction in the loop body counts once, both arms of a forward branch included:
   per block, the count is an upper bound on the instructions one thread issues.
6. Blowfish blocks are 8 bytes: its count per 16 bytes is twice its count per block. Where a
   kernel has several paths for one key size, the largest count is reported.

THE MODEL (stated, not measured; NVIDIA's Hopper SM: 4 schedulers per SM)
- issue bound: each scheduler issues at most one warp instruction per clock, so an SM runs
  4 warp instructions per clock; one warp instruction does one block's work in each of its
  32 lanes: GB/s = SMs x clock x 4 x 32 x 16 / (instructions per 16 bytes).
- pipe bound (also a model): integer ALU instructions (LOP3, SHF, IADD3, PRMT, LEA, ISETP,
  SEL, MOV, ...) and the IMAD family each get 16 lanes per scheduler (half a warp instruction
  per clock), and shared memory serves one conflict-free 32-bit warp-wide access (LDS/STS) per
  SM per clock. The pipe bound is the slowest of issue, ALU, IMAD and shared memory.
- Part: 132 SMs at 1980 MHz (H100 SXM / H200 boost clock), --sms and --clock-mhz to change.

USAGE
  scripts/kernel-report.py [--arch sm_90 --arch sm_100] [--baseline FILE.json]
                           [--json FILE.json] [--markdown FILE.md] [--cubin-dir DIR]
Without NVRTC, cuobjdump or nvdisasm it prints one SKIPPED line and exits 0, except under
CI=true (CI installs them: nvidia-cuda-nvrtc, nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm),
where it exits 1. It exits 1 as well when a kernel cannot be analysed.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The host's launch shape (LaunchGeometry::default_for(Gpu)) and Hopper's per-SM limits,
# for the occupancy column.
THREADS_PER_GROUP = 256
SM_SHARED_BYTES = 228 * 1024
SM_RESERVED_SHARED_PER_BLOCK = 1024
SM_REGISTERS = 65536
SM_MAX_THREADS = 2048
SM_MAX_BLOCKS = 32

ALU_OPCODES = {
    "LOP3", "LOP", "SHF", "SHL", "SHR", "IADD3", "IADD", "PRMT", "LEA", "ISETP",
    "SEL", "MOV", "BMSK", "BREV", "FLO", "POPC", "IABS", "IMNMX", "VIMNMX", "PLOP3", "P2R",
    "R2P", "CS2R", "SGXT", "VIADD", "VIADDMNMX",
}
IMAD_OPCODES = {"IMAD", "IMUL", "IMADSP", "IDP"}
SHARED_OPCODES = {"LDS", "STS", "ATOMS", "LDSM"}
LOOKUPS_PER_BLOCK = {
    ("Aes", 128): 160,
    ("Aes", 192): 192,
    ("Aes", 256): 224,
    ("Blowfish", None): 64,
}
BLOCK_BYTES = {"Aes": 16, "Blowfish": 8, "Rc6": 16, "Ghash": 16}


def skip(reason):
    """No tools: a SKIPPED line, which is a failure under CI."""
    if os.environ.get("CI") == "true":
        print(f"kernel-report: cannot run in CI: {reason}", file=sys.stderr)
        sys.exit(1)
    print(f"kernel-report: SKIPPED: {reason}")
    sys.exit(0)


def python_nvidia_dirs(leaf):
    """Folders of the pip CUDA wheels (nvidia/cu13/<leaf>) for every Python we can ask."""
    found = []
    for python in (sys.executable, "python3"):
        try:
            output = subprocess.run(
                [python, "-c", "import nvidia, os; print('\\n'.join(os.path.join(p, 'cu13', "
                 f"'{leaf}') for p in nvidia.__path__))"],
                capture_output=True, text=True, check=False).stdout
        except OSError:
            continue
        found += [line for line in output.splitlines() if os.path.isdir(line)]
    return found


def find_tool(name):
    path = shutil.which(name)
    if path:
        return path
    for directory in python_nvidia_dirs("bin"):
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def build_cubins(directory, architectures):
    """Runs the kernel_cubin example; returns the architectures that compiled."""
    environment = dict(os.environ)
    libraries = python_nvidia_dirs("lib")
    if libraries:
        environment["LD_LIBRARY_PATH"] = ":".join(
            libraries + [environment.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    # The test profile over the whole workspace with every target: scripts/test.sh's `cargo test
    # --all-targets` has built the example so already (a build of parcrypt-gpu alone would
    # resolve other features and compile the crate again).
    build = subprocess.run(["cargo", "build", "--quiet", "--profile", "test", "--workspace",
                            "--all-targets"], cwd=ROOT, env=environment, check=False)
    if build.returncode != 0:
        print("kernel-report: cargo build failed", file=sys.stderr)
        sys.exit(1)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    command = [os.path.join(target, "debug", "examples", "kernel_cubin"), directory] + architectures
    result = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                            check=False)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if "NVRTC" in result.stderr and ("not found" in result.stderr or "NoNvrtc" in result.stderr
                                     or "libnvrtc" in result.stderr) and result.returncode:
        skip("NVRTC not found (pip install nvidia-cuda-nvrtc==13.0.88)")
    if result.returncode != 0:
        print("kernel-report: the kernel_cubin example failed", file=sys.stderr)
        sys.exit(1)
    return [arch for arch in architectures
            if os.path.exists(os.path.join(directory, f"{arch}.cubin"))]


INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
FUNCTION = re.compile(r"^\s*Function : (\S+)")


def disassemble(cuobjdump, nvdisasm, cubin):
    """{kernel: [(address, predicate, opcode, operands)]} from cuobjdump -sass."""
    environment = dict(os.environ)
    environment["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + environment.get("PATH", "")
    text = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True,
                          check=True, env=environment).stdout
    kernels, current = {}, None
    for line in text.splitlines():
        match = FUNCTION.match(line)
        if match:
            current = kernels.setdefault(match.group(1), [])
            continue
        match = INSTRUCTION.match(line)
        if match and current is not None:
            body = match.group(2).strip()
            predicate = ""
            if body.startswith("@"):
                predicate, body = body.split(None, 1)
            opcode, _, operands = body.partition(" ")
            current.append((int(match.group(1), 16), predicate, opcode, operands.strip()))
    return kernels


def per_function(text, header, figures):
    """(function, match) for each line of `text` that matches `figures`, after a line that
    names its function in the first group of `header` (lines before any are passed over)."""
    current = None
    for line in text.splitlines():
        match = re.search(header, line)
        if match:
            current = match.group(1)
            continue
        match = re.search(figures, line)
        if match and current:
            yield current, match


def resource_usage(cuobjdump, cubin):
    """{kernel: {registers, static_shared, local, stack}} from cuobjdump -res-usage."""
    text = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True,
                          check=True).stdout
    usage = {}
    figures = r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)"
    for kernel, match in per_function(text, r"^\s*Function (\S+):", figures):
        registers, stack, shared, local = (int(value) for value in match.groups())
        usage[kernel] = {"registers": registers, "stack": stack,
                         "static_shared": shared, "local": local}
    return usage


def ptxas_spills(log_text):
    """{kernel: (spill store bytes, spill load bytes)} from the ptxas -v log."""
    spills = {}
    figures = r"(\d+) bytes spill stores, (\d+) bytes spill loads"
    for kernel, match in per_function(log_text, r"Function properties for (\S+)", figures):
        spills[kernel] = (int(match.group(1)), int(match.group(2)))
    return spills


def base_opcode(opcode):
    return opcode.split(".")[0]


def branch_target(instruction):
    _, _, opcode, operands = instruction
    if base_opcode(opcode) != "BRA":
        return None
    match = re.match(r"(?:`\()?(0x[0-9a-f]+)", operands)
    return int(match.group(1), 16) if match else None


def find_loops(instructions):
    """[(head address, branch address)] for every backward branch."""
    loops = []
    for instruction in instructions:
        target = branch_target(instruction)
        if target is not None and target < instruction[0]:
            loops.append((target, instruction[0]))
    return loops


def in_range(instructions, start, end):
    return [i for i in instructions if start <= i[0] <= end]


def is_data_store(instruction):
    return base_opcode(instruction[2]) == "STG"


def is_block_load(instruction):
    return instruction[2].startswith("LDG") and ".128" in instruction[2]


def counts(instructions):
    total = len(instructions)
    alu = sum(1 for i in instructions if base_opcode(i[2]) in ALU_OPCODES)
    imad = sum(1 for i in instructions if base_opcode(i[2]) in IMAD_OPCODES)
    shared = sum(1 for i in instructions if base_opcode(i[2]) in SHARED_OPCODES)
    lookups = sum(1 for i in instructions if base_opcode(i[2]) == "LDS")
    return {"total": total, "alu": alu, "imad": imad, "shared": shared, "lookups": lookups}


def block_paths(family, instructions):
    """The per-block loops of one kernel: [(start, end, per-iteration units, inner loops)]."""
    loops = find_loops(instructions)
    paths = []
    if family == "Ghash":
        # The innermost loops that load one 16-byte block per iteration.
        for start, end in loops:
            body = in_range(instructions, start, end)
            inner = [(s, e) for s, e in loops if start <= s and e <= end and (s, e) != (start, end)]
            units = sum(1 for i in body if is_block_load(i))
            if units and not inner:
                paths.append((start, end, units, inner))
        return paths
    for start, end in loops:
        body = in_range(instructions, start, end)
        units = sum(1 for i in body if is_data_store(i))
        if not units:
            continue
        outer = [(s, e) for s, e in loops if s < start and end < e]
        if any(sum(1 for i in in_range(instructions, s, e) if is_data_store(i)) for s, e in outer):
            continue  # not outermost
        inner = [(s, e) for s, e in loops if start <= s and e <= end and (s, e) != (start, end)]
        # Only the outermost of nested inner loops are charged (their nested ones are inside).
        inner = [(s, e) for s, e in inner
                 if not any(s2 <= s and e <= e2 and (s2, e2) != (s, e) for s2, e2 in inner)]
        paths.append((start, end, units, inner))
    return paths


def path_cost(family, key_bits, instructions, path):
    """Instructions (and pipe counts) per block along one path for one key size, or None when
    the path is not that key size's, or a string saying why it cannot be resolved."""
    start, end, units, inner = path
    body = in_range(instructions, start, end)
    inside = [i for i in body if any(s <= i[0] <= e for s, e in inner)]
    outside = [i for i in body if i not in inside]
    outer_counts = counts(outside)
    needed = LOOKUPS_PER_BLOCK.get((family, key_bits))
    if not inner:
        per_block = {key: value / units for key, value in counts(body).items()}
        if needed is not None and abs(per_block["lookups"] - needed) > 0.5:
            return None
        return per_block
    if needed is None:
        return f"an inner loop in the block loop of a {family} kernel cannot be weighted"
    inner_counts = counts(inside)
    if inner_counts["lookups"] == 0:
        return "inner loops without table lookups cannot be weighted"
    missing = needed * units - outer_counts["lookups"]
    if missing < 0:
        return None
    scale = missing / inner_counts["lookups"]
    return {key: (outer_counts[key] + inner_counts[key] * scale) / units
            for key in outer_counts}


def model(per_16_bytes, sms, clock_hz):
    """GB/s under the issue bound and under the pipe bound (see the header: a model)."""
    bytes_per_warp_pass = 32 * 16
    issue_clocks = per_16_bytes["total"] / 4.0
    pipe_clocks = max(issue_clocks, per_16_bytes["alu"] / 2.0, per_16_bytes["imad"] / 2.0,
                      per_16_bytes["shared"] / 1.0)
    issue = sms * clock_hz * bytes_per_warp_pass / issue_clocks / 1e9
    pipe = sms * clock_hz * bytes_per_warp_pass / pipe_clocks / 1e9
    return issue, pipe


def occupancy(registers, shared_bytes):
    """Thread blocks of 256 threads per SM, by registers, shared memory and threads."""
    warps = THREADS_PER_GROUP // 32
    registers_per_warp = ((max(registers, 1) * 32 + 255) // 256) * 256
    by_registers = SM_REGISTERS // (registers_per_warp * warps)
    by_shared = SM_SHARED_BYTES // (shared_bytes + SM_RESERVED_SHARED_PER_BLOCK)
    return min(by_registers, by_shared, SM_MAX_THREADS // THREADS_PER_GROUP, SM_MAX_BLOCKS)


def analyse(directory, architecture, cuobjdump, nvdisasm, sms, clock_hz):
    cubin = os.path.join(directory, f"{architecture}.cubin")
    with open(os.path.join(directory, f"{architecture}.log"), encoding="utf-8") as log:
        spills = ptxas_spills(log.read())
    usage = resource_usage(cuobjdump, cubin)
    sass = disassemble(cuobjdump, nvdisasm, cubin)
    rows, problems = [], []
    with open(os.path.join(directory, "kernels.tsv"), encoding="utf-8") as table:
        kernels = [line.rstrip("\n").split("\t") for line in table][1:]
    for name, family, dynamic_shared in kernels:
        if name not in sass or name not in usage:
            problems.append(f"{architecture} {name}: not in the CUBIN")
            continue
        instructions = sass[name]
        resources = usage[name]
        # -res-usage counts the 1 KiB the driver reserves per block on sm_80+ as static.
        static_shared = max(0, resources["static_shared"] - SM_RESERVED_SHARED_PER_BLOCK)
        shared = static_shared + int(dynamic_shared)
        spill_store, spill_load = spills.get(name, (0, 0))
        key_sizes = [128, 192, 256] if family == "Aes" else [None]
        paths = block_paths(family, instructions)
        if not paths:
            problems.append(f"{architecture} {name}: no block loop found")
            continue
        for key_bits in key_sizes:
            costs = []
            for path in paths:
                cost = path_cost(family, key_bits, instructions, path)
                if isinstance(cost, str):
                    problems.append(f"{architecture} {name}: {cost}")
                elif cost is not None:
                    costs.append(cost)
            label = name if key_bits is None else f"{name} (AES-{key_bits})"
            if not costs:
                problems.append(f"{architecture} {label}: no block loop matches")
                continue
            worst = max(costs, key=lambda cost: cost["total"])
            factor = 16 / BLOCK_BYTES[family]
            per_16 = {key: value * factor for key, value in worst.items()}
            issue, pipe = model(per_16, sms, clock_hz)
            rows.append({
                "kernel": label,
                "architecture": architecture,
                "registers": resources["registers"],
                "shared_bytes": shared,
                "spill_bytes": spill_store + spill_load,
                "local_bytes": resources["local"],
                "blocks_per_sm": occupancy(resources["registers"], shared),
                "paths": len(costs),
                "instructions_per_16_bytes": round(per_16["total"], 1),
                "alu_per_16_bytes": round(per_16["alu"], 1),
                "imad_per_16_bytes": round(per_16["imad"], 1),
                "shared_accesses_per_16_bytes": round(per_16["shared"], 1),
                "model_issue_gbps": round(issue),
                "model_pipe_gbps": round(pipe),
            })
    return rows, problems


def markdown(rows, baseline, sms, clock_mhz):
    before = {(row["architecture"], row["kernel"]): row for row in baseline or []}
    lines = [
        f"MODEL, not measured: {sms} SMs at {clock_mhz} MHz, 4 warp instructions per SM per "
        "clock (issue bound); pipe bound adds ALU and IMAD at 2 and shared memory at 1 warp "
        "access per SM per clock. Instructions per 16 bytes of data, counted in SASS (method: "
        "scripts/kernel-report.py).",
        "",
    ]
    if baseline is not None:
        lines.append("| arch | kernel | regs | shared KiB | spills B | blocks/SM | instr/16 B "
                     "before -> after | issue-bound GB/s before -> after | pipe-bound GB/s "
                     "before -> after |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    else:
        lines.append("| arch | kernel | regs | shared KiB | spills B | blocks/SM | instr/16 B "
                     "| ALU | IMAD | LDS+STS | issue-bound GB/s | pipe-bound GB/s |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        shared = f"{row['shared_bytes'] / 1024:g}"
        head = (f"| {row['architecture']} | {row['kernel']} | {row['registers']} | {shared} | "
                f"{row['spill_bytes']} | {row['blocks_per_sm']} |")
        if baseline is not None:
            old = before.get((row["architecture"], row["kernel"]))
            pick = (lambda key: f"{old[key]} -> {row[key]}") if old else (
                lambda key: f"(new) {row[key]}")
            lines.append(f"{head} {pick('instructions_per_16_bytes')} | "
                         f"{pick('model_issue_gbps')} | {pick('model_pipe_gbps')} |")
        else:
            lines.append(f"{head} {row['instructions_per_16_bytes']} | {row['alu_per_16_bytes']} | "
                         f"{row['imad_per_16_bytes']} | {row['shared_accesses_per_16_bytes']} | "
                         f"{row['model_issue_gbps']} | {row['model_pipe_gbps']} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", action="append", help="sm_XY (default: sm_90 and sm_100)")
    parser.add_argument("--baseline", help="a JSON report to compare against")
    parser.add_argument("--json", help="write the report as JSON here")
    parser.add_argument("--markdown", help="write the Markdown table here")
    parser.add_argument("--cubin-dir", help="use the kernel_cubin output already in DIR")
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument("--clock-mhz", type=int, default=1980)
    arguments = parser.parse_args()
    architectures = arguments.arch or ["sm_90", "sm_100"]

    cuobjdump = find_tool("cuobjdump")
    nvdisasm = find_tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        skip("cuobjdump or nvdisasm not found (pip install nvidia-cuda-cuobjdump==13.2.86 "
             "nvidia-cuda-nvdisasm==13.2.86)")

    with tempfile.TemporaryDirectory() as scratch:
        directory = arguments.cubin_dir or scratch
        if not arguments.cubin_dir:
            built = build_cubins(directory, architectures)
            for missing in sorted(set(architectures) - set(built)):
                print(f"kernel-report: NVRTC could not compile for {missing}; left out")
            architectures = built
        rows, problems = [], []
        for architecture in architectures:
            found, trouble = analyse(directory, architecture, cuobjdump, nvdisasm,
                                     arguments.sms, arguments.clock_mhz * 1e6)
            rows += found
            problems += trouble
    baseline = None
    if arguments.baseline:
        with open(arguments.baseline, encoding="utf-8") as file:
            baseline = json.load(file)["kernels"]
    table = markdown(rows, baseline, arguments.sms, arguments.clock_mhz)
    print(table)
    if arguments.markdown:
        with open(arguments.markdown, "w", encoding="utf-8") as file:
            file.write(table)
    if arguments.json:
        with open(arguments.json, "w", encoding="utf-8") as file:
            json.dump({"model": {"sms": arguments.sms, "clock_mhz": arguments.clock_mhz,
                                 "note": "a model from SASS counts, not a measurement"},
                       "kernels": rows}, file, indent=1)
            file.write("\n")
    if problems or not rows:
        for problem in problems or ["no kernel analysed"]:
            print(f"kernel-report: {problem}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
