"""``python -m pe_lib``: the ``pe-lib`` command line."""
import sys

from pe_lib.cli import main

sys.exit(main())
