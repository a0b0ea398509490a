"""A fake ``codex app-server``: speaks the app-server's JSON-RPC over stdio
(newline-delimited JSON, no ``"jsonrpc"`` member) and plays a script.

Run as ``python fake_codex.py SCRIPT LOG``. ``SCRIPT`` is a JSON file
``{"turns": [[step, ...], ...], "default": [step, ...]}``: the n-th
``turn/start`` seen by any fake sharing ``LOG`` plays ``turns[n]`` (then
``default``). ``LOG`` receives one JSON line per message read or event
(``{"pid", "dir": "in"|"event", ...}``), appended and flushed, so a test can
read what the adapter sent, across restarts.

Steps (objects):

* ``{"call": TOOL, "args": {...}, "id": CALL_ID}``: an ``item/tool/call``
  request; waits for the answer.
* ``{"answer_sender": TEXT}``: ``band_send_message`` of TEXT mentioning the
  sender of the turn's message.
* ``{"request": METHOD, "params": {...}}``: any server request; waits.
* ``{"flood": N, "method": METHOD}``: N server requests at once, then waits
  for every answer.
* ``{"reasoning": TEXT}``, ``{"command": CMD, "output": TEXT, "exit": N}``,
  ``{"message": TEXT}``: ``item/completed`` of that kind.
* ``{"usage": {"total": {...}, "last": {...}}}``: ``thread/tokenUsage/updated``.
* ``{"error": TEXT}``: an ``error`` notification (not retried).
* ``{"barrier": N}``: wait until N fakes sharing ``LOG`` reached a barrier.
* ``{"crash": CODE}``: exit at once.
* ``{"hang": true}``: never end the turn; ``turn/interrupt`` is ignored.
* ``{"wait_interrupt": true}``: wait for ``turn/interrupt``, then end the
  turn as ``interrupted``.
* ``{"status": S}``: end the turn with status S (default: ``completed``
  after the last step).

Options in the script: ``"ignore_term": true`` ignores SIGTERM (logging it);
``"ignore_eof": true`` keeps running when stdin closes; ``"resume_error":
true`` refuses ``thread/resume``; ``"turn_start_error": true`` refuses
``turn/start``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sys
import threading
import time
from typing import Any

SCRIPT_PATH, LOG_PATH = sys.argv[1], sys.argv[2]
with open(SCRIPT_PATH) as f:
    SCRIPT: dict[str, Any] = json.load(f)

inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
answers: dict[Any, dict[str, Any]] = {}
answered = threading.Condition()
interrupts: queue.Queue[dict[str, Any]] = queue.Queue()
out_lock = threading.Lock()
next_id = [1000]


def log(entry: dict[str, Any]) -> None:
    with open(LOG_PATH, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")
        f.flush()


def send(message: dict[str, Any]) -> None:
    with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def read_stdin() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        log({"dir": "in", **message})
        if "method" not in message:
            with answered:
                answers[message["id"]] = message
                answered.notify_all()
        elif message["method"] == "turn/interrupt":
            send({"id": message["id"], "result": {}})
            interrupts.put(message)
        else:
            inbox.put(message)
    inbox.put(None)


def request(method: str, params: dict[str, Any]) -> Any:
    next_id[0] += 1
    ident = next_id[0]
    send({"id": ident, "method": method, "params": params})
    return ident


def wait_answer(ident: Any) -> dict[str, Any]:
    with answered:
        while ident not in answers:
            answered.wait()
        return answers.pop(ident)


def read_log() -> list[dict[str, Any]]:
    with open(LOG_PATH) as f:
        return [json.loads(line) for line in f if line.strip()]


def turns_started() -> int:
    try:
        with open(LOG_PATH) as f:
            return sum(1 for line in f if '"method": "turn/start"' in line)
    except FileNotFoundError:
        return 0


SENDER = re.compile(r"^\[([^\]]+)\]: ", re.M)


def sender_of(items: list[dict[str, Any]]) -> list[str]:
    """The handle of the sender of the turn's message (its last input item,
    ``[Name (@handle)]: text``), as a mention list."""
    text = str(items[-1].get("text", "")) if items else ""
    found = SENDER.findall(text)
    if not found:
        return []
    name, _, handle = found[-1].partition(" (@")
    return [handle.removesuffix(")") or name]


def play(thread: str, turn: str, steps: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
    base = {"threadId": thread, "turnId": turn}
    status = "completed"
    for step in steps:
        if "answer_sender" in step:
            args = {"content": step["answer_sender"], "mentions": sender_of(items)}
            params = {**base, "tool": "band_send_message", "arguments": args, "callId": "call_s"}
            wait_answer(request("item/tool/call", params))
        elif "call" in step:
            params = {**base, "tool": step["call"], "arguments": step.get("args", {})}
            params["callId"] = step.get("id", "call_1")
            wait_answer(request("item/tool/call", params))
        elif "request" in step:
            wait_answer(request(step["request"], {**base, **step.get("params", {})}))
        elif "flood" in step:
            ids = [request(step["method"], dict(base)) for _ in range(step["flood"])]
            for ident in ids:
                wait_answer(ident)
            log({"dir": "event", "flood_answered": len(ids)})
        elif "barrier" in step:
            log({"dir": "event", "barrier": True})
            while sum(1 for m in read_log() if m.get("barrier")) < step["barrier"]:
                time.sleep(0.02)
        elif "reasoning" in step:
            item = {"type": "reasoning", "id": "r1", "summary": [step["reasoning"]], "content": []}
            send({"method": "item/completed", "params": {**base, "item": item}})
        elif "command" in step:
            item = {
                "type": "commandExecution",
                "id": step.get("id", "cmd_1"),
                "command": step["command"],
                "aggregatedOutput": step.get("output", ""),
                "exitCode": step.get("exit", 0),
                "status": "completed",
            }
            send({"method": "item/completed", "params": {**base, "item": item}})
        elif "message" in step:
            item = {"type": "agentMessage", "id": "m1", "text": step["message"]}
            send({"method": "item/completed", "params": {**base, "item": item}})
        elif "usage" in step:
            send(
                {
                    "method": "thread/tokenUsage/updated",
                    "params": {**base, "tokenUsage": step["usage"]},
                }
            )
        elif "error" in step:
            error = {"message": step["error"], "codexErrorInfo": "other"}
            send({"method": "error", "params": {**base, "error": error, "willRetry": False}})
        elif "crash" in step:
            log({"dir": "event", "crash": True})
            os._exit(int(step["crash"]))
        elif step.get("hang"):
            log({"dir": "event", "hang": True})
            while True:
                time.sleep(3600)
        elif step.get("wait_interrupt"):
            interrupts.get()
            status = "interrupted"
            break
        elif "status" in step:
            status = step["status"]
            break
    turn_obj: dict[str, Any] = {"id": turn, "items": [], "status": status}
    if status == "failed":
        turn_obj["error"] = {"message": "the model failed", "codexErrorInfo": "other"}
    send({"method": "turn/completed", "params": {"threadId": thread, "turn": turn_obj}})


def main() -> None:
    if SCRIPT.get("ignore_term"):
        signal.signal(signal.SIGTERM, lambda *_: log({"dir": "event", "term": True}))
    threading.Thread(target=read_stdin, daemon=True).start()
    threads = 0
    while True:
        message = inbox.get()
        if message is None:
            log({"dir": "event", "eof": True})
            if SCRIPT.get("ignore_eof"):
                while True:
                    time.sleep(3600)
            return
        method, ident, params = message["method"], message.get("id"), message.get("params", {})
        if method == "initialize":
            send({"id": ident, "result": {"userAgent": "fake"}})
        elif method == "thread/start":
            threads += 1
            send({"id": ident, "result": {"thread": {"id": f"thread-{os.getpid()}-{threads}"}}})
        elif method == "thread/resume":
            if SCRIPT.get("resume_error"):
                send({"id": ident, "error": {"code": -32600, "message": "no rollout found"}})
            else:
                send({"id": ident, "result": {"thread": {"id": params["threadId"]}}})
        elif method == "turn/start" and SCRIPT.get("turn_start_error"):
            send({"id": ident, "error": {"code": -32602, "message": "bad input"}})
        elif method == "turn/start":
            index = turns_started() - 1
            turns = SCRIPT.get("turns", [])
            steps = turns[index] if index < len(turns) else SCRIPT.get("default", [])
            turn = f"turn-{index}"
            send(
                {"id": ident, "result": {"turn": {"id": turn, "items": [], "status": "inProgress"}}}
            )
            play(params["threadId"], turn, steps, params.get("input", []))
        elif ident is not None:
            send({"id": ident, "error": {"code": -32601, "message": f"unknown method {method}"}})


if __name__ == "__main__":
    main()
