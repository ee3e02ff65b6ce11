"""``python -m devstack.soak`` (= ``make soak``)."""

import sys

from devstack.soak.run import main

sys.exit(main())
