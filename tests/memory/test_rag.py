"""aimu.rag: chunking that keeps positions, ingest with sources, ranked retrieval."""

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aimu.memory import DocumentStore
from aimu.rag import format_context, ingest, retrieve, retrieve_with_sources, split_text

HANDBOOK = {
    "handbook/leave.md": (
        "Annual leave. Every employee is entitled to twenty-five days of paid annual leave per "
        "calendar year, plus public holidays. Unused days may be carried over until March."
    ),
    "handbook/expenses.md": (
        "Expenses. Submit receipts through the finance portal within thirty days. Meals are "
        "reimbursed up to forty euros per day when travelling for work."
    ),
    "handbook/security.md": (
        "Security. Laptops must use full-disk encryption and lock after five minutes. Report "
        "a lost badge to the front desk immediately."
    ),
    "handbook/parking.md": (
        "Parking. The garage under building B has spaces for bicycles and electric cars; "
        "charging is free for staff."
    ),
}


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab .\n"), max_size=400),
    size=st.integers(1, 60),
    data=st.data(),
)
def test_chunks_are_exact_slices_within_size_that_cover_the_text(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = split_text(text, chunk_size=size, chunk_overlap=overlap)

    covered = set()
    for before, after in itertools.pairwise(chunks):
        assert before.start < after.start
        assert not text[before.end : after.start].strip()
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert 0 < len(chunk.text) <= size and chunk.text == chunk.text.rstrip()
        covered.update(range(chunk.start, chunk.end))
    assert all(i in covered for i, c in enumerate(text) if not c.isspace())


def test_chunks_end_at_sentence_breaks_and_overlap_by_about_the_overlap():
    text = " ".join(f"Sentence number {n} is here." for n in range(60))
    chunks = split_text(text, chunk_size=200, chunk_overlap=50)

    assert all(chunk.text.endswith(".") for chunk in chunks)
    for before, after in itertools.pairwise(chunks):
        assert 30 <= before.end - after.start <= 60


@pytest.mark.parametrize(
    ("size", "overlap"), [(0, 0), (100, 100), (100, -1), (100, 150), (1.5, 0), (True, 0)]
)
def test_inconsistent_chunk_sizes_are_refused(size, overlap):
    with pytest.raises(ValueError):
        split_text("some text", chunk_size=size, chunk_overlap=overlap)
    with pytest.raises(ValueError):
        ingest(DocumentStore(), "some text", chunk_size=size, chunk_overlap=overlap)


def test_the_relevant_chunk_ranks_first_for_a_paraphrased_query(semantic):
    assert ingest(semantic, HANDBOOK) == 4

    hits = retrieve_with_sources(semantic, "How much vacation time do staff get each year?")

    assert hits[0].source == "handbook/leave.md"
    top = retrieve(semantic, "Can I get my dinner paid back on a business trip?", n_results=2)
    assert top[0] == HANDBOOK["handbook/expenses.md"]
    assert len(top) == 2


def test_ingest_keeps_source_and_position_of_every_chunk(semantic):
    text = " ".join(f"Fact {n}: the value of item {n} is {n * 7}." for n in range(40))
    count = ingest(semantic, {"facts.txt": text, "other.txt": "A lone line."}, chunk_size=300,
                   chunk_overlap=60)  # fmt: skip

    hits = semantic.query("the value of item 33", n_results=count)
    assert len(hits) == count == len(split_text(text, chunk_size=300, chunk_overlap=60)) + 1
    for hit in hits:
        meta = hit.metadata
        source_text = text if meta["source"] == "facts.txt" else "A lone line."
        assert source_text[meta["start"] : meta["end"]] == hit.text
        assert meta["document"] == (0 if meta["source"] == "facts.txt" else 1)
    chunk_numbers = sorted(h.metadata["chunk"] for h in hits if h.source == "facts.txt")
    assert chunk_numbers == list(range(count - 1))


def test_plain_strings_and_lists_ingest_without_a_source(semantic):
    assert ingest(semantic, "One short document.") == 1
    assert ingest(semantic, ["First.", "   ", "Second."]) == 2
    assert {hit.source for hit in retrieve_with_sources(semantic, "document", n_results=3)} == {
        None
    }


def test_any_memory_store_and_even_a_duck_typed_one_can_be_used():
    class Notes:
        def __init__(self):
            self.items = []

        def store(self, content):
            self.items.append(content)

        def search(self, query, n_results=10):
            return [i for i in self.items if query in i][:n_results]

    notes = Notes()
    assert ingest(notes, {"a": "alpha beta", "b": "gamma"}) == 2
    assert retrieve(notes, "gamma") == ["gamma"]

    docs = DocumentStore()
    ingest(docs, "alpha beta gamma")
    assert retrieve(docs, "beta") == ["alpha beta gamma"]


@pytest.mark.parametrize("documents", [42, None, [b"bytes"], {"a": 3}])
def test_documents_of_the_wrong_type_are_refused_before_anything_is_stored(documents):
    docs = DocumentStore()
    with pytest.raises(TypeError):
        ingest(docs, documents)
    assert len(docs) == 0


def test_format_context_numbers_chunks_and_names_their_sources(semantic):
    ingest(semantic, {"handbook/security.md": HANDBOOK["handbook/security.md"]})
    hits = retrieve_with_sources(semantic, "badge")

    text = format_context([*hits, "a bare string"])

    end = len(HANDBOOK["handbook/security.md"])
    assert text.startswith(f"[1] (source: handbook/security.md, chars 0-{end})\nSecurity.")
    assert text.endswith("\n\n[2] a bare string")
