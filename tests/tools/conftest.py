"""Tests of the bundle builder (tools/bundle): no network, no Go builds."""

import os
import sys

TOOLS_BUNDLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tools", "bundle")
if TOOLS_BUNDLE not in sys.path:
    sys.path.insert(0, TOOLS_BUNDLE)
