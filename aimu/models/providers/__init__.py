"""One module per model provider; :func:`aimu.client` imports them on demand."""
