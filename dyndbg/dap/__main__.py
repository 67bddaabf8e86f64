"""`python -m dyndbg.dap`: the Debug Adapter Protocol on stdio (adapter.py)."""
import sys

from dyndbg.dap.adapter import main

sys.exit(main())
