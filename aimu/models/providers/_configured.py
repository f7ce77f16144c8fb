"""The bookkeeping of a client built from options: what it was given, so that ``clone()``
rebuilds it and setting ``default_generate_kwargs`` lasts; whether it was told the model
sees images.

The OpenAI, Anthropic, Ollama and local clients keep their constructor's arguments in
``_init`` (model aside) and check their sampling defaults in :meth:`_check_defaults`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from aimu._checks import flag
from aimu.models.base import ModelClient


class ConfiguredClient(ModelClient):
    """A client that can be rebuilt from ``model`` and the options it was given."""

    _init: dict[str, Any]
    _defaults: Mapping[str, Any]

    def _configure(self, model: str, init: dict[str, Any]) -> None:
        """Keep ``model`` and the constructor's options; check ``sees_images`` there."""
        self.model = model
        self._init = init
        sees = init.get("sees_images")
        self._sees_images = None if sees is None else flag(sees, "sees_images")

    def clone(self) -> Self:
        return type(self)(self.model, **self._init)  # type: ignore[call-arg]

    def _take_defaults(self, kwargs: dict[str, Any]) -> None:
        self._defaults = self._check_defaults(kwargs)
        self._init["default_generate_kwargs"] = kwargs

    def _check_defaults(self, kwargs: dict[str, Any]) -> Mapping[str, Any]:
        """The standing sampling options ``kwargs`` make, checked the provider's way."""
        raise NotImplementedError
