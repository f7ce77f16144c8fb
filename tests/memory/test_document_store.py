"""DocumentStore: whole documents keyed by path, in memory or as files."""

import threading

import pytest

from aimu.memory import DocumentStore, MemoryStore, UnreadableDocumentWarning


@pytest.fixture(params=["memory", "disk"])
def docs(request, tmp_path):
    return DocumentStore() if request.param == "memory" else DocumentStore(tmp_path / "docs")


def test_write_read_list_and_delete_whole_documents(docs):
    assert isinstance(docs, MemoryStore)
    assert docs.write("notes/todo.md", "buy milk") == "/notes/todo.md"
    docs.write("/notes/todo.md", "buy bread")
    docs.write("/prefs.md", "short answers")

    assert docs.read("/notes/todo.md") == "buy bread"
    assert docs.list_all() == ["/notes/todo.md", "/prefs.md"] and len(docs) == 2
    assert docs.list_paths("notes") == ["/notes/todo.md"]
    assert docs.delete("notes/todo.md") == 1 and docs.delete("notes/todo.md") == 0
    with pytest.raises(KeyError, match=r"no document at '/notes/todo\.md'"):
        docs.read("/notes/todo.md")


def test_store_files_a_note_under_a_new_path(docs):
    path = docs.store("remember the milk")
    assert path.startswith("/note-") and docs.read(path) == "remember the milk"


def test_search_ranks_documents_matching_more_words_first(docs):
    docs.write("/a.md", "The budget for Q3 marketing")
    docs.write("/b.md", "Marketing plan: budget, channels, and the Q3 launch. Budget is tight.")
    docs.write("/c.md", "Holiday rota")

    assert docs.search("q3 BUDGET launch") == [docs.read("/b.md"), docs.read("/a.md")]
    hits = docs.query("holiday")
    assert [(h.text, h.source) for h in hits] == [("Holiday rota", "/c.md")]
    assert docs.search("nothing-like-this") == []
    assert docs.search_full_text("rota") == [{"path": "/c.md", "content": "Holiday rota"}]


def test_edit_replaces_the_one_occurrence_and_refuses_ambiguity_naming_the_count(docs):
    docs.write("/a.md", "one two one two one")
    with pytest.raises(ValueError, match=r"'one' occurs 3 times in '/a\.md'"):
        docs.edit("/a.md", "one", "three")
    assert docs.read("/a.md") == "one two one two one"
    docs.edit("/a.md", "one two one two", "1 2 1 2")
    assert docs.read("/a.md") == "1 2 1 2 one"
    with pytest.raises(ValueError, match="does not occur"):
        docs.edit("/a.md", "four", "five")
    with pytest.raises(ValueError, match="must not be empty"):
        docs.edit("/a.md", "", "x")


def test_dot_dot_cannot_escape_the_store(tmp_path):
    root = tmp_path / "docs"
    docs = DocumentStore(root)
    assert docs.write("../../outside.md", "contained") == "/outside.md"
    assert (root / "outside.md").read_text() == "contained"
    assert not (tmp_path / "outside.md").exists()
    with pytest.raises(ValueError, match="not a document path"):
        docs.write("/..", "x")


def test_documents_on_disk_survive_reopening_and_unreadable_files_are_reported(tmp_path):
    root = tmp_path / "docs"
    first = DocumentStore(root)
    first.write("/projects/plan.md", "ship it")
    first.write("/prefs.md", "concise")
    (root / "image.bin").write_bytes(b"\xff\xfe\x00binary")

    again = DocumentStore(root)
    with pytest.warns(UnreadableDocumentWarning, match=r"image\.bin is left out"):
        assert again.list_all() == ["/prefs.md", "/projects/plan.md"]
    with pytest.raises(ValueError, match="cannot be read as text"):
        again.read("/image.bin")
    assert again.read("projects/plan.md") == "ship it"
    assert not [p for p in root.rglob(".aimu-tmp-*")]


def test_concurrent_writes_from_two_threads_lose_nothing(docs):
    def write(prefix):
        for n in range(100):
            docs.write(f"/{prefix}/{n}.md", f"{prefix} {n}")

    threads = [threading.Thread(target=write, args=(p,)) for p in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(docs) == 200
    assert docs.read("/beta/99.md") == "beta 99"


@pytest.mark.parametrize("path", ["", "/", 3])
def test_a_bad_path_is_refused(docs, path):
    with pytest.raises((ValueError, TypeError)):
        docs.write(path, "x")
    assert len(docs) == 0
