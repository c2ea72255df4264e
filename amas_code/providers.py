"""The one place that talks to a model: complete() around litellm, imported on first use."""

import os
import re
import time

from amas_code.config import redact

RETRY = "RateLimitError Timeout APIConnectionError InternalServerError ServiceUnavailableError"
HINTS = {"AuthenticationError": "check the API key", "NotFoundError": "check the model name"}
WHERE = ", or api_key: in ~/.config/amas/config.yaml or .amas/config.yaml."


class ProviderError(Exception):
    """A model call failed; str() is one line for the user.
    kind: 'key', 'tools' or ''."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind, self.exit_code = kind, 2 if kind == "key" else 1


def load_litellm(delay: float = 0):
    """Import litellm; the REPL calls it with a delay so the prompt is drawn first."""
    time.sleep(delay)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it downloads a price map
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def check_key(litellm, config: dict) -> None:
    given = config.get("api_key") or config.get("api_base")
    missing = [] if given else litellm.validate_environment(model=config["model"])["missing_keys"]
    text = f"No API key for {config['model']}: set {' or '.join(missing)}{WHERE}"
    if missing:
        raise ProviderError(text, "key")


def complete(messages: list, tools: list | None, config: dict, on_chunk=None) -> tuple[dict, dict]:
    """Stream one reply, retried once after a short pause when it failed before any output;
    returns (message, usage)."""
    import openai  # a litellm dependency: every litellm error derives from openai.APIError

    litellm = load_litellm()
    check_key(litellm, config)
    request = {key: config.get(key) for key in ("api_key", "api_base", "model")}
    request.update(messages=messages, tools=tools or None, stream=True, max_retries=0)
    for attempt in (1, 2):
        chunks = []
        try:
            for chunk in litellm.completion(**request, stream_options={"include_usage": True}):
                chunks.append(chunk)
                if on_chunk and chunk.choices and chunk.choices[0].delta.content:
                    on_chunk(chunk.choices[0].delta.content)
            break
        except openai.APIError as e:
            if attempt == 2 or chunks or type(e).__name__ not in RETRY.split():
                raise classify(e, config) from None
            time.sleep(config.get("retry_delay", 1.0))
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    return to_message(response.choices[0].message), dict(getattr(response, "usage", None) or {})


def to_message(message) -> dict:
    reply = {"role": "assistant", "content": message.content or ""}
    calls = message.model_dump(include={"tool_calls"}, exclude_none=True).get("tool_calls")
    return {**reply, "tool_calls": calls} if calls else reply


def classify(error: Exception, config: dict) -> ProviderError:
    """One line naming what failed, without litellm's prefixes, tracebacks or secrets."""
    name = type(error).__name__
    text = " ".join(str(getattr(error, "message", None) or error).split()).split(" Traceback")[0]
    text = re.sub(r"(litellm\.)?\w+(Error|Exception)\s*[:-]\s*", "", text)
    if "connection error" in text.lower():
        text = f"cannot connect to {config.get('api_base') or 'the provider'} ({text})"
    tools_refused = name == "BadRequestError" and re.search(r"tool|function", text, re.I)
    kind = "tools" if tools_refused else ""
    text = redact(f"{name} from {config['model']}: {text[:300]}", config)
    return ProviderError(text + (f" ({HINTS[name]})" if name in HINTS else ""), kind)
