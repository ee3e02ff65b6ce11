"""Where the command line finds the API and its key, as the AWS CLI does.

In order: ``--profile NAME`` (or ``RESERVATIONS_PROFILE``) reads that profile of the config
file; otherwise ``RESERVATIONS_API_URL`` and ``RESERVATIONS_API_KEY``, each falling back to
the file's ``[default]`` profile. The file is ``RESERVATIONS_CONFIG_FILE``, else
``$XDG_CONFIG_HOME/reservations/config.toml`` (``~/.config/reservations/config.toml``)::

    [default]
    api_url = "http://127.0.0.1:3000"
    api_key = "vl_local_only_broker"

A key is never an argument (it would stay in shell history), never printed, never logged.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

URL_VARIABLE = "RESERVATIONS_API_URL"
KEY_VARIABLE = "RESERVATIONS_API_KEY"
PROFILE_VARIABLE = "RESERVATIONS_PROFILE"
FILE_VARIABLE = "RESERVATIONS_CONFIG_FILE"
DEFAULT_PROFILE = "default"


class SettingsProblem(Exception):
    """The settings cannot be had: what is missing, and where it was looked for."""


@dataclass(frozen=True)
class Settings:
    api_url: str
    api_key: str = field(repr=False)  # never shown


def config_file(env: Mapping[str, str]) -> Path:
    """The config file's path (it need not exist)."""
    if env.get(FILE_VARIABLE):
        return Path(env[FILE_VARIABLE]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config").expanduser()
    return base / "reservations" / "config.toml"


def profile_values(path: Path, name: str, required: bool) -> Mapping[str, Any]:
    """One profile's table of the file; empty when absent and not ``required``."""
    try:
        profiles = tomllib.loads(path.read_text()) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as unreadable:
        raise SettingsProblem(f"cannot read {path}: {unreadable}") from unreadable
    values = profiles.get(name)
    if isinstance(values, dict):
        return values
    if required:
        raise SettingsProblem(f"no profile [{name}] in {path}")
    return {}


def load_settings(profile: str | None, env: Mapping[str, str]) -> Settings:
    """The API's URL and key, by the order above."""
    path = config_file(env)
    if profile:
        values, url, key = profile_values(path, profile, required=True), None, None
    else:
        chosen = env.get(PROFILE_VARIABLE)
        values = profile_values(path, chosen or DEFAULT_PROFILE, required=bool(chosen))
        url, key = env.get(URL_VARIABLE), env.get(KEY_VARIABLE)
    url = url or values.get("api_url")
    key = key or values.get("api_key")
    if not isinstance(url, str) or not url or not isinstance(key, str) or not key:
        where = (
            f"profile [{profile}] of {path}" if profile
            else f"{URL_VARIABLE} and {KEY_VARIABLE}, or a [{DEFAULT_PROFILE}] profile in {path}"
        )  # fmt: skip
        raise SettingsProblem(f"no API URL and key: set them in {where}")
    return Settings(api_url=url.rstrip("/"), api_key=key)
