"""``python -m hetgym.cli``: the same as the ``hetgym`` command."""

from __future__ import annotations

import sys

from hetgym.cli import main

sys.exit(main())
