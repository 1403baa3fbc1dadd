"""`python -m pt2format`: the same command line as the `pt2format` script."""

import sys

from pt2format.cli import main

sys.exit(main())
