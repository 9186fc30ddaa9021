"""``python -m coldbrew ...`` (and ``torchrun ... -m coldbrew train ...``): the CLI."""

import sys

from coldbrew.cli import main

sys.exit(main())
