"""Runs tests/copyreplay.py with a trial variant applied first (env VARIANT: a file of variants/,
or none): `replay_variant.py tests/copyreplay.py ARGS...`, as run.sh hands it to
../2026-11-29-policy/run.sh in place of python."""

import os
import sys

sys.argv = sys.argv[1:]  # tests/copyreplay.py and its arguments
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))  # tests/, where copyreplay lives
if os.environ.get("VARIANT"):
    exec(open(os.environ["VARIANT"]).read())
import copyreplay  # noqa: E402

copyreplay.main()
