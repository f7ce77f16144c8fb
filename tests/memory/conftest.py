"""Real ChromaDB and the real default embedding model, loaded once per test session."""

import pytest

from aimu.memory import SemanticMemoryStore, default_embedding_function


@pytest.fixture(scope="session")
def embedding():
    return default_embedding_function()


@pytest.fixture
def semantic(embedding):
    store = SemanticMemoryStore(embedding_function=embedding)
    yield store
    store.close()
