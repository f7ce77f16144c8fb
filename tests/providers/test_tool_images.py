"""Images from tools reach each provider in its native shape, capped, or as a placeholder."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image as PILImage
from provider_wire import anthropic_turn, ollama_turn, openai_turn

import aimu
import aimu.aio
from aimu.models.providers._images import MAX_PER_TURN, MAX_SIDE, prepare
from aimu.models.providers._local_prompt import render
from aimu.tools import Image


def png(width: int = 40, height: int = 30, color: str = "red") -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


PLOT = png()
PLOT_B64 = base64.b64encode(PLOT).decode()


@aimu.tool
def snapshot() -> Image:
    """Take a picture of the chart."""
    return Image.from_bytes(PLOT, description="the chart")


@aimu.tool
def gallery(count: int) -> aimu.ToolResult:
    """Return several pictures.

    Args:
        count: How many.
    """
    images = tuple(
        Image.from_bytes(png(color="blue"), description=f"pic {i}") for i in range(count)
    )
    return aimu.ToolResult(f"{count} pictures", images)


async def run_agent(client, tools=(snapshot,), prompt="Look at the chart.") -> None:
    await aimu.aio.Agent(client, tools=list(tools)).run(prompt)


async def test_openai_gets_the_image_in_a_user_message_right_after_the_tool_messages(server):
    server.script(openai_turn("", [("call_1", "snapshot", "{}")]), openai_turn("A red square."))
    await run_agent(aimu.client(f"openai:gpt-4o@{server.url}/v1"))
    messages = server.requests[1].json["messages"]
    tool, follow_up = messages[-2], messages[-1]
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_1"
    assert "images" not in tool and isinstance(tool["content"], str)
    assert follow_up["role"] == "user"
    urls = [p["image_url"]["url"] for p in follow_up["content"] if p["type"] == "image_url"]
    assert urls == [f"data:image/png;base64,{PLOT_B64}"]
    labels = " ".join(p["text"] for p in follow_up["content"] if p["type"] == "text")
    assert "the chart" in labels and "call_1" in labels


async def test_anthropic_gets_image_blocks_inside_the_tool_result(server):
    server.script(
        anthropic_turn("", [("toolu_1", "snapshot", "{}")]), anthropic_turn("A red square.")
    )
    await run_agent(aimu.client("anthropic:claude-wire", base_url=server.url))
    last_turn = server.requests[1].json["messages"][-1]
    assert last_turn["role"] == "user"
    (result,) = last_turn["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    text, image = result["content"]
    assert text["type"] == "text"
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PLOT_B64},
    }


async def test_ollama_gets_the_images_field_on_the_tool_message(server):
    server.script(ollama_turn("", [("snapshot", {})]), ollama_turn("A red square."))
    await run_agent(aimu.client(f"ollama:qwen2.5vl:7b@{server.url}", retry_backoff=0.01))
    tool = server.requests[1].json["messages"][-1]
    assert tool["role"] == "tool"
    assert tool["images"] == [PLOT_B64]


async def test_a_text_only_model_gets_a_placeholder_and_no_image(server):
    server.script(openai_turn("", [("call_1", "snapshot", "{}")]), openai_turn("I cannot see."))
    await run_agent(aimu.client(f"openai:gpt-3.5-turbo@{server.url}/v1"))
    messages = server.requests[1].json["messages"]
    assert messages[-1]["role"] == "tool"
    assert "the chart: not shown, this model reads text only" in messages[-1]["content"]
    assert "image_url" not in server.requests[1].body.decode()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
async def test_a_client_told_its_model_reads_text_only_sends_no_image(server, provider):
    turns = {
        "openai": (openai_turn("", [("call_1", "snapshot", "{}")]), openai_turn("No.")),
        "anthropic": (anthropic_turn("", [("toolu_1", "snapshot", "{}")]), anthropic_turn("No.")),
        "ollama": (ollama_turn("", [("snapshot", {})]), ollama_turn("No.")),
    }
    specs = {
        "openai": (f"openai:my-model@{server.url}/v1", {}),
        "anthropic": ("anthropic:my-model", {"base_url": server.url}),
        "ollama": (f"ollama:my-model@{server.url}", {"retry_backoff": 0.01}),
    }
    spec, options = specs[provider]
    assert aimu.client(spec, **options).sees_images is True  # an unknown name is trusted
    blind = aimu.client(spec, sees_images=False, **options)
    assert blind.sees_images is False and blind.clone().sees_images is False
    server.script(*turns[provider])
    await run_agent(blind)
    sent = server.requests[1].body.decode()
    assert PLOT_B64 not in sent and "image_url" not in sent
    assert "the chart: not shown, this model reads text only" in sent


def test_sees_images_must_be_a_bool():
    with pytest.raises(ValueError, match="sees_images"):
        aimu.client("openai:m@http://127.0.0.1:9/v1", sees_images="no")


async def test_images_beyond_the_per_turn_cap_are_named_as_dropped(server):
    server.script(openai_turn("", [("call_1", "gallery", '{"count": 6}')]), openai_turn("Six."))
    await run_agent(aimu.client(f"openai:gpt-4o@{server.url}/v1"), tools=[gallery])
    messages = server.requests[1].json["messages"]
    parts = messages[-1]["content"]
    assert sum(p["type"] == "image_url" for p in parts) == MAX_PER_TURN
    assert f"pic 5: not sent, at most {MAX_PER_TURN} images per turn" in messages[-2]["content"]


def test_a_large_image_is_downscaled_before_it_is_sent():
    big = png(4000, 1000)
    message = {"role": "tool", "tool_call_id": "c", "name": "t", "content": "big"}
    message["images"] = [Image.from_bytes(big, description="wide").to_json()]
    (ready,) = prepare([message], sees=True)
    (image,) = ready["images"]
    with PILImage.open(io.BytesIO(base64.b64decode(image["data"]))) as shrunk:
        assert max(shrunk.size) == MAX_SIDE
        assert shrunk.size == (MAX_SIDE, MAX_SIDE // 4)


def test_svg_is_not_sent_to_models_and_says_why():
    svg = Image.from_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'/>", description="logo")
    assert svg.mime_type == "image/svg+xml"
    message = {"role": "tool", "tool_call_id": "c", "name": "t", "content": "drawn"}
    (ready,) = prepare([{**message, "images": [svg.to_json()]}], sees=True)
    assert "images" not in ready
    assert "logo: not sent, models take PNG, JPEG, GIF or WebP" in ready["content"]


def test_the_local_model_reads_the_placeholder_in_its_prompt():
    transcript = [
        {"role": "user", "content": "plot it"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "python", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "name": "python", "content": "[image 1]",
         "images": [{"mime_type": "image/png", "data": PLOT_B64, "description": "image 1"}]},
    ]  # fmt: skip
    prompt = render(transcript, None)
    assert "image 1: not shown, this model reads text only" in prompt[-1]["content"]
    assert PLOT_B64 not in str(prompt)


def test_image_from_file_reads_the_type_from_the_bytes(tmp_path):
    path = tmp_path / "chart.bin"
    path.write_bytes(PLOT)
    image = Image.from_file(path)
    assert (image.mime_type, image.description, image.data) == ("image/png", "chart.bin", PLOT_B64)


def test_image_from_bytes_refuses_bytes_that_are_no_image():
    with pytest.raises(ValueError, match="not a PNG, JPEG"):
        Image.from_bytes(b"hello")
    with pytest.raises(TypeError, match="takes bytes"):
        Image.from_bytes("aGVsbG8=")


async def test_the_transcript_tool_message_carries_the_images():
    from aimu.models.providers.scripted import ScriptedClient, call

    model = ScriptedClient([call("snapshot"), "Seen."])
    agent = aimu.aio.Agent(model, tools=[snapshot])
    await agent.run("look")
    tool = model.requests[1]["messages"][-1]
    assert tool["role"] == "tool"
    assert tool["images"] == [
        {"mime_type": "image/png", "data": PLOT_B64, "description": "the chart"}
    ]


async def test_the_tool_result_chunk_says_which_images_the_model_will_not_get(server):
    server.script(
        openai_turn("", [("call_1", "gallery", '{"count": 6}')]),
        openai_turn("", [("call_2", "snapshot", "{}")]),
        openai_turn("Done."),
    )
    agent = aimu.aio.Agent(aimu.client(f"openai:gpt-4o@{server.url}/v1"), tools=[gallery, snapshot])
    results = [c.content async for c in agent.stream("look") if c.phase == "tool_result"]
    capped = f"not sent, at most {MAX_PER_TURN} images per turn"
    assert results[0]["images_unsent"] == [""] * MAX_PER_TURN + [capped, capped]
    assert results[1]["images_unsent"] == [""]  # a new turn, a new cap


async def test_a_text_only_model_s_tool_result_chunk_names_every_image_unsent(server):
    server.script(openai_turn("", [("call_1", "snapshot", "{}")]), openai_turn("I cannot see."))
    agent = aimu.aio.Agent(aimu.client(f"openai:gpt-3.5-turbo@{server.url}/v1"), tools=[snapshot])
    results = [c.content async for c in agent.stream("look") if c.phase == "tool_result"]
    assert results[0]["images_unsent"] == ["not shown, this model reads text only"]
    assert len(results[0]["images"]) == 1
