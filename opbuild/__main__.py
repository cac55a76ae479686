"""`python -m opbuild ...` is the `opbuild` command."""

import sys

from opbuild.cli import main

sys.exit(main())
