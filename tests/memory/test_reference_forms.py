"""The reference library's memory and retrieval call forms, beside our richer ones."""

from __future__ import annotations

import os

import pytest

from aimu import Agent
from aimu.memory import DocumentStore, SemanticMemoryStore, UnreadableDocumentWarning
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.rag import Chunk, format_context, ingest, rerank, retrieve, split_text
from aimu.tools import builtin

# --- DocumentStore reads the disk as it is now --------------------------------------------


def test_files_added_changed_and_deleted_behind_the_stores_back_are_seen(tmp_path):
    root = tmp_path / "notes"
    docs = DocumentStore(root)
    docs.write("/kept.md", "kept")
    (root / "team").mkdir()
    (root / "team" / "added.md").write_text("added by a colleague: budget is 40k")

    assert docs.list_all() == ["/kept.md", "/team/added.md"] and len(docs) == 2
    assert docs.search("budget") == ["added by a colleague: budget is 40k"]
    assert docs.read("team/added.md").startswith("added")

    (root / "kept.md").write_text("KEPT")  # same size, new content
    os.utime(root / "kept.md", ns=(1, 1))
    assert docs.read("/kept.md") == "KEPT"
    assert docs.search("kept") == ["KEPT"]

    (root / "team" / "added.md").unlink()
    assert docs.list_all() == ["/kept.md"]
    with pytest.raises(KeyError):
        docs.read("/team/added.md")
    assert docs.delete("/team/added.md") == 0


def test_an_edit_sees_what_another_writer_put_on_disk(tmp_path):
    first, second = DocumentStore(tmp_path), DocumentStore(tmp_path)
    first.write("/plan.md", "ship on Monday")
    second.edit("/plan.md", "Monday", "Friday")
    assert first.read("/plan.md") == "ship on Friday"


def test_a_search_reports_a_file_it_cannot_read_and_finds_the_rest(tmp_path):
    docs = DocumentStore(tmp_path)
    docs.write("/good.md", "the budget")
    (tmp_path / "latin1.md").write_bytes("caf\xe9 budget".encode("latin-1"))
    with pytest.warns(UnreadableDocumentWarning, match=r"latin1\.md is left out.*UTF-8"):
        assert docs.search("budget") == ["the budget"]


# --- make_memory_tools on any store ----------------------------------------------------


class Notebook:
    """A store of the user's own: store, search and list_all, nothing else (no __len__)."""

    def __init__(self):
        self.items: list[str] = []

    def store(self, content):
        self.items.append(content)

    def search(self, query, n_results=10):
        return [item for item in self.items if query.lower() in item.lower()][:n_results]

    def list_all(self):
        return list(self.items)


def test_memory_tools_work_on_a_store_without_len():
    tools = builtin.make_memory_tools(Notebook())
    script = [
        call("search_memories", query="tea"),
        call("store_memory", content="Prefers coffee"),
        call("search_memories", query="tea"),
        call("search_memories", query="coffee"),
        "done",
    ]
    agent = Agent(ScriptedClient(script), tools=tools)
    assert agent.run("go") == "done"
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results == ["Memory is empty.", "Stored.", "No memories match.", "1. Prefers coffee"]


# --- SemanticMemoryStore(embedding_client=) ---------------------------------------------


class MiniLMClient:
    """An embedding client in the reference's shape (``embed(texts) -> vectors``), backed
    by the real bundled model."""

    def __init__(self, embedding):
        self.embedding = embedding
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        return [list(map(float, vector)) for vector in self.embedding(texts)]


def test_semantic_store_accepts_an_embedding_client(embedding):
    client = MiniLMClient(embedding)
    with SemanticMemoryStore(embedding_client=client) as store:
        store.store("Paul works at Google")
        store.store("Sarah likes sailing")
        assert store.search("employment", n_results=1) == ["Paul works at Google"]
    assert client.calls >= 2


def test_an_embedding_client_and_function_together_or_a_client_without_embed_are_refused(
    embedding,
):
    with pytest.raises(ValueError, match="not both"):
        SemanticMemoryStore(embedding_function=embedding, embedding_client=MiniLMClient(embedding))
    with pytest.raises(TypeError, match="embed"):
        SemanticMemoryStore(embedding_client=object())


# --- aimu.rag in the reference's forms ----------------------------------------------------


def test_split_text_gives_strings_that_also_know_their_offsets():
    text = "First paragraph here.\n\nSecond paragraph, a bit longer than the first one."
    chunks = split_text(text, chunk_size=40, chunk_overlap=0)
    assert chunks == [
        "First paragraph here.",
        "Second paragraph, a bit longer than the",
        "first one.",
    ]
    assert all(isinstance(c, str) and isinstance(c, Chunk) for c in chunks)
    assert [text[c.start : c.end] for c in chunks] == chunks
    assert type(chunks[0].text) is str and chunks[0].upper() == "FIRST PARAGRAPH HERE."


def test_split_text_uses_the_given_separators_and_length_function():
    text = " | ".join(f"item {n} has some words" for n in range(12))

    def words(piece: str) -> int:
        return len(piece.split())

    chunks = split_text(
        text, chunk_size=12, chunk_overlap=0, separators=[" | "], length_function=words
    )
    assert all(words(c) <= 12 for c in chunks)
    assert all(c.endswith("words |") or c == chunks[-1] for c in chunks)
    assert " ".join(chunks).split() == text.split()
    assert len(chunks) == 6

    docs = DocumentStore()
    assert (
        ingest(
            docs, text, chunk_size=12, chunk_overlap=0, separators=[" | "], length_function=words
        )
        == 6
    )


def test_format_context_takes_numbered_and_separator():
    assert format_context(["a", "b"], numbered=False) == "a\n\nb"
    assert format_context(["a", "b"], numbered=False, separator="\n---\n") == "a\n---\nb"
    assert format_context(["a", "b"], numbered=True) == "[1] a\n\n[2] b"
    assert format_context(["a", "b"], separator=" / ") == "[1] a / [2] b"


def test_retrieve_forwards_search_keywords_to_the_store(semantic):
    ingest(semantic, ["The cafeteria opens at eight.", "Quarterly revenue grew nine percent."])
    assert retrieve(semantic, "When does the canteen open?", n_results=2, max_distance=2.0)[
        0
    ].startswith("The cafeteria")
    assert retrieve(semantic, "When does the canteen open?", max_distance=0.0) == []
    with pytest.raises(TypeError):
        retrieve(DocumentStore(), "x", max_distance=0.5)

    class Tagged(Notebook):
        def search(self, query, n_results=10, tag=None):
            return [f"{query}/{n_results}/{tag}"]

    assert retrieve(Tagged(), "q", n_results=3, tag="hr") == ["q/3/hr"]


LEAVE = "Every employee gets twenty-five days of paid annual leave each year."
PARKING = "Bicycles can be parked in the garage under building B."
MEALS = "Meals are reimbursed up to forty euros a day when travelling."


def test_rerank_puts_the_most_relevant_document_first_and_keeps_top_n():
    ranked = rerank("How many vacation days do I get?", [PARKING, MEALS, LEAVE])
    assert ranked[0] == LEAVE and sorted(ranked) == sorted([PARKING, MEALS, LEAVE])
    assert rerank("Where do I leave my bike?", [LEAVE, MEALS, PARKING], top_n=1) == [PARKING]
    assert rerank("anything", []) == []


def test_rerank_keeps_hits_with_their_sources(semantic):
    ingest(semantic, {"leave.md": LEAVE, "parking.md": PARKING, "meals.md": MEALS})
    hits = semantic.query("bike", n_results=3)
    best = rerank("Where can I put my bicycle?", hits, top_n=2)
    assert best[0].source == "parking.md" and len(best) == 2


def test_rerank_takes_a_cross_encoder_or_a_scoring_function(embedding):
    class WordOverlapEncoder:
        """A cross-encoder in sentence-transformers' shape: predict(pairs) -> scores."""

        def predict(self, pairs):
            return [len(set(q.lower().split()) & set(d.lower().split())) for q, d in pairs]

    docs = [MEALS, PARKING, LEAVE]
    assert rerank("annual leave days", docs, model=WordOverlapEncoder())[0] == LEAVE
    assert rerank("x", docs, model=lambda query, texts: [len(t) for t in texts])[0] == LEAVE
    with pytest.raises(TypeError, match="nothing is downloaded"):
        rerank("x", docs, model="cross-encoder/ms-marco-MiniLM-L-6-v2")
