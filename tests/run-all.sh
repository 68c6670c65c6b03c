#!/bin/bash
# The whole test run (the README's test command, and what CI runs through .ci/run):
#   1. install the build and test dependencies (.ci/install-deps.sh; needs root)
#   2. build with g++-12 (build/, RelWithDebInfo), and with clang++-14 -DDAXSMBD_WERROR=ON
#      -DDAXSMBD_FUZZ=ON (build-clang/). The clang build serves three checks at the cost of one:
#      clang's warnings, the libFuzzer targets, and the unit tests under ASan+UBSan; all of its
#      code is built with -fsanitize=fuzzer-no-link,address,undefined (so the fuzzers see
#      coverage and sanitizer checks in the libraries too, not only in the fuzz target's file)
#      at -O1 with asserts on.
#   3. run each fuzz target for a short time (--fuzz-seconds, 15) from its checked-in seed corpus
#      (tests/fuzz/corpus/<target>/, written by build/fuzz-seed-corpus)
#   4. unit tests: ctest in build/, then in build-clang/ (sanitizers): the unit and end-to-end
#      tests and the structure check (tests/tools/check_structure.py)
#   5. every tests/interop/*_test.sh, then tests/interop/smbtorture.sh (against build/daxsmbd)
#   6. tests/vm/run.sh when it exists and is executable
# Every stage runs even when an earlier one failed; a summary table follows, and the exit status
# is non-zero when any stage failed.
#
#   tests/run-all.sh [--no-deps] [--no-clang] [--no-fuzz] [--no-torture] [--no-vm]
#                    [--fuzz-seconds N]
# Environment: BUILD_DIR (build), CLANG_BUILD_DIR (build-clang),
#   RUN_ALL_BUDGET seconds for the whole run (5100: CI stops a run at 90 minutes; a stage that
#   would start after the budget is spent is not run and counts as failed), RUN_ALL_LOGDIR
#   (BUILD_DIR/run-all-logs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

DO_DEPS=1 DO_CLANG=1 DO_FUZZ=1 DO_TORTURE=1 DO_VM=1
FUZZ_SECONDS=15
while [ $# -gt 0 ]; do
    case $1 in
        --no-deps) DO_DEPS=0 ;;
        --no-clang) DO_CLANG=0 ;;
        --no-fuzz) DO_FUZZ=0 ;;
        --no-torture) DO_TORTURE=0 ;;
        --no-vm) DO_VM=0 ;;
        --fuzz-seconds)
            FUZZ_SECONDS=${2:?--fuzz-seconds needs a number}
            shift
            ;;
        -h | --help)
            sed -n '2,24p' "$0"
            exit 0
            ;;
        *)
            echo "run-all: unknown argument $1" >&2
            exit 2
            ;;
    esac
    shift
done

BUILD_DIR=${BUILD_DIR:-$ROOT/build}
CLANG_BUILD_DIR=${CLANG_BUILD_DIR:-$ROOT/build-clang}
BUDGET=${RUN_ALL_BUDGET:-5100}
LOGS=${RUN_ALL_LOGDIR:-$BUILD_DIR/run-all-logs}
mkdir -p "$LOGS"
T0=$SECONDS

NAMES=() RESULTS=() TIMES=() NOTES=()
record() { # NAME RESULT SECONDS NOTE
    NAMES+=("$1") RESULTS+=("$2") TIMES+=("$3") NOTES+=("$4")
}

banner() { printf '\n======== %s ========\n' "$*"; }

# A TERM or INT (CI's time limit, Ctrl-C) stops the running stage; the stages left are recorded
# as not run and the summary is still printed.
STAGE_PID=
INTERRUPTED=0
on_signal() {
    INTERRUPTED=1
    if [ -n "$STAGE_PID" ]; then kill -TERM "$STAGE_PID" 2>/dev/null || true; fi
}
trap on_signal TERM INT

# stage NAME CAP_SECONDS CMD...: runs CMD with a timeout (CAP, or what is left of the budget),
# its output shown and kept in $LOGS/NAME.log. Exit 0 = PASS, 77 = SKIP, else FAIL.
stage() {
    local name=$1 cap=$2
    shift 2
    if [ "$INTERRUPTED" = 1 ]; then
        record "$name" FAIL 0 "not run: interrupted"
        return 0
    fi
    local left=$((BUDGET - (SECONDS - T0)))
    if [ "$left" -lt 60 ]; then
        record "$name" FAIL 0 "not run: time budget (${BUDGET}s) spent"
        return 0
    fi
    local tmo=$((cap < left ? cap : left))
    local log=$LOGS/${name//[:\/]/_}.log t=$SECONDS rc=0 tail_pid
    banner "$name (limit ${tmo}s)"
    # timeout runs programs, not shell functions: a function goes through a child bash (the
    # functions and the variables they use are exported).
    local cmd=("$@")
    [ "$(type -t "$1")" = function ] && cmd=(bash -c 'set -euo pipefail; "$@"' stage "$@")
    # In the background, so that a signal reaches on_signal while the stage runs; tail shows the
    # output as it comes.
    timeout -k 30 "$tmo" "${cmd[@]}" >"$log" 2>&1 </dev/null &
    STAGE_PID=$!
    tail -n +1 -f --pid="$STAGE_PID" "$log" &
    tail_pid=$!
    wait "$STAGE_PID" || rc=$?
    # A trapped signal interrupts wait: wait again for the stage's own status.
    while kill -0 "$STAGE_PID" 2>/dev/null; do
        rc=0
        wait "$STAGE_PID" || rc=$?
    done
    STAGE_PID=
    wait "$tail_pid" 2>/dev/null || true
    local secs=$((SECONDS - t)) note=""
    if [ "$INTERRUPTED" = 1 ]; then
        record "$name" FAIL "$secs" "interrupted (exit $rc)"
        return 0
    fi
    case $rc in
        0) record "$name" PASS "$secs" "" ;;
        77)
            note=$(grep -m1 -i 'skip' "$log" | cut -c1-70 || true)
            record "$name" SKIP "$secs" "$note"
            ;;
        124 | 137) record "$name" FAIL "$secs" "timed out after ${tmo}s" ;;
        *)
            # The last line that looks like a verdict makes the note.
            note=$(grep -E 'passed|failed|FAILED|error:|Error|REGRESSION' "$log" | tail -n 1 | cut -c1-70 || true)
            record "$name" FAIL "$secs" "exit $rc${note:+: $note}"
            ;;
    esac
}

skip() { record "$1" SKIP 0 "$2"; }

# ---------------------------------------------------------------- the stages
if [ "$DO_DEPS" = 1 ]; then
    stage deps 1800 "$ROOT/.ci/install-deps.sh"
else
    skip deps "--no-deps"
fi

configure_and_build() { # DIR CXX CC [cmake args...] -- [ninja targets...]
    local dir=$1 cxx=$2 cc=$3
    shift 3
    local cmake_args=() targets=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        cmake_args+=("$1")
        shift
    done
    [ $# -gt 0 ] && shift
    targets=("$@")
    # ccache when installed: CI runs on the machine the developers built on, and BASEDIR makes
    # objects from another clone of the repository count as hits.
    if command -v ccache >/dev/null; then
        cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
        export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=true
    fi
    cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
        "${cmake_args[@]}"
    # -k 0: build everything that can be built, so one broken file shows all the others.
    ninja -C "$dir" -k 0 "${targets[@]}"
}
export -f configure_and_build
export ROOT LOGS CLANG_BUILD_DIR FUZZ_SECONDS

stage build-gcc 2400 configure_and_build "$BUILD_DIR" g++-12 gcc-12 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDAXSMBD_WERROR=ON

FUZZERS=()
for f in "$ROOT"/tests/fuzz/fuzz_*.cpp; do
    [ -e "$f" ] && FUZZERS+=("$(basename "$f" .cpp)")
done
# -fno-sanitize=function: clang 14 cannot emit UBSan's function-type check for coroutines
# ("error: Cannot represent a difference across sections").
SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function -fno-omit-frame-pointer"
if [ "$DO_CLANG" = 1 ]; then
    stage build-clang 2400 configure_and_build "$CLANG_BUILD_DIR" clang++-14 clang-14 \
        -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" "-DCMAKE_CXX_FLAGS=$SAN" \
        -DDAXSMBD_WERROR=ON -DDAXSMBD_FUZZ=ON
else
    skip build-clang "--no-clang"
fi

if [ "$DO_FUZZ" = 0 ]; then
    skip fuzz "--no-fuzz"
elif [ "$DO_CLANG" = 0 ]; then
    skip fuzz "the fuzz targets come from the clang build (--no-clang)"
elif [ ${#FUZZERS[@]} -eq 0 ]; then
    skip fuzz "no tests/fuzz/fuzz_*.cpp yet"
else
    run_fuzzer() { # NAME: runs it for FUZZ_SECONDS from its seed corpus, if there is one
        local name=$1 corpus=$LOGS/corpus/$1 seeds=$ROOT/tests/fuzz/corpus/$1
        mkdir -p "$corpus"
        local args=("$corpus")
        [ -d "$seeds" ] && args+=("$seeds")
        [ -x "$CLANG_BUILD_DIR/$name" ] || {
            echo "$name: not built"
            return 1
        }
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            "$CLANG_BUILD_DIR/$name" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=4096 \
            -print_final_stats=1 -artifact_prefix="$LOGS/$name-" "${args[@]}"
    }
    export -f run_fuzzer
    for f in "${FUZZERS[@]}"; do
        stage "fuzz:$f" $((FUZZ_SECONDS + 120)) run_fuzzer "$f"
    done
fi

stage unit 1800 ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error -j "$(nproc)"
if [ "$DO_CLANG" = 1 ]; then
    # UBSan only prints by default: make undefined behaviour fail the test.
    stage unit-asan 1800 env UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ASAN_OPTIONS=detect_leaks=1 \
        ctest --test-dir "$CLANG_BUILD_DIR" --output-on-failure --no-tests=error -j "$(nproc)"
else
    skip unit-asan "--no-clang"
fi

export DAXSMBD_BUILD=$BUILD_DIR
for t in "$ROOT"/tests/interop/*_test.sh; do
    [ -e "$t" ] || continue
    stage "interop:$(basename "$t" .sh)" 900 "$t"
done

if [ "$DO_TORTURE" = 1 ]; then
    # Leave room for the VM tests after it.
    left=$((BUDGET - (SECONDS - T0)))
    tb=$((left - 900))
    [ "$tb" -gt 2400 ] && tb=2400
    [ "$tb" -lt 300 ] && tb=300
    export SMBTORTURE_BUDGET=$tb
    stage smbtorture $((tb + 120)) "$ROOT/tests/interop/smbtorture.sh"
else
    skip smbtorture "--no-torture"
fi

if [ "$DO_VM" = 0 ]; then
    skip vm "--no-vm"
elif [ -x "$ROOT/tests/vm/run.sh" ]; then
    stage vm 3600 "$ROOT/tests/vm/run.sh"
else
    skip vm "tests/vm/run.sh not present"
fi

# ---------------------------------------------------------------- summary
banner "summary ($((SECONDS - T0)) s; logs in $LOGS)"
pass=0 fail=0 skipped=0
printf '%-34s %-6s %7s  %s\n' stage result seconds note
for i in "${!NAMES[@]}"; do
    printf '%-34s %-6s %7s  %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${TIMES[$i]}" "${NOTES[$i]}"
    case ${RESULTS[$i]} in
        PASS) pass=$((pass + 1)) ;;
        FAIL) fail=$((fail + 1)) ;;
        *) skipped=$((skipped + 1)) ;;
    esac
done
echo
echo "run-all: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
