#!/usr/bin/env bash
# The JVM library (java/): builds libparcrypt and the parcrypt CLI (the test profile, which
# scripts/capi_test.sh already built; PARCRYPT_JAVA_PROFILE=release for the release build),
# then `mvn verify` in java/ on a JDK 22 or later: compiles with -Xlint:all -Werror, runs
# the JUnit tests through Surefire (the CLI interop tests call the built parcrypt) and packs
# the jar with libparcrypt.so inside. Maven runs offline once its artifacts are in the local
# repository (~/.m2), and online only when something is missing.
# Without a JDK 22+ or Maven it prints SKIPPED and exits 0, except under CI=true, where it
# fails. Prints `== java: N tests passed, M failed (jar: SIZE)`; skip reasons go to the file
# named by $1 when given (scripts/test.sh's summary). PARCRYPT_JAVA=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
skips="${1:-/dev/null}"

skip() {
    if [ "${CI:-}" = "true" ]; then
        echo "== java: cannot run in CI: $1" >&2
        exit 1
    fi
    echo "== java: SKIPPED: $1"
    echo "scripts/java-test.sh: SKIPPED: $1" >>"$skips"
    exit 0
}

if [ "${PARCRYPT_JAVA:-1}" = "0" ]; then
    echo "== java: SKIPPED: PARCRYPT_JAVA=0"
    echo "scripts/java-test.sh: SKIPPED: PARCRYPT_JAVA=0" >>"$skips"
    exit 0
fi

# The JDK's feature version (22 for "22.0.2", 8 for "1.8.0"), or 0.
feature_version() {
    local version
    version="$("$1/bin/java" -XshowSettings:properties -version 2>&1 |
        sed -n 's/^ *java.specification.version = //p')"
    version="${version#1.}"
    echo "${version:-0}"
}

jdk=""
for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25* /usr/lib/jvm/*; do
    if [ -n "$candidate" ] && [ -x "$candidate/bin/javac" ] && [ "$(feature_version "$candidate")" -ge 22 ]; then
        jdk="$candidate"
        break
    fi
done
[ -n "$jdk" ] || skip "no JDK 22 or later (the FFM API) under JAVA_HOME or /usr/lib/jvm"
command -v mvn >/dev/null || skip "Maven (mvn) is not installed (apt-get install maven)"

profile="${PARCRYPT_JAVA_PROFILE:-test}"
echo "== java: libparcrypt and the CLI (cargo profile $profile)"
# The test profile builds the whole workspace with every target, so that the features come
# out as in `cargo test` and its compiled crates are used as they are (see scripts/capi_test.sh).
if [ "$profile" = "test" ]; then
    cargo build --quiet --profile test --workspace --all-targets
else
    cargo build --quiet --profile "$profile" -p parcrypt-capi -p parcrypt-cli
fi
case "$profile" in
test | dev) native="${CARGO_TARGET_DIR:-$root/target}/debug" ;;
*) native="${CARGO_TARGET_DIR:-$root/target}/$profile" ;;
esac

export JAVA_HOME="$jdk"
# Maven 3.8's bundled Guava calls sun.misc.Unsafe, which JDK 24+ warns about on every run.
if [ "$(feature_version "$jdk")" -ge 24 ]; then
    export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
fi
args=(-B -q -Dstyle.color=never -f java/pom.xml verify "-Dparcrypt.native.dir=$native" "-Dparcrypt.cli=$native/parcrypt")
echo "== java: mvn verify on $(basename "$jdk") ($(mvn -v 2>/dev/null | head -n 1 | sed 's/\x1b\[[0-9;]*m//g'))"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
# Reports of an earlier run would be counted below as this run's when the compiler stops it.
rm -rf java/target/surefire-reports
mvn -o "${args[@]}" >"$log" 2>&1 || status=$?
if [ "$status" -ne 0 ] && grep -qE "offline mode|has not been downloaded from it before|Cannot access .* in offline" "$log"; then
    echo "== java: resolving Maven artifacts online (first run)"
    status=0
    mvn "${args[@]}" >"$log" 2>&1 || status=$?
fi
sed "s/\x1b\[[0-9;]*m//g" "$log" | grep -vE "^\[INFO\]|^$" || true

# Surefire's reports: the counts of every test class, summed.
count() {
    cat java/target/surefire-reports/TEST-*.xml 2>/dev/null | grep -h '^<testsuite ' |
        grep -o " $1=\"[0-9]*\"" | tr -dc '0-9\n' | awk '{ n += $1 } END { print n + 0 }'
}
tests="$(count tests)"
failures="$(count failures)"
errors="$(count errors)"
skipped="$(count skipped)"
jar="java/target/parcrypt-0.1.0.jar"
size="none"
if [ -f "$jar" ]; then
    size="$(du -h "$jar" | cut -f1)"
    # grep reads the whole listing (no -q): under pipefail, a grep that stops at the first
    # match can leave unzip killed by SIGPIPE, and the pipeline would then say "missing".
    if ! unzip -l "$jar" | grep "native/linux-x86_64/libparcrypt.so" >/dev/null; then
        echo "== java: $jar has no native/linux-x86_64/libparcrypt.so" >&2
        status=1
    fi
fi
passed=$((tests - failures - errors - skipped))
echo "== java: $passed tests passed, $((failures + errors)) failed, $skipped skipped (jar: $size)"
echo "java: $passed passed, $((failures + errors)) failed"
exit "$status"
