#!/usr/bin/env bash
# Mutation testing of the verdict / tolerance code with mutmut 3 (see tests/mutation/README.md).
#
# mutmut 3 reads its settings from [mutmut] in setup.cfg (at the repository's top level: which
# modules to mutate, which tests judge each mutant). It runs in a scratch copy of the working
# tree, so the repository is never touched by mutmut's own files (mutants/, its cache).
#
#   tests/mutation/run.sh                       # all mutants, results in $WORKDIR (printed)
#   WORKDIR=/tmp/gc-mut tests/mutation/run.sh   # reuse a copy (mutmut resumes where it stopped)
#   JOBS=1 tests/mutation/run.sh                # parallel mutants (default 2)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
MUTMUT="${MUTMUT:-$(command -v mutmut || echo /work/venv/bin/mutmut)}"
WORKDIR="${WORKDIR:-$(mktemp -d "${TMPDIR:-/tmp}/gradcheck-mutation.XXXXXX")}"
mkdir -p "$WORKDIR"
JOBS="${JOBS:-2}"

if [ ! -e "$WORKDIR/setup.cfg" ]; then
  echo "copying $REPO -> $WORKDIR"
  (cd "$REPO" && tar --exclude=./.git --exclude=./mutants --exclude='*/__pycache__' \
       --exclude=./.hypothesis -cf - .) | (cd "$WORKDIR" && tar -xf -)
fi
grep -q '^\[mutmut\]' "$WORKDIR/setup.cfg" || { echo "no [mutmut] section in $WORKDIR/setup.cfg" >&2; exit 1; }

cd "$WORKDIR"
# The tests that start a fresh interpreter import gradcheck too: the scratch copy's, whether
# or not the venv has gradcheck installed (and mutmut: a mutant's code imports it).
export PYTHONPATH="$WORKDIR/mutants/src${PYTHONPATH:+:$PYTHONPATH}"
# ... and that directory must exist when the interpreter starts: a PYTHONPATH entry that does not
# exist yet is cached as "nothing here" (sys.path_importer_cache), and with gradcheck installed
# (editable or not) every test then imports the unmutated installed copy: mutmut finds "no test
# case for any mutant" and scores 0 (2026-12-03, a fresh WORKDIR in a venv with `pip install -e .`).
mkdir -p "$WORKDIR/mutants/src"
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
