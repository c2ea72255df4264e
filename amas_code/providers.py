"""The one place that talks to a model: complete() around litellm, imported on first use."""

import os
import re
import time

from amas_code import ui
from amas_code.config import redact

RETRY = "RateLimitError Timeout APIConnectionError InternalServerError ServiceUnavailableError"
HINTS = {"AuthenticationError": "check the API key", "NotFoundError": "check the model name"}
WHERE = ", or api_key: in ~/.config/amas/config.yaml or .amas/config.yaml."
CONTEXT = re.compile(r"(?i)context.{0,20}(length|window|limit)|too many tokens|prompt is too long")


class ProviderError(Exception):
    """A model call failed, or the model is looping; str() is one line for the user.
    kind: 'key', 'tools', 'context' or ''."""

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
    """Stream one reply, trying each of `fallback_models` when the model fails; (message, usage)."""
    litellm = load_litellm()
    models = [config["model"], *(config.get("fallback_models") or [])]
    request = {key: config.get(key) for key in ("api_key", "api_base")}
    request.update(messages=messages, tools=tools or None, stream=True, max_retries=0)
    request["stream_options"] = {"include_usage": True}
    for model in models:
        try:
            check_key(litellm, {**config, "model": model})
            return stream(litellm, request, {**config, "model": model}, on_chunk)
        except ProviderError as e:
            if model == models[-1] or e.kind:
                raise
            ui.warning(f"{e}; trying {models[models.index(model) + 1]}")


def stream(litellm, request: dict, config: dict, on_chunk) -> tuple[dict, dict]:
    """One streamed call, retried once after a short pause when it failed before any output."""
    import openai  # a litellm dependency: every litellm error derives from openai.APIError

    for attempt in (1, 2):
        chunks = []
        try:
            for chunk in litellm.completion(**request, model=config["model"]):
                chunks.append(chunk)
                if on_chunk and chunk.choices and chunk.choices[0].delta.content:
                    on_chunk(chunk.choices[0].delta.content)
            break
        except openai.APIError as e:
            if attempt == 2 or chunks or type(e).__name__ not in RETRY.split():
                raise classify(e, config) from None
            time.sleep(config.get("retry_delay", 1.0))
    response = litellm.stream_chunk_builder(chunks, messages=request["messages"])
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
    kind = "context" if name == "ContextWindowExceededError" or CONTEXT.search(text) else ""
    tools_refused = name == "BadRequestError" and re.search(r"tool|function", text, re.I)
    kind = kind or ("tools" if tools_refused else "")
    if "connection error" in text.lower():
        text = f"cannot connect to {config.get('api_base') or 'the provider'} ({text})"
    text = redact(f"{name} from {config['model']}: {text[:300]}", config)
    return ProviderError(text + (f" ({HINTS[name]})" if name in HINTS else ""), kind)
