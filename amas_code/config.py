"""Configuration: defaults.yaml, then ~/.config/amas/config.yaml (or $AMAS_HOME), then .amas/config.yaml."""

import os
import re
from pathlib import Path

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where built: 14x as fast


def read_yaml(path: Path) -> dict:
    """The mapping in a YAML file, {} when it is missing; ValueError with the path when it is broken."""
    try:
        data = (yaml.load(path.read_text(), LOADER) if path.is_file() else None) or {}
    except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} must hold a mapping of settings, not {type(data).__name__}")
    return data


def packaged(name: str) -> dict:
    """One of the YAML files of data that ship beside the code (defaults, prompts, rules, formats)."""
    return read_yaml(Path(__file__).with_name(name))


DEFAULT_CONFIG = packaged("defaults.yaml")
WORDS = packaged("words.yaml")  # names and messages: git's, the hints for a provider's errors
# A cloned repository's config may not set what runs a program, moves data out, skips a question or
# turns /undo off.
PERSONAL = ("api_base", "api_key", "browser_path", "auto_accept", "yolo", "checkpoint_on_edit")
SECRET, MASK = re.compile("key|token|secret|password"), "***"


def load(root: str = ".", overrides: dict | None = None) -> dict:
    """Defaults < user config < project config < command-line overrides (None means 'not given')."""
    if ".git" in Path(root).resolve().parts:  # amas would write into git's internals
        raise ValueError("Run amas in the project's work tree, not inside .git.")
    home = Path(os.environ.get("AMAS_HOME") or Path.home() / ".config" / "amas")
    user, project = read_yaml(home / "config.yaml"), read_yaml(Path(root) / ".amas" / "config.yaml")
    config = {**DEFAULT_CONFIG, **user, **{k: v for k, v in project.items() if k not in PERSONAL}}
    config.update({k: v for k, v in (overrides or {}).items() if v is not None})
    if not config["model"]:  # the first run: the model whose API key is set, if one is
        config["model"] = next((m for k, m in config["first_model"].items() if os.getenv(k)), "")
    for key, value in config.items():  # `yolo: "no"`: one line now, not a "yes" nobody gave
        kind = type(value if DEFAULT_CONFIG.get(key) is None else DEFAULT_CONFIG[key])
        if not isinstance(value, kind):
            raise ValueError(f"Setting {key}: expected {kind.__name__}, got {value!r}.")
    layers = [user, project, config]  # a project's api_key must not unmask the user's
    return {**config, "secrets": [v for c in layers for k, v in c.items() if SECRET.search(k)]}


def redact(text: str, config: dict) -> str:
    """Mask API keys and other secrets from the config and the environment."""
    secrets = [v for k, v in config.items() if SECRET.search(k)] + config.get("secrets", [])
    secrets += [v for k, v in os.environ.items() if k.endswith(("_API_KEY", "_TOKEN"))]
    for secret in sorted((s for s in secrets if isinstance(s, str) and len(s) > 3), key=len)[::-1]:
        text = text.replace(secret, MASK)
    return text
