"""One agent run in the kernel: what outlives a cell (the session and its tools), the run
itself (a cell, ``--each`` rows, or ``await run_agent(...)``), and the signals and kernel
status while it goes on."""
