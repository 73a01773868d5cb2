"""``python -m pe_book``: the ``pe-lib`` command line."""
import sys

from pe_book.cli import main

sys.exit(main())
