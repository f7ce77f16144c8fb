"""Tool cards say which images the model will not get, by the same rules the providers use."""

from __future__ import annotations

import base64
import io

from PIL import Image as PILImage

from aimu.models.chunks import Phase, StreamChunk
from aimu.models.providers._images import MAX_PER_TURN
from aimu_jupyter.view._record import UNSEEN, RunRecord


def png() -> str:
    buffer = io.BytesIO()
    PILImage.new("RGB", (4, 4), "green").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def image(description: str, mime_type: str = "image/png") -> dict:
    data = png() if mime_type == "image/png" else base64.b64encode(b"<svg/>").decode()
    return {"mime_type": mime_type, "data": data, "description": description}


def result(call_id: str, images: list[dict], iteration: int = 1) -> StreamChunk:
    content = {"id": call_id, "name": "shots", "result": "ok", "is_error": False, "images": images}
    return StreamChunk(Phase.TOOL_RESULT, content, "agent", iteration)


def notes(model: str, *chunks: StreamChunk, sees_images: bool | None = None) -> list[str]:
    record = RunRecord("prompt", model, sees_images=sees_images)
    for item in chunks:
        record.apply(item)
    return [card["images_note"] for card in record.events]


def test_a_model_that_sees_gets_no_note_for_a_png():
    assert notes("openai:gpt-4o", result("c1", [image("chart")])) == [""]


def test_a_text_only_model_gets_the_unseen_note():
    assert notes("openai:gpt-3.5-turbo", result("c1", [image("chart")])) == [UNSEEN]
    assert notes("local", result("c1", [image("chart")])) == [UNSEEN]


def test_what_the_client_was_told_about_its_model_decides_the_note():
    assert notes("openai:my-model", result("c1", [image("chart")])) == [""]
    assert notes("openai:my-model", result("c1", [image("chart")]), sees_images=False) == [UNSEEN]


def test_an_svg_is_named_as_not_sent():
    (note,) = notes("anthropic:claude-opus-4", result("c1", [image("logo", "image/svg+xml")]))
    assert note.startswith("logo: not sent, models take PNG, JPEG, GIF or WebP")


def test_images_past_the_per_turn_cap_are_named_and_the_next_turn_starts_afresh():
    first = result("c1", [image(f"pic {i}") for i in range(1, MAX_PER_TURN)])
    second = result("c2", [image("late 1"), image("late 2")])
    later = result("c3", [image("next turn")], iteration=2)
    assert notes("ollama:llava", first, second, later) == [
        "",
        f"late 2: not sent, at most {MAX_PER_TURN} images per turn",
        "",
    ]
