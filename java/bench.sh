#!/usr/bin/env bash
# The JVM library's benchmarks (not part of the tests), written to java/bench/results/:
#   1. JMH (java/bench, CipherBenchmark): parcrypt's native pool and one thread, the Java
#      strategies (JavaThreads, ForkJoin), javax.crypto and Bouncy Castle, AES-128-CTR and
#      AES-128-GCM encryption, 1 KiB to 256 MiB; jmh.json and jmh.md (GB/s).
#   2. javax.crypto alone on Java 17 and on the JDK 22+ (java/bench/JavaxBaseline.java, one
#      thread, median of 5 runs after 6 s untimed): the baseline of the targets; javax.md.
#   3. Seed S0's experiment (SeedS0): AES-128 over a 17.9 MB file, encrypt and decrypt, the
#      mean of 10 after 3 untimed runs, medians too, S0's figures beside ours; s0.md.
# Usage: bash java/bench.sh [JMH options...]   (default: -f 1 -wi 2 -i 3 -w 1s -r 1s, which
# takes about 12 minutes here; e.g. `bash java/bench.sh -p size=1024,1048576` for fewer sizes).
# Env: JAVA17 (default /usr/lib/jvm/java-17-openjdk-amd64), JAVA_HOME (a JDK 22+; default
# the first /usr/lib/jvm/temurin-25*), PARCRYPT_BENCH_STEPS (default "jmh javax s0").
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export JAVA_HOME="${JAVA_HOME:-$(ls -d /usr/lib/jvm/temurin-25* | head -n 1)}"
java17="${JAVA17:-/usr/lib/jvm/java-17-openjdk-amd64}"
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
steps="${PARCRYPT_BENCH_STEPS:-jmh javax s0}"
results=java/bench/results
mkdir -p "$results"

echo "== release libparcrypt, the library jar (installed in ~/.m2), benchmarks.jar"
cargo build --quiet --release -p parcrypt-capi
native="${CARGO_TARGET_DIR:-$root/target}/release"
mvn -B -q -Dstyle.color=never -f java/pom.xml install -DskipTests "-Dparcrypt.native.dir=$native"
mvn -B -q -Dstyle.color=never -f java/bench/pom.xml package
jar=java/bench/target/benchmarks.jar
machine="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"

if [[ " $steps " == *" jmh "* ]]; then
    options=("$@")
    [ ${#options[@]} -gt 0 ] || options=(-f 1 -wi 2 -i 3 -w 1s -r 1s)
    echo "== JMH ${options[*]} on $("$JAVA_HOME/bin/java" -version 2>&1 | head -n 1)"
    "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$jar" CipherBenchmark "${options[@]}" \
        -jvmArgsAppend "--enable-native-access=ALL-UNNAMED -Xmx3g" -rf json -rff "$results/jmh.json" |
        tee "$results/jmh.log" | grep -E "^Benchmark|^CipherBenchmark" || true
    python3 - "$results/jmh.json" "$machine" >"$results/jmh.md" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
table = {}
for row in rows:
    p = row["params"]
    size = int(p["size"])
    number = lambda x: float(x) if str(x).replace(".", "", 1).replace("E", "", 1).replace("-", "").isdigit() else 0.0
    ops = number(row["primaryMetric"]["score"])
    error = number(row["primaryMetric"]["scoreError"])
    table.setdefault((p["suite"], size), {})[p["implementation"]] = (ops * size / 1e9, error * size / 1e9)
names = ["parcrypt-pool", "parcrypt-seq", "java-threads", "fork-join", "javax", "bouncycastle"]
def label(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
print(f"JMH, AES-128 encryption, GB/s (mean of the measured iterations; {sys.argv[2]})\n")
print("| suite | size | " + " | ".join(names) + " | pool / javax |")
print("|---|---:|" + "---:|" * len(names) + "---:|")
for (suite, size) in sorted(table):
    cells = table[(suite, size)]
    values = [f"{cells[n][0]:.2f}" if n in cells else "-" for n in names]
    ratio = cells["parcrypt-pool"][0] / cells["javax"][0] if "parcrypt-pool" in cells and "javax" in cells else float("nan")
    print(f"| {suite} | {label(size)} | " + " | ".join(values) + f" | {ratio:.2f}x |")
PY
    cat "$results/jmh.md"
fi

if [[ " $steps " == *" javax "* ]]; then
    echo "== javax.crypto alone: Java 17 and $(basename "$JAVA_HOME") (java/bench/JavaxBaseline.java)"
    {
        echo "javax.crypto, one thread, encryption, GB/s (median of 5 runs after 6 s untimed per size; $machine)"
        echo
        echo "| library | suite | 1 KiB | 1 MiB | 64 MiB | 256 MiB |"
        echo "|---|---|---:|---:|---:|---:|"
        for java in "$java17/bin/java" "$JAVA_HOME/bin/java"; do
            "$java" -Xmx3g java/bench/JavaxBaseline.java
        done
    } >"$results/javax.md"
    cat "$results/javax.md"
fi

if [[ " $steps " == *" s0 "* ]]; then
    echo "== seed S0: AES-128 over a 17.9 MB file"
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    head -c 17900000 /dev/urandom >"$scratch/input.bin"
    head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$scratch/key.txt"
    "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$jar" dev.parcrypt.bench.SeedS0 \
        "$scratch/input.bin" "$scratch/key.txt" 10 | sed "s|$scratch/||" >"$results/s0.md"
    echo "Machine: $machine" >>"$results/s0.md"
    cat "$results/s0.md"
fi
