"""Which images of concurrent tool results reach the model is said of the right call: the
client counts a batch's images in the order of its calls, however the calls finish."""

from __future__ import annotations

import asyncio
import io

from PIL import Image as PILImage

import aimu
import aimu.aio
from aimu.models.providers._images import MAX_PER_TURN, prepare
from aimu.models.providers.scripted import ScriptedClient, call, reply
from aimu.tools import Image

CAPPED = f"not sent, at most {MAX_PER_TURN} images per turn"


def png(color: str) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (8, 8), color).save(buffer, format="PNG")
    return buffer.getvalue()


def two_pictures_tools(first_count: int, second_count: int):
    """A tool whose first call finishes only after its second, each returning pictures, and
    the order its calls finished in."""
    second_finished = asyncio.Event()
    finished: list[str] = []

    @aimu.tool
    async def pictures(which: str) -> aimu.ToolResult:
        """Return pictures.

        Args:
            which: first or second.
        """
        if which == "first":
            await second_finished.wait()
        count = first_count if which == "first" else second_count
        images = tuple(
            Image.from_bytes(png("blue"), description=f"{which} {i}") for i in range(count)
        )
        finished.append(which)
        second_finished.set()
        return aimu.ToolResult(f"{count} pictures", images)

    return pictures, finished


async def run_two_calls(first_count: int, second_count: int):
    both = reply(tool_calls=[call("pictures", which="first"), call("pictures", which="second")])
    model = ScriptedClient([both, "Seen."])
    pictures, finished = two_pictures_tools(first_count, second_count)
    agent = aimu.aio.Agent(model, tools=[pictures], concurrent_tool_calls=True)
    chunks = [chunk async for chunk in agent.stream("look")]
    assert finished == ["second", "first"]
    return model, [c.content for c in chunks if c.phase == "tool_result"]


async def test_concurrent_results_finishing_in_reverse_order_count_images_in_call_order():
    model, results = await run_two_calls(3, 3)
    first, second = results  # the second call finished first; its images count after
    assert [image["description"] for image in first["images"]] == ["first 0", "first 1", "first 2"]
    assert first["images_unsent"] == ["", "", ""]
    assert second["images_unsent"] == ["", CAPPED, CAPPED]
    sent_to_model = [
        message for message in prepare(model.requests[1]["messages"], True)
        if message["role"] == "tool"
    ]  # fmt: skip
    assert [len(m.get("images", ())) for m in sent_to_model] == [
        r["images_unsent"].count("") for r in results
    ]


async def test_a_concurrent_result_without_images_does_not_wait_for_the_calls_before_it():
    _, results = await run_two_calls(2, 0)
    assert [r["result"] for r in results] == ["0 pictures", "2 pictures"]
    assert [r["images_unsent"] for r in results] == [[], ["", ""]]
