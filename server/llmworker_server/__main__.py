"""``python -m llmworker_server``: the same as ``llmworker-server``."""

import sys

from .extra import launch

sys.exit(launch())
