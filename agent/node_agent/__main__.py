import sys

from node_agent.cli import main

sys.exit(main())
