"""What a component script returned or raised, as the resultType + data of an /execute answer.

The rules are the jit-runner's (src/runners/kit/script-result.ts), so a
component answers alike in either language:

- a dict with a numeric `statusCode` is an HTTP response (`headers`, `body`,
  `isBase64Encoded`); a body that is neither a string nor None is sent as JSON
  with a JSON content type, and a body of bytes is sent as base64 (Python's own
  case: JavaScript scripts encode it themselves);
- any other JSON value is `generic` (None for nothing);
- an exception with a string `code` is the app's error (`code`, its message,
  `status` or `statusCode`, `details`); any other is UHLP_SCRIPT_EXCEPTION with
  the exception's type and message and, as `stack`, the traceback's frames of
  the script's own files (paths relative to the app directory, most recent
  first, the contract's format: src/contract/error-stack.ts), bounded;
- what cannot be sent as JSON (a set, an object, NaN) is UHLP_SCRIPT_BAD_RESULT,
  and so is what JSON could say but UTF-8 cannot: a str holding a lone
  surrogate ("\ud800"), which Python allows and the answer's UTF-8 does not.
  Found here, it is the script's bad result; found when the answer is written,
  it would end the answer, and the sandbox with every execution it runs;
- a message of the runner's own (an exception's) holding one is sent escaped.

`data_json` is the data already encoded, as `str` when it is ASCII and as its
UTF-8 `bytes` otherwise: the answer is spliced from it, so a large result is
encoded once.
"""

import base64
import json
import math
import os
import re
import traceback

from execute_contract import ERROR_BOUNDS


class ScriptResult:
    __slots__ = ("result_type", "data", "data_json", "metrics")

    def __init__(self, result_type, data, data_json=None, metrics=None):
        self.result_type = result_type
        self.data = data
        # Compact JSON, non-ASCII kept as UTF-8: the answer's bytes are its UTF-8.
        self.data_json = data_json if data_json is not None else _encode_own(data)
        self.metrics = metrics

    def with_metrics(self, metrics):
        return ScriptResult(self.result_type, self.data, self.data_json, {**(self.metrics or {}), **metrics})


def encode_json(value):
    """JSON of `value` as the answer sends it (str when ASCII, else UTF-8 bytes), or raises
    ValueError/TypeError (RecursionError for a cycle) when it has none; UnicodeEncodeError,
    a ValueError, for a lone surrogate."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text if text.isascii() else text.encode("utf-8")


def _encode_own(data):
    """JSON of data the runner built (an error, a response): a lone surrogate of a script's message is escaped, not fatal."""
    try:
        return encode_json(data)
    except UnicodeEncodeError:
        return json.dumps(data, allow_nan=False, separators=(",", ":"))


def _safe_json(value):
    try:
        return encode_json(value)
    except (TypeError, ValueError, RecursionError):
        return None


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value):
    """A header value as JavaScript's String() would write it, for answers alike in both runners."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    return str(value)


def script_error(code, message, status=500, details=None):
    data = {"code": code, "message": message, "status": status}
    if details is not None:
        data["details"] = details
    return ScriptResult("error", data)


def result_from_value(value):
    """Maps a returned value. Never raises."""
    if isinstance(value, dict) and _is_number(value.get("statusCode")):
        return _http_response(value)
    data = None if value is None else value
    data_json = _safe_json(data)
    if data_json is None:
        return script_error("UHLP_SCRIPT_BAD_RESULT", "the returned value is not JSON-serializable")
    return ScriptResult("generic", data, data_json)


def _http_response(value):
    status_code = value["statusCode"]
    if not (math.isfinite(status_code) and float(status_code).is_integer() and 100 <= status_code <= 599):
        return script_error("UHLP_SCRIPT_BAD_RESULT", f"statusCode must be an integer 100-599, got {_text(status_code)}")
    headers = {}
    if isinstance(value.get("headers"), dict):
        for name, item in value["headers"].items():
            if item is None:
                continue
            headers[str(name)] = [_text(part) for part in item] if isinstance(item, (list, tuple)) else _text(item)
    encoding = "base64" if value.get("isBase64Encoded") is True else "utf8"
    body = value.get("body")
    if isinstance(body, (bytes, bytearray, memoryview)):
        body, encoding = base64.b64encode(bytes(body)).decode("ascii"), "base64"
    elif body is not None and not isinstance(body, str):
        # A structured body is sent as JSON: handlers written in the Lambda style often forget to encode it.
        body = _safe_json(body)
        if body is None:
            return script_error("UHLP_SCRIPT_BAD_RESULT", "body is not JSON-serializable")
        if not any(name.lower() == "content-type" for name in headers):
            headers["content-type"] = "application/json; charset=utf-8"
    data = {"statusCode": int(status_code), "headers": headers, "bodyEncoding": encoding}
    if body is not None:
        data["body"] = body
    data_json = _safe_json(data)
    if data_json is None:
        return script_error("UHLP_SCRIPT_BAD_RESULT", "the response cannot be sent as UTF-8 (a lone surrogate in a header or the body)")
    return ScriptResult("httpResponse", data, data_json)


def result_from_exception(error, app_dir=None):
    """Maps a raised exception. Never raises. `app_dir` is the script's app directory: a script exception keeps its frames there."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and code != "":
        message = getattr(error, "message", None)
        if not isinstance(message, str):
            message = str(error)
        data = {"code": code, "message": message}
        details = getattr(error, "details", None)
        if details is not None and _safe_json(details) is not None:
            data["details"] = details
        status = getattr(error, "status", None)
        if not _is_number(status):
            status = getattr(error, "statusCode", None)
        if _is_number(status) and math.isfinite(status) and float(status).is_integer():
            data["status"] = int(status)
        return ScriptResult("error", data)
    # Python's own messages often need their type to make sense (a KeyError's is just the key).
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a __str__ that raises leaves the type alone
        text = ""
    message = f"{type(error).__name__}: {text}" if text else type(error).__name__
    if app_dir is None:
        return script_error("UHLP_SCRIPT_EXCEPTION", message)
    result = script_error("UHLP_SCRIPT_EXCEPTION", _neutral(_scrub(message[: ERROR_BOUNDS["messageChars"] * 4], app_dir), ERROR_BOUNDS["messageChars"]))
    stack = script_stack(error, app_dir)
    if stack is not None:
        result.data["stack"] = stack
        result.data_json = _encode_own(result.data)
    return result


# C0 and C1 controls (and DEL, and the two Unicode line separators): what could move a cursor or end a log line.
_CONTROLS = re.compile("[\u0000-\u001f\u007f-\u009f\u2028\u2029]")


def _neutral(text, limit):
    """`text` without controls (each one a U+FFFD), at most `limit` characters (cut with an ellipsis)."""
    clean = _CONTROLS.sub("\ufffd", text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "\u2026"


def _scrub(text, app_dir):
    """`text` with the app directory's absolute path made relative."""
    return text.replace(app_dir + os.sep, "")


def script_stack(error, app_dir):
    """The traceback's frames in the app directory's files, most recent first, as the contract's text; None when there are none."""
    prefix = app_dir + os.sep
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # noqa: BLE001 - no readable traceback is no stack
        return None
    lines = []
    used = 0
    for frame in reversed(frames):
        if not isinstance(frame.filename, str) or not frame.filename.startswith(prefix):
            continue
        place = f"{_neutral(frame.filename[len(prefix):], 512)}:{frame.lineno}"
        column = getattr(frame, "colno", None)
        if isinstance(column, int):
            # Python counts columns from 0, V8 (and the contract) from 1.
            place += f":{column + 1}"
        name = frame.name if isinstance(frame.name, str) and frame.name != "<module>" else ""
        line = f"at {_neutral(name, 200)} ({place})" if name else f"at {place}"
        if len(lines) >= ERROR_BOUNDS["stackFrames"] or used + len(line) + 1 > ERROR_BOUNDS["stackChars"]:
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines) if lines else None


def runner_error(code, message):
    return script_error(code, message)
