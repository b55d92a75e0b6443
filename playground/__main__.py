"""``python -m playground``: the same as the ``teamrunner`` command."""

import sys

from playground.cli import main

sys.exit(main())
