"""List prices per model, and the money a run's token usage costs.

    aimu.prices["openai:gpt-4o-mini"]                 # Price(input=0.15, output=0.6, ...)
    aimu.prices["openai:my-ft-model"] = (0.3, 1.2)     # US dollars per million tokens
    aimu.prices["openai:my-ft-model"] = (0.3, 1.2, 0.15, 0.6)   # with Batch API prices

The built-in table holds the providers' list prices per million input / output tokens as read
on :data:`READ_ON`, and applies only where the provider's own API serves the model (an
OpenAI-compatible server elsewhere that names a model ``gpt-4o-mini`` is not billed by
OpenAI). A price you set applies wherever the model runs, under ``provider:model`` or the
client's full name (``openai:qwen3@http://127.0.0.1:8000/v1``). Batch APIs bill half the
list price at both providers; a price set with two numbers gets that discount too. A model
without a price has no cost: tokens are shown, never a made-up number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

#: When the built-in prices were read from the providers' published price lists.
READ_ON = "2026-03"

#: The providers' batch APIs bill this share of the list price.
BATCH_SHARE = 0.5

_OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens, at list price and through the provider's batch API."""

    input: float
    output: float
    batch_input: float
    batch_output: float

    def cost(self, usage: Mapping[str, Any], *, batch: bool = False) -> float:
        """What ``usage`` (``input_tokens`` / ``output_tokens``) costs at this price."""
        rates = (self.batch_input, self.batch_output) if batch else (self.input, self.output)
        tokens = (usage.get("input_tokens") or 0, usage.get("output_tokens") or 0)
        return sum(rate * count for rate, count in zip(rates, tokens, strict=True)) / 1e6


def _listed(input_price: float, output_price: float) -> Price:
    return Price(input_price, output_price, input_price * BATCH_SHARE, output_price * BATCH_SHARE)


_BUILT_IN: dict[str, Price] = {
    "openai:gpt-5": _listed(1.25, 10.0),
    "openai:gpt-5-mini": _listed(0.25, 2.0),
    "openai:gpt-5-nano": _listed(0.05, 0.40),
    "openai:gpt-4.1": _listed(2.0, 8.0),
    "openai:gpt-4.1-mini": _listed(0.40, 1.60),
    "openai:gpt-4.1-nano": _listed(0.10, 0.40),
    "openai:gpt-4o": _listed(2.50, 10.0),
    "openai:gpt-4o-mini": _listed(0.15, 0.60),
    "openai:o3": _listed(2.0, 8.0),
    "openai:o4-mini": _listed(1.10, 4.40),
    "anthropic:claude-opus-4-5": _listed(5.0, 25.0),
    "anthropic:claude-opus-4-1": _listed(15.0, 75.0),
    "anthropic:claude-sonnet-4-5": _listed(3.0, 15.0),
    "anthropic:claude-sonnet-4": _listed(3.0, 15.0),
    "anthropic:claude-haiku-4-5": _listed(1.0, 5.0),
    "anthropic:claude-3-5-haiku": _listed(0.80, 4.0),
}


class Prices(MutableMapping[str, Price]):
    """The price table: the built-in list prices under the ones you set."""

    def __init__(self) -> None:
        self._set: dict[str, Price] = {}

    def __getitem__(self, name: str) -> Price:
        if name in self._set:
            return self._set[name]
        return _BUILT_IN[name]

    def __setitem__(self, name: str, price: Any) -> None:
        self._set[_check_name(name)] = _check_price(name, price)

    def __delitem__(self, name: str) -> None:
        del self._set[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**_BUILT_IN, **self._set})

    def __len__(self) -> int:
        return len({**_BUILT_IN, **self._set})

    def for_client(self, client: Any) -> Price | None:
        """The price of ``client``'s model (a :class:`~aimu.ModelClient`), or ``None``."""
        provider, model = getattr(client, "provider", ""), getattr(client, "model", "")
        undated = _DATED.sub("", model)
        for name in (getattr(client, "name", ""), f"{provider}:{model}", f"{provider}:{undated}"):
            if name in self._set:
                return self._set[name]
        if not _official(client):
            return None
        return _BUILT_IN.get(f"{provider}:{model}") or _BUILT_IN.get(f"{provider}:{undated}")


def _official(client: Any) -> bool:
    host = _OFFICIAL_HOSTS.get(getattr(client, "provider", ""))
    url = getattr(client, "base_url", None)
    return host is not None and isinstance(url, str) and urlparse(url).hostname == host


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or ":" not in name:
        raise KeyError(f"name a price by 'provider:model' (e.g. 'openai:my-model'), not {name!r}")
    return name


def _check_price(name: str, price: Any) -> Price:
    if isinstance(price, Price):
        return price
    numbers = tuple(price) if isinstance(price, tuple | list) else ()
    if len(numbers) not in (2, 4) or not all(
        isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n) and n >= 0
        for n in numbers
    ):
        raise ValueError(
            f"the price of {name} is (input, output) US dollars per million tokens, or "
            f"(input, output, batch input, batch output), not {price!r}"
        )
    if len(numbers) == 2:
        return _listed(*numbers)
    return Price(*numbers)


#: The price table ``aimu.prices`` refers to.
prices = Prices()


def format_money(dollars: float) -> str:
    """``$0.42``; amounts under a cent keep two significant digits (``$0.0031``)."""
    if dollars >= 0.01 or dollars == 0:
        return f"${dollars:,.2f}"
    return f"${dollars:.2g}" if dollars >= 1e-4 else f"${dollars:.1e}"
