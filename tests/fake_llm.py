"""A scripted OpenAI-compatible chat server on 127.0.0.1 for driving the real litellm in tests.

Each queued reply is a list of SSE chunk deltas, or an error `(status, body)`. Requests are recorded.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def text(content: str, pieces: int = 3) -> list:
    """A streamed text reply split into `pieces` chunks."""
    step = max(1, len(content) // pieces)
    return [{"content": content[i : i + step]} for i in range(0, len(content), step)] or [
        {"content": ""}
    ]


def tool(name: str, args: dict | str, call_id: str = "call_1", pieces: int = 3) -> list:
    """A streamed native tool call whose JSON arguments arrive split across chunks."""
    raw = args if isinstance(args, str) else json.dumps(args)
    step = max(1, len(raw) // pieces)
    first = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    rest = [
        {"index": 0, "function": {"arguments": raw[i : i + step]}} for i in range(0, len(raw), step)
    ]
    return [{"tool_calls": [first]}] + [{"tool_calls": [r]} for r in rest]


def tools(*calls: tuple) -> list:
    """Several tool calls in one reply: each call is (name, args, id)."""
    out = []
    for index, (name, args, call_id) in enumerate(calls):
        for delta in tool(name, args, call_id):
            for tc in delta["tool_calls"]:
                tc["index"] = index
            out.append(delta)
    return out


class FakeLLM:
    def __init__(self):
        self.reset()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # a client that hung up first (a timeout, Ctrl-C) is expected: no traceback on the test's stderr
        self.server.handle_error = lambda request, client_address: None
        # shutdown() waits for the loop to look: 0.5 s by default, for each server closed
        serve = lambda: self.server.serve_forever(poll_interval=0.02)  # noqa: E731
        threading.Thread(target=serve, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def reset(self) -> None:
        """As new: no replies queued, no requests seen, the usual usage figures. A module's tests
        share one server (its port), each starting from this."""
        self.replies: list = []
        self.requests: list[dict] = []
        self.usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}

    def queue(self, *replies) -> "FakeLLM":
        self.replies.extend(replies)
        return self

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(
                    {"body": body, "headers": dict(self.headers), "path": self.path}
                )
                reply = fake.replies.pop(0) if fake.replies else [{"content": "(no more replies)"}]
                if isinstance(reply, tuple):
                    return self._error(*reply)
                self._stream(
                    reply, cut=getattr(reply, "cut", False), stall=getattr(reply, "stall", 0)
                )

            def _error(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, deltas, cut=False, stall=0):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                finish = "tool_calls" if any("tool_calls" in d for d in deltas) else "stop"
                for i, delta in enumerate(deltas):
                    last = i == len(deltas) - 1 and not cut
                    self._send(
                        {"delta": delta, "index": 0, "finish_reason": finish if last else None}
                    )
                    self.wfile.flush()
                    time.sleep(stall if i == 0 else 0)  # a server that goes silent mid-answer
                if not cut:
                    self._send(None)
                    self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _send(self, choice):
                chunk = {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "fake",
                }
                chunk["choices"] = [choice] if choice else []
                if choice is None:
                    chunk["usage"] = fake.usage
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

        return Handler


class Cut(list):
    """A reply whose stream ends abruptly (no finish_reason, no [DONE])."""

    cut = True


class Stall(list):
    """A reply whose stream goes silent for `stall` seconds after its first chunk."""

    stall = 8
