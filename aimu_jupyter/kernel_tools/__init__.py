"""Tools that act on the kernel and the open notebook: the user's variables and recent
cells, new cells below, and the notebook's own cells through the lab extension."""
