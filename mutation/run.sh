#!/usr/bin/env bash
# Mutation testing of the verdict / tolerance code with mutmut 3 (see mutation/README.md).
#
# mutmut 3 reads its settings only from [tool.mutmut] in pyproject.toml or [mutmut] in
# setup.cfg. To leave the repository's config alone, this runs in a scratch copy of the
# working tree with a [mutmut] section written to a setup.cfg in the copy (the repository
# has none: its metadata is in pyproject.toml).
#
#   mutation/run.sh                 # all mutants, results in $WORKDIR (printed)
#   WORKDIR=/tmp/gc-mut mutation/run.sh   # reuse a copy (mutmut resumes where it stopped)
#   JOBS=1 mutation/run.sh          # parallel mutants (default 2)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
MUTMUT="${MUTMUT:-$(command -v mutmut || echo /work/venv/bin/mutmut)}"
WORKDIR="${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/gradcheck-mutation.XXXXXX")}"
mkdir -p "$WORKDIR"
JOBS="${JOBS:-2}"

# The code under test: the verdict rule, the tolerance/noise configuration, the step study.
ONLY_MUTATE=(
  "src/gradcheck/_classify/rule.py"
  "src/gradcheck/_core/config.py"
  "src/gradcheck/_refine/study.py"
  "src/gradcheck/_refine/quick.py"
  "src/gradcheck/_refine/kink.py"
)
# The tests that judge it (a whole-suite run per mutant would take hours on 2 cores).
TESTS=(
  "tests/test_mutation_kills.py"
  "tests/test_properties.py"
  "tests/test_classify_kernel.py"
  "tests/test_check.py"
  "tests/test_control.py"
  "tests/test_referee.py"
  "tests/test_quick_look.py"
  # restoration under NaN/inf for every layout: 17 s and no verdict assertion
  "--deselect=tests/test_properties.py::test_check_never_changes_the_users_array"
  # times numba's compilation: 0 s when the kernel comes from the cache of an earlier run
  "--deselect=tests/test_classify_kernel.py::test_compile_time_is_reported_once_per_signature"
)

if [ ! -e "$WORKDIR/setup.cfg" ]; then
  echo "copying $REPO -> $WORKDIR"
  (cd "$REPO" && tar --exclude=./.git --exclude=./mutants --exclude='*/__pycache__' \
       --exclude=./.hypothesis -cf - .) | (cd "$WORKDIR" && tar -xf -)
  {
    echo
    echo "[mutmut]"
    echo "only_mutate ="
    for p in "${ONLY_MUTATE[@]}"; do echo "    $p"; done
    echo "pytest_add_cli_args_test_selection ="
    for t in "${TESTS[@]}"; do echo "    $t"; done
    # Workers forked from a process that never ran numba's threaded kernels (a fork of
    # the process that did can hang in the kernel: mutmut then reports "suspicious").
    echo "process_isolation = forkserver"
    echo "pytest_add_cli_args ="
    echo "    -p"
    echo "    no:cacheprovider"
  } >> "$WORKDIR/setup.cfg"
fi

cd "$WORKDIR"
# The tests that start a fresh interpreter import gradcheck too: the scratch copy's, whether
# or not the venv has gradcheck installed (and mutmut: a mutant's code imports it).
export PYTHONPATH="$WORKDIR/mutants/src${PYTHONPATH:+:$PYTHONPATH}"
echo "mutmut $("$MUTMUT" --version 2>/dev/null || true) in $WORKDIR"
"$MUTMUT" run --max-children "$JOBS" || true
"$MUTMUT" results --all true > mutmut-results.txt 2>&1 || "$MUTMUT" results > mutmut-results.txt 2>&1 || true
python3 - <<'PY'
import re, collections, pathlib
text = pathlib.Path("mutmut-results.txt").read_text()
status = collections.Counter(m.group(1) for m in re.finditer(r":\s*(killed|survived|no tests|timeout|suspicious|skipped|segfault|caught by type check|not checked)\s*$", text, re.M))
killed = status["killed"] + status["timeout"] + status["caught by type check"]
total = sum(status.values())
print(dict(status))
if total:
    print(f"score: {killed}/{total} = {100.0 * killed / total:.1f}% (killed incl. timeouts)")
PY
echo "survivors: grep survived $WORKDIR/mutmut-results.txt; show one: (cd $WORKDIR && $MUTMUT show NAME)"
