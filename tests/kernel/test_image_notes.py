"""Tool cards say which images the model will not get, as the TOOL_RESULT chunk says it
(``images_unsent``, the client's own rule): the record predicts nothing itself."""

from __future__ import annotations

import base64
import io

from PIL import Image as PILImage

import aimu
import aimu.aio
from aimu.models.chunks import Phase, StreamChunk
from aimu.models.providers.scripted import ScriptedClient, call
from aimu.tools import Image, ToolResult
from aimu_jupyter.view._record import UNSEEN, RunRecord


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (4, 4), "green").save(buffer, format="PNG")
    return buffer.getvalue()


def image(description: str, mime_type: str = "image/png") -> dict:
    raw = png_bytes() if mime_type == "image/png" else b"<svg/>"
    return {
        "mime_type": mime_type,
        "data": base64.b64encode(raw).decode(),
        "description": description,
    }


def result(images: list[dict], unsent: list[str]) -> StreamChunk:
    content = {"id": "c1", "name": "shots", "result": "ok", "is_error": False,
               "images": images, "images_unsent": unsent}  # fmt: skip
    return StreamChunk(Phase.TOOL_RESULT, content, "agent", 1)


def note(chunk: StreamChunk, sees_images: bool = True) -> str:
    record = RunRecord("prompt", "openai:gpt-4o", sees_images=sees_images)
    record.apply(chunk)
    return record.events[0]["images_note"]


def test_the_card_names_each_image_the_chunk_says_will_not_be_sent():
    chunk = result([image("chart"), image("logo", "image/svg+xml")], ["", "not sent, an SVG"])
    assert note(chunk) == "logo: not sent, an SVG"
    assert note(result([image("chart")], [""])) == ""


def test_a_text_only_model_gets_the_unseen_note():
    assert note(result([image("chart")], ["not shown"]), sees_images=False) == UNSEEN


async def test_a_real_run_notes_what_its_client_will_not_send():
    @aimu.tool
    def shots() -> ToolResult:
        """Two pictures."""
        return ToolResult("two", (Image.from_bytes(png_bytes(), description="chart"),
                                  Image.from_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'/>",
                                                   description="logo")))  # fmt: skip

    client = ScriptedClient([call("shots"), "done"])
    record = RunRecord("prompt", client.name, sees_images=client.sees_images)
    async for chunk in aimu.aio.Agent(client, tools=[shots]).stream("look"):
        record.apply(chunk)
    (card,) = record.tool_cards()
    assert card["images_note"].startswith("logo: not sent, models take PNG, JPEG, GIF or WebP")
