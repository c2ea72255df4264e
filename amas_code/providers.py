"""The one place that talks to a model: complete() around litellm, imported on first use."""

import os
import re
import time


class ProviderError(Exception):
    """A model call failed; str() is one line for the user."""

    exit_code = 1


class MissingKey(ProviderError):
    exit_code = 2


def load_litellm(delay: float = 0):
    """Import litellm; the REPL calls it with a delay so the prompt is drawn first."""
    time.sleep(delay)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it downloads a price map
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def check_key(litellm, config: dict) -> None:
    if config.get("api_key") or config.get("api_base"):
        return
    missing = litellm.validate_environment(model=config["model"]).get("missing_keys")
    if missing:
        where = "or api_key: in ~/.config/amas/config.yaml or .amas/config.yaml"
        raise MissingKey(f"No API key for {config['model']}: set {' or '.join(missing)}, {where}.")


def complete(messages: list, tools: list, config: dict, on_chunk=None) -> tuple[dict, dict]:
    """Stream one reply; returns (assistant message, usage) once the stream has ended."""
    litellm = load_litellm()
    check_key(litellm, config)
    import openai  # a litellm dependency: every litellm error derives from openai.APIError

    options = {key: config.get(key) for key in ("model", "api_key", "api_base")}
    options.update(stream=True, stream_options={"include_usage": True}, max_retries=0)
    try:
        stream = litellm.completion(messages=messages, tools=tools or None, **options)
        chunks = [relay(chunk, on_chunk) for chunk in stream]
    except openai.APIError as e:
        raise ProviderError(describe(e, config)) from None
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    return to_message(response.choices[0].message), dict(getattr(response, "usage", None) or {})


def relay(chunk, on_chunk):
    text = chunk.choices[0].delta.content if chunk.choices else None
    if text and on_chunk:
        on_chunk(text)
    return chunk


def to_message(message) -> dict:
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
    ]
    reply = {"role": "assistant", "content": message.content or ""}
    return {**reply, "tool_calls": calls} if calls else reply


def describe(error: Exception, config: dict) -> str:
    """One line naming what failed, without litellm's prefixes, tracebacks or the API key."""
    text = " ".join(str(getattr(error, "message", None) or error).split()).split(" Traceback")[0]
    text = re.sub(r"(litellm\.)?\w+(Error|Exception)\s*[:-]\s*", "", text)
    if "connection error" in text.lower():
        text = f"cannot connect to {config.get('api_base') or 'the provider'} ({text})"
    if config.get("api_key"):
        text = text.replace(config["api_key"], "***")
    return f"{type(error).__name__} from {config['model']}: {text[:300]}"
