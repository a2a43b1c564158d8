"""Shared set-up of the Python module tests: the build tree to test and the CLI beside it.

STRAGGLERSIM_BUILD names the build folder (default: build/release of this checkout); its
python/ folder goes first on sys.path, so the module under test is the one built there even
when another copy is installed.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("STRAGGLERSIM_BUILD", os.path.join(ROOT, "build", "release"))
CLI = os.path.join(BUILD, "experiments", "stragglersim")
sys.path.insert(0, os.path.join(BUILD, "python"))
