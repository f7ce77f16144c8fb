"""``python -m aimu``: the ``aimu`` command line (:mod:`aimu.cli`)."""

import sys

from aimu.cli import main

sys.exit(main())
