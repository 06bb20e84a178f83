"""``python -m llmworker_server``: the same as ``llmworker-server``."""

import sys

from .cli import main

sys.exit(main())
