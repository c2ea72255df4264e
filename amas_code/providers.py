"""The one place that talks to a model: complete() around litellm, imported on first use."""

import ast
import json
import os
import re
import signal
from contextlib import suppress

from amas_code.config import WORDS, packaged, redact

FORMATS = packaged("formats.yaml")
# what may follow bare JSON on its line; litellm's words for programmers in an error
ALONE, NOTES = (re.compile(FORMATS[key]) for key in ("alone", "notes"))


class ProviderError(Exception):
    """A model call failed; str() is one line for the user.
    kind: 'key', 'tools' or ''."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind, self.exit_code = kind, 2 if kind == "key" else 1


def complete(messages: list, tools: list | None, config: dict, on_chunk: object = None) -> tuple:
    """Stream one reply; returns (message, usage). A request that fails before any output (a rate
    limit, a 5xx, a dropped connection) is retried once by the provider's client. litellm (2-5 s,
    190 MiB) is imported only when a model is called, with Ctrl-C ignored until it is whole."""
    if not config["model"]:
        raise ProviderError(WORDS["no_key"], "key")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # else it downloads a price map
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # half imported, it would fail
    import litellm
    import openai  # a litellm dependency: every litellm error derives from openai.APIError

    signal.signal(signal.SIGINT, handler)
    litellm.suppress_debug_info = True
    request = {key: config.get(key) for key in ("api_key", "api_base", "model", "timeout")}
    request.update(messages=messages, tools=tools or None, stream=True, max_retries=1)
    chunks = []
    try:
        for chunk in litellm.completion(**request, stream_options={"include_usage": True}):
            chunks.append(chunk)
            if on_chunk and chunk.choices and chunk.choices[0].delta.content:
                on_chunk(chunk.choices[0].delta.content)
    except openai.APIError as e:
        raise classify(e, config) from None
    response = litellm.stream_chunk_builder(chunks, messages=messages)
    return to_message(response.choices[0].message), dict(getattr(response, "usage", None) or {})


def spent(model: str, tokens: dict) -> str | None:
    """A turn's tokens, sent and received, and what they cost, when litellm prices the model."""
    from litellm import cost_per_token  # loaded with the first reply

    with suppress(Exception):  # litellm's only word for a model it does not price
        return WORDS["spent"].format(**tokens, cost=sum(cost_per_token(model, **tokens)))


def to_message(message: object) -> dict:
    """The reply as a plain message dict: role, content ("" for none) and tool calls if any."""
    reply = message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True)
    return {**reply, "content": reply.get("content") or ""}


def classify(error: Exception, config: dict) -> ProviderError:
    """One line naming what failed (litellm's text less its notes to programmers), without secrets."""
    name = type(error).__name__
    text = NOTES.sub("", " ".join(str(getattr(error, "message", None) or error).split()))
    kind = next((k for k, rx in FORMATS["kinds"].items() if re.search(rx, f"{name}: {text}")), "")
    text = redact(f"{name} from {config.get('api_base') or config['model']}: {text[:300]}", config)
    # words.yaml's hint for its kind or class; for a missing key, litellm's text names its variable
    return ProviderError(text + (WORDS["hints"].get(kind) or WORDS["hints"].get(name, "")), kind)


def native(model: str) -> bool:
    """Whether a model calls tools natively: its family (formats.yaml), or litellm says so."""
    from litellm import supports_function_calling  # loaded with the first reply

    return bool(re.match(FORMATS["native"], model)) or supports_function_calling(model)


def written_calls(text: str, types: dict) -> list[dict]:
    """Tool calls written as text, in any family's format, never inside reasoning: formats.yaml's
    rewrites turn each family's markup into JSON, then each JSON object (or list of them) naming a
    known tool under a usual key is a call, or JSON arguments after a tool's name, where a call
    `stands` (not quoted nor cited). `types` maps each tool's name to its parameters' types."""
    for r in FORMATS["rewrite"]:  # `find`: a pattern or its pieces, joined; `as:`, or `pair:`
        text = re.sub("".join(r["find"]) + FORMATS["value"], lambda m: as_json(m, r, types), text)
    found, end = [], 0
    stands = re.compile("".join(FORMATS["stands"]).replace("NAMES", "|".join(types)))
    for start in (m.start() for m in re.finditer(r"{|\[\s*{", text) if m.start() >= end):
        try:
            data, end = json.JSONDecoder().raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            continue
        at = stands.search(text, max(start - 200, 0), start) or {"quoted": "where no call stands"}
        data = [] if at["quoted"] or not (at["marked"] or ALONE.match(text, end)) else data
        for item in data if isinstance(data, list) else [data]:
            item = item if isinstance(item, dict) else {}
            item = item["function"] if isinstance(item.get("function"), dict) else item  # OpenAI's
            name = next((item[k] for k in FORMATS["name"] if isinstance(item.get(k), str)), None)
            args = next((item[k] for k in FORMATS["arguments"] if k in item), {})
            name, args = (name, args) if name else (at["name"], item)  # JSON after its name
            args = json.dumps(args) if isinstance(args, dict) else args
            found += [(name, args)] if name in types and isinstance(args, str) else []
    return [{"function": {"name": name, "arguments": args}} for name, args in found]


def as_json(call: re.Match, rule: dict, types: dict) -> str:
    """What a rewrite makes of one match: a JSON string value as it is (a file's content may hold a
    call's markup: text to write), an `as:` template filled, or a call written with its arguments one
    by one as the JSON text the reader then reads; the call's own text when its values cannot be
    read (a Python call of names: prose, not a call)."""
    if call["value"] or "as" in rule:
        return call[0] if call["value"] else call.expand(rule["as"])
    declared, pairs = types.get(call["name"], {}), re.finditer(rule["pair"], call["args"] or "")
    try:
        args = {m[1]: typed(m[m.lastindex], declared.get(m[1]), rule) for m in pairs}
        return FORMATS["as_json"] % json.dumps({"name": call["name"], "arguments": args})
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return call[0]


def typed(value: str, kind: type | None, rule: dict) -> object:
    """A value written as text, as its parameter's type: a string keeps its text, a JSON scalar (3,
    true, null) given for any other is read as JSON, anything else stays text. In a Python call
    every value is a literal: JSON's scalars (Olmo 3 writes them) or Python's."""
    python = rule.get("python")
    scalar = (kind is not str or python) and re.fullmatch(FORMATS["scalar"], value)
    return json.loads(value.lower()) if scalar else ast.literal_eval(value) if python else value
