"""Images in tool messages, made ready for a model: which models see, size and count caps.

A transcript tool message may carry ``images`` (``{"mime_type", "data", "description"}``,
base64 data). Before a provider puts them in its native shape, :func:`prepare` decides what
is sent: only PNG, JPEG, GIF and WebP; large pictures downscaled (Pillow, when installed);
at most :data:`MAX_PER_TURN` per batch of tool results; none at all for a model that reads
text only. Every image left out is named in the message's text, so the model knows.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import re
from collections.abc import Mapping
from typing import Any

SENDABLE = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: Longest side, in pixels, of an image sent to a model; larger ones are shrunk to it.
MAX_SIDE = 1568
#: Most bytes of one image after shrinking (providers refuse images above ~5 MB).
MAX_BYTES = 3_500_000
#: Most images sent with one batch of tool results (the answers to one model turn).
MAX_PER_TURN = 4

_TEXT_ONLY = re.compile(
    r"^(gpt-3\.5|gpt-4-(0314|0613|32k)|gpt-4$|o1-mini|o3-mini|text-|davinci|babbage"
    r"|deepseek-(chat|reasoner|r1|v[23]|coder)|claude-(instant|2)"
    r"|smollm|qwen3(?!.*vl)|qwen2\.5(?!.*vl)|qwen2(?!.*vl)|qwq|llama2|llama3(\.[0-3])?(?!.*vision)"
    r"|codellama|mistral(?!-small3\.[12])|mixtral|phi[1-4]?(?!.*vision)|tinyllama|gemma2?(?!3)\b"
    r"|gpt-oss|granite3|command-r|starcoder)",
    re.IGNORECASE,
)


def sees_images(provider: str, model: str) -> bool:
    """Whether a model takes images: the ``local`` model and models known to read text
    only do not; any other model is trusted to."""
    if provider == "local":
        return False
    name = model.rsplit("/", 1)[-1]
    return _TEXT_ONLY.search(name) is None


def prepare(messages: list[dict[str, Any]], sees: bool) -> list[dict[str, Any]]:
    """``messages`` with every tool message's images made ready for the model.

    The result's tool messages carry ``images`` only when there are images to send; the
    text of each one names what was not sent and why. The input is not changed.
    """
    out: list[dict[str, Any]] = []
    sent_this_turn = 0
    for message in messages:
        if message.get("role") != "tool":
            sent_this_turn = 0
            out.append(message)
            continue
        images = message.get("images") or ()
        if not images:
            out.append(message)
            continue
        kept: list[dict[str, str]] = []
        notes: list[str] = []
        for number, image in enumerate(images, 1):
            label = image.get("description") or f"image {number}"
            reason = unsent_reason(image, sees, sent_this_turn)
            if reason:
                notes.append(f"[{label}: {reason}]")
                continue
            ready, _ = ready_image(image.get("mime_type", ""), image.get("data", ""))
            kept.append({**ready, "description": label})
            sent_this_turn += 1
        content = "\n".join([message.get("content") or "", *notes]).strip("\n")
        trimmed = {k: v for k, v in message.items() if k != "images"}
        trimmed["content"] = content or "(no output)"
        if kept:
            trimmed["images"] = kept
        out.append(trimmed)
    return out


def unsent_reason(image: Mapping[str, Any], sees: bool, sent_this_turn: int) -> str:
    """Why ``image`` does not go to the model (``""`` when it does), given how many images
    of the same batch of tool results are sent before it."""
    if not sees:
        return "not shown, this model reads text only"
    if sent_this_turn >= MAX_PER_TURN:
        return f"not sent, at most {MAX_PER_TURN} images per turn"
    _, problem = ready_image(image.get("mime_type", ""), image.get("data", ""))
    return f"not sent, {problem}" if problem else ""


@functools.lru_cache(maxsize=64)
def ready_image(mime_type: str, data: str) -> tuple[dict[str, str], str]:
    """``({"mime_type", "data"}, "")`` fit to send, or ``({}, why not)``."""
    if mime_type not in SENDABLE:
        return {}, f"models take PNG, JPEG, GIF or WebP, not {mime_type or 'an unknown type'}"
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return {}, "its data is not valid base64"
    shrunk = _shrink(raw, mime_type)
    if shrunk is not None:
        raw, mime_type = shrunk
        data = base64.b64encode(raw).decode("ascii")
    if len(raw) > MAX_BYTES:
        return {}, f"{len(raw) / 1e6:.1f} MB is over the {MAX_BYTES / 1e6:.1f} MB limit"
    return {"mime_type": mime_type, "data": data}, ""


def _shrink(raw: bytes, mime_type: str) -> tuple[bytes, str] | None:
    """Downscale to :data:`MAX_SIDE` (and re-encode when still too big); ``None`` when the
    image already fits or Pillow is missing."""
    try:
        from PIL import Image as PILImage
    except ImportError:
        return None
    try:
        with PILImage.open(io.BytesIO(raw)) as picture:
            if max(picture.size) <= MAX_SIDE and len(raw) <= MAX_BYTES:
                return None
            if getattr(picture, "is_animated", False):
                return None
            picture.thumbnail((MAX_SIDE, MAX_SIDE))
            buffer = io.BytesIO()
            if mime_type == "image/png" and len(raw) <= MAX_BYTES * 4:
                picture.save(buffer, format="PNG", optimize=True)
                if buffer.tell() <= MAX_BYTES:
                    return buffer.getvalue(), "image/png"
                buffer = io.BytesIO()
            picture.convert("RGB").save(buffer, format="JPEG", quality=85)
            return buffer.getvalue(), "image/jpeg"
    except Exception:  # not decodable by Pillow: sent as it is, or refused by size
        return None
