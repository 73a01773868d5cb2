"""``python -m pe_book``: the ``pe-book`` command line."""
import sys

from pe_book.cli import main

sys.exit(main())
