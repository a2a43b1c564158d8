"""A short run of the reliability campaign (tests/reliability/campaign.py, docs/reliability.md):
400 generated inputs against the CLI of this build, every one ending in a documented status with
no hang, no non-finite cell in an ok run, no partial output and no output path changed in kind.
The 10 000-input campaign of docs/reliability.md runs the same script with --inputs 10000."""

import os
import subprocess
import sys

from conftest import CLI, ROOT


def test_four_hundred_generated_inputs_end_as_documented():
    script = os.path.join(ROOT, "tests", "reliability", "campaign.py")
    result = subprocess.run([sys.executable, script, "--inputs", "400", "--seed", "11",
                             "--jobs", "2", "--timeout", "60", "--binary", CLI],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "findings: 0" in result.stdout
    # The table covers every kind of input and the runs that end ok (their traces are checked).
    for kind in ("| run |", "| fit |", "| codes |", "| theory |", "| sweep |"):
        assert kind in result.stdout, kind
