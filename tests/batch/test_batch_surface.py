"""``aimu.batch`` is both the function and the package: neither hides the other."""

import inspect

import aimu
import aimu.batch
from aimu.batch import BatchResult
from aimu.models.providers.scripted import ScriptedClient


def test_aimu_batch_runs_a_batch_when_called():
    agent = aimu.Agent(ScriptedClient(["pos", "neg"]))
    results = aimu.batch("Label: {text}", [{"text": "good"}, {"text": "bad"}], agent=agent,
                         concurrency=1, progress=False)  # fmt: skip
    assert isinstance(results, BatchResult)
    assert sorted(item.answer for item in results) == ["neg", "pos"]


def test_the_package_s_names_are_reachable_on_aimu_batch():
    assert aimu.batch.BatchResult is BatchResult
    assert inspect.ismodule(aimu.batch) and callable(aimu.batch)
    assert aimu.batch.batch.__name__ == "batch"


def test_the_text_bar_is_a_public_display_and_the_notebook_s_fallback(capsys):
    from aimu_jupyter.view._batch_progress import notebook_progress

    agent = aimu.Agent(ScriptedClient(["pos", "neg"]))
    aimu.batch("Label: {text}", [{"text": "good"}, {"text": "bad"}], agent=agent,
               concurrency=1, progress=aimu.batch.TextProgress)  # fmt: skip
    assert "2/2" in capsys.readouterr().err
    outside_a_kernel = notebook_progress(aimu.batch.BatchStats(total=1))
    assert isinstance(outside_a_kernel, aimu.batch.TextProgress)
    outside_a_kernel.close(aimu.batch.BatchStats(total=1, done=1))
