#!/bin/sh
# Builds the fuzzers of Fuzz/ with libFuzzer and AddressSanitizer, then runs each for
# FUZZ_SECONDS (default 60) on a copy of its committed corpus (Fuzz/Corpus/<Name>/) and prints,
# per target, the executions, executions per second, coverage and whether it crashed. Exits 1 when
# any target crashed, hung (over 1 s of processor time on one input, FuzzerDriver's measure; or
# over 30 s of wall-clock time, libFuzzer's) or went over 256 MB, naming the input.
#
# Usage: scripts/fuzz.sh [TARGET...]   (default: all; a TARGET is a directory name under Fuzz/Corpus)
# Environment: FUZZ_SECONDS, FUZZ_BUILD (scratch path of the build, default .build-fuzz/libfuzzer),
# FUZZ_OUT (corpus copies, new inputs, logs and crashing inputs; default .build-fuzz/runs), SWIFT.
#
# To keep a finding: copy the crashing input from FUZZ_OUT/<Name>/artifacts/ into
# Fuzz/Corpus/<Name>/ under a name that says what it was; `swift test` replays it from then on.
# To reproduce one without sanitizers: swift build --product FuzzKeyExport && .build/debug/FuzzKeyExport FILE
set -eu
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_BUILD=${FUZZ_BUILD:-.build-fuzz/libfuzzer}
FUZZ_OUT=${FUZZ_OUT:-.build-fuzz/runs}
targets=${*:-KeyExport HealthCard Sightings AgentConfiguration ExposureConfiguration Advertisement}

# A Swift executable always has a main (SwiftPM links it with --defsym main=<Module>_main), so
# -sanitize=fuzzer, whose runtime brings libFuzzer's own main, cannot link one. Instead: the same
# coverage instrumentation (-sanitize=fuzzer implies these -sanitize-coverage options), and
# libFuzzer's runtime without main; FuzzerDriver.main hands over to LLVMFuzzerRunDriver under
# -DFUZZING.
resources=$($SWIFT -print-target-info | sed -n 's/.*"runtimeResourcePath": "\(.*\)".*/\1/p')
runtime="$resources/clang/lib/linux/libclang_rt.fuzzer_no_main-$(uname -m).a"
if [ ! -f "$runtime" ]; then
    echo "fuzz: no libFuzzer runtime at $runtime (a Swift toolchain for Linux from swift.org has it)" >&2
    exit 1
fi
set -- -c debug --scratch-path "$FUZZ_BUILD" \
    -Xswiftc -sanitize=address \
    -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,pc-table,inline-8bit-counters \
    -Xswiftc -DFUZZING -Xlinker "$runtime" -Xlinker -lstdc++

for target in $targets; do
    if [ ! -d "Fuzz/Corpus/$target" ]; then echo "fuzz: no target $target (see Fuzz/Corpus/)" >&2; exit 64; fi
done
mkdir -p "$FUZZ_OUT"
for target in $targets; do
    echo "fuzz: building Fuzz$target"
    if ! nice -n 19 "$SWIFT" build "$@" --product "Fuzz$target" >"$FUZZ_OUT/build.log" 2>&1; then
        # gold warns about every ASan-instrumented object; the errors are what matter.
        grep -v "Cannot export local symbol" "$FUZZ_OUT/build.log" | tail -n 40 >&2
        echo "fuzz: the build of Fuzz$target failed" >&2
        exit 1
    fi
done
bin=$("$SWIFT" build "$@" --show-bin-path)

# Swift's backtracer would catch the crash before libFuzzer writes the input (and can hang);
# ASan's default quarantine (256 MB) alone would reach the RSS limit.
SWIFT_BACKTRACE=enable=no
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:detect_leaks=1:handle_abort=1:handle_sigill=1:handle_sigtrap=1}
export SWIFT_BACKTRACE ASAN_OPTIONS

summary=""
failed=0
for target in $targets; do
    work="$FUZZ_OUT/$target"
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    cp Fuzz/Corpus/"$target"/* "$work/corpus/"
    dictionary=""
    [ -f "Fuzz/Dictionaries/$target.dict" ] && dictionary="-dict=Fuzz/Dictionaries/$target.dict"
    echo "fuzz: running Fuzz$target for $FUZZ_SECONDS s (log: $work/log)"
    status=0
    # The first corpus directory takes the new inputs: the copy, never Fuzz/Corpus.
    nice -n 19 "$bin/Fuzz$target" "$work/corpus" $dictionary -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=256 \
        -artifact_prefix="$work/artifacts/" -print_final_stats=1 >"$work/log" 2>&1 || status=$?

    stat() { sed -n "s/^stat::$1: *//p" "$work/log" | tail -n 1; }
    runs=$(stat number_of_executed_units)
    speed=$(stat average_exec_per_sec)
    rss=$(stat peak_rss_mb)
    coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$work/log" | tail -n 1)
    added=$(( $(find "$work/corpus" -type f | wc -l) - $(find "Fuzz/Corpus/$target" -type f | wc -l) ))
    line="$target: ${runs:-?} runs, ${speed:-?} exec/s, ${coverage:-no coverage line}, $added new inputs, peak RSS ${rss:-?} MB"
    crash=$(find "$work/artifacts" -type f | head -n 1)
    if [ "$status" -ne 0 ] || [ -n "$crash" ]; then
        failed=1
        what=$(grep -m 1 -o -e 'ERROR: [A-Za-z]*: [a-z-]*[^(]*' -e 'Fatal error: .*' -e 'Precondition failed.*' "$work/log" || true)
        line="$line: FAILED (exit $status) ${what:-}
    input: ${crash:-none written; see $work/log}
    log:   $work/log"
        echo "fuzz: Fuzz$target FAILED; the end of its log:"
        tail -n 40 "$work/log" | sed 's/^/    /'
    else
        line="$line: no crash"
    fi
    summary="$summary$line
"
done

echo
echo "fuzz: $FUZZ_SECONDS s per target"
printf '%s' "$summary"
exit $failed
