"""``python -m pe_lib``: the library has no command line of its own; this names the one that exists.

Every command (``data`` included) lives in :mod:`pe_book`, whose profiles most of them read, and is
run as ``pe-book`` or ``python -m pe_book``. Nothing is imported from :mod:`pe_book` here.
"""
import sys

print("python -m pe_lib: pe_lib is the library and has no command line; the commands are pe-book "
      "(or python -m pe_book), e.g. pe-book --help, pe-book data, pe-book run --profile smoke", file=sys.stderr)
sys.exit(2)
