import sys

from dyndbg.cli import main

sys.exit(main())
