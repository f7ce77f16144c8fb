"""Who allows a call: the notebook's policy, the inline panel, stdin for consoles, and a
batch approved by a sample of its rows."""
