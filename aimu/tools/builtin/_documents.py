"""``make_document_tools``: a model's notebook of named documents, over a ``DocumentStore``.

Where memory tools keep loose facts, these keep files the model writes, reads back and edits
in place (a plan, a running summary, a draft), each under a path such as ``/plan.md``.
"""

from __future__ import annotations

from collections.abc import Callable

from aimu.memory.documents import DocumentStore
from aimu.tools.builtin._memory import MAX_MEMORY_CHARS
from aimu.tools.decorator import tool


def make_document_tools(store: DocumentStore) -> list[Callable]:
    """Build ``write_document``, ``read_document``, ``edit_document`` and ``list_documents``
    bound to ``store``; the writing two ask for approval in a notebook, the reading two do not::

        docs = DocumentStore(persist_path="./.notes")
        agent = Agent(client, tools=make_document_tools(docs))

    A path that is not allowed, a missing document or an edit that does not match once comes
    back to the model as text to correct from.
    """
    if not isinstance(store, DocumentStore):
        raise TypeError(f"store must be a DocumentStore, not {type(store).__name__}")

    @tool(read_only=False)
    def write_document(path: str, content: str) -> str:
        """Create or replace the document at a path.

        Args:
            path: Where the document lives, e.g. "/plan.md".
            content: Its whole new text, at most 10000 characters.
        """
        if len(content) > MAX_MEMORY_CHARS:
            return f"Not written: {len(content)} characters; the limit is {MAX_MEMORY_CHARS}."
        try:
            return f"Wrote {store.write(path, content)}."
        except (TypeError, ValueError) as exc:
            return f"Not written: {exc}"

    @tool(read_only=True)
    def read_document(path: str) -> str:
        """Read the document at a path.

        Args:
            path: The document's path, as list_documents shows it.
        """
        try:
            return store.read(path)
        except (KeyError, TypeError, ValueError) as exc:
            return f"Cannot read {path!r}: {str(exc).strip(chr(39))}"

    @tool(read_only=False)
    def edit_document(path: str, old_str: str, new_str: str) -> str:
        """Replace one passage of a document; old_str must occur in it exactly once.

        Args:
            path: The document's path.
            old_str: The passage to replace, with enough context to occur once.
            new_str: What replaces it.
        """
        try:
            store.edit(path, old_str, new_str)
        except (KeyError, TypeError, ValueError) as exc:
            return f"Not edited: {str(exc).strip(chr(39))}"
        return f"Edited {path}."

    @tool(read_only=True)
    def list_documents(prefix: str = "") -> str:
        """List the documents' paths, under a folder when one is given.

        Args:
            prefix: A folder such as "/drafts", or empty for every document.
        """
        try:
            paths = store.list_paths(prefix or None)
        except (TypeError, ValueError) as exc:
            return f"Cannot list {prefix!r}: {exc}"
        return "\n".join(paths) if paths else "No documents."

    return [write_document, read_document, edit_document, list_documents]
