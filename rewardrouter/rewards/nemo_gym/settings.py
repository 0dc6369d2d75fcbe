"""The settings of a ``nemo_gym`` term, read from the term's ``kwargs`` at compile time.

Example (NeMo Gym's ``equivalence_rule`` resources server, started by the router in the
interpreter that has NeMo Gym installed)::

    answer:
      kind: nemo_gym
      kwargs:
        server:
          python: /opt/gym/.venv/bin/python      # NeMo Gym needs Python 3.12 or newer
          config:                                 # NeMo Gym's own config of one server
            equivalence_rule:
              resources_servers:
                equivalence_rule: {entrypoint: app.py, grading_rule: exact}
        label_field: expected_answer             # the verify request field the label fills

or, for a server already running: ``url: http://127.0.0.1:8000``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rewardrouter.remote.settings import EndpointSettings
from rewardrouter.rewards.model_input import max_response_chars_field


class ServerSettings(BaseModel):
    """A NeMo Gym resources server the router starts, in an interpreter of NeMo Gym's."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    python: str = Field(
        description="The Python interpreter that has NeMo Gym installed (a path, or a command "
        "on PATH); NeMo Gym's releases need Python 3.12 or newer.",
    )
    config: dict[str, Any] | None = Field(
        default=None,
        description="NeMo Gym's own config of the server: `{instance: {resources_servers: "
        "{server: {entrypoint: app.py, ...its settings}}}}`, as its YAML files write it.",
    )
    config_path: str | None = Field(
        default=None,
        description="A NeMo Gym config YAML file holding the server (its agents and datasets are "
        "ignored); instead of `config`.",
    )
    instance: str | None = Field(
        default=None,
        description="Which resources server of the config, when it holds several.",
    )
    startup_timeout: float = Field(
        default=180.0, gt=0, description="Seconds the server may take to start and answer."
    )

    @model_validator(mode="after")
    def _one_config(self) -> ServerSettings:
        if (self.config is None) == (self.config_path is None):
            raise ValueError("give the server's `config` or its `config_path`, one of them")
        return self


class NemoGymSettings(EndpointSettings):
    """Which NeMo Gym resources server grades the samples, how to reach it, and what a sample's
    verify request holds."""

    url: str | None = Field(  # type: ignore[assignment]
        default=None,
        description="The base URL of a resources server already running (its `/verify` is "
        "posted to); or `server:` to have the router start one.",
    )
    server: ServerSettings | None = Field(
        default=None, description="A resources server the router starts, and stops with it."
    )
    label_field: str | None = Field(
        default="expected_answer",
        description="The verify request field the sample's label fills (null: none). The "
        "sample's metadata fields are sent beside it, as the dataset row's own fields.",
    )
    max_response_chars: int = max_response_chars_field()
    refuse_special_tokens: bool = Field(
        default=True,
        description="A response that writes a chat template's marker is `invalid`, never sent: "
        "NeMo Gym's judge servers show it to a model inside their own prompt.",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:  # type: ignore[override]
        return None if url is None else EndpointSettings._http_url(url)

    @model_validator(mode="after")
    def _one_authorization(self) -> NemoGymSettings:
        if (self.url is None) == (self.server is None):
            raise ValueError(
                "give the resources server's `url`, or the `server` the router starts; one of them"
            )
        if self.url is not None:
            EndpointSettings._one_authorization(self)  # type: ignore[operator]
        return self
