"""The core -> sandbox POST /execute contract, as the python runner checks it.

The contract has one source, src/contract/execute-contract.ts (TypeBox). The
build writes its request schema and the details each source requires to
execute-contract.json next to this file (scripts/copy-python-runner.mjs), and
this module checks a request against that JSON: the same schema the core and
the Node runners compile, never a second copy kept by hand. It understands the
JSON Schema keywords that schema uses (type, properties, required,
additionalProperties, patternProperties, items, anyOf, const, minimum,
minLength, maxLength, maxItems, pattern, format date-time); a keyword it does
not know fails the build's test (execute_contract is checked against every
keyword of the generated file).
"""

import json
import math
import os
import re

_HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(_HERE, "execute-contract.json"), "r", encoding="utf-8") as _file:
    _CONTRACT = json.load(_file)

EXECUTE_PATH = _CONTRACT["executePath"]
REQUEST_ID_HEADER = _CONTRACT["requestIdHeader"]
# Sent by a core that traces the execution: the answer then carries what the runner timed (metrics.timings).
TRACE_ID_HEADER = _CONTRACT["traceIdHeader"]
_REQUEST_SCHEMA = _CONTRACT["request"]
_DETAILS_FOR_SOURCE = _CONTRACT["detailsForSource"]
# How much of a script exception's stack and message an answer carries (src/contract/error-stack.ts).
ERROR_BOUNDS = _CONTRACT["errorBounds"]
# The rules of the work tree's walk (src/shared/work-tree-walk.ts): its top directories, file and byte limits.
WORK_TREE_WALK = _CONTRACT["workTreeWalk"]

# The keywords this checker applies; the test compares them with the generated schema's.
KNOWN_KEYWORDS = frozenset(
    [
        "type", "properties", "required", "additionalProperties", "patternProperties", "items", "anyOf",
        "const", "minimum", "minLength", "maxLength", "maxItems", "pattern", "format",
    ]
)

# The one format the contract uses: an ISO 8601 timestamp (as the TypeBox registry in execute-contract.ts).
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")
_PATTERNS = {}


class ContractViolation(Exception):
    """The first place a value breaks the contract: a JSON pointer and what is wrong there."""

    def __init__(self, path, message):
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def _pattern(source):
    compiled = _PATTERNS.get(source)
    if compiled is None:
        compiled = _PATTERNS[source] = re.compile(source)
    return compiled


def _is_integer(value):
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) and math.isfinite(value)


_TYPES = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
}


def _check(schema, value, path):
    """Raises ContractViolation at the first place `value` breaks `schema`."""
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        raise ContractViolation(path or "/", f"Expected {kind}")
    if "const" in schema and value != schema["const"]:
        raise ContractViolation(path or "/", f"Expected {json.dumps(schema['const'])}")
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                _check(option, value, path)
                break
            except ContractViolation:
                continue
        else:
            raise ContractViolation(path or "/", "Expected one of the union's values")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise ContractViolation(path or "/", f"Expected string length greater or equal to {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ContractViolation(path or "/", f"Expected string length less or equal to {schema['maxLength']}")
        if "pattern" in schema and not _pattern(schema["pattern"]).search(value):
            raise ContractViolation(path or "/", f"Expected string to match '{schema['pattern']}'")
        if schema.get("format") == "date-time" and not _DATE_TIME.match(value):
            raise ContractViolation(path or "/", "Expected string to match 'date-time' format")
    if _is_number(value) and "minimum" in schema and value < schema["minimum"]:
        raise ContractViolation(path or "/", f"Expected number to be greater or equal to {schema['minimum']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ContractViolation(path or "/", f"Expected array length to be less or equal to {schema['maxItems']}")
        if "items" in schema:
            for index, item in enumerate(value):
                _check(schema["items"], item, f"{path}/{index}")
    if isinstance(value, dict):
        # In the schema's order, as TypeBox walks them: the first violation is at the place TypeBox names first.
        properties = schema.get("properties", {})
        required = schema.get("required", ())
        for name, item_schema in properties.items():
            if name in value:
                _check(item_schema, value[name], f"{path}/{name}")
            elif name in required:
                raise ContractViolation(f"{path}/{name}", "Expected required property")
        for name, item in value.items():
            if name in properties:
                continue
            inner = f"{path}/{name}"
            matched = False
            for source, item_schema in schema.get("patternProperties", {}).items():
                if _pattern(source).search(name):
                    matched = True
                    _check(item_schema, item, inner)
            if not matched and schema.get("additionalProperties") is False:
                raise ContractViolation(inner, "Unexpected property")


def validate_execute_request(value):
    """The first violation of the contract by an /execute request body, or None when it conforms."""
    try:
        _check(_REQUEST_SCHEMA, value, "")
    except ContractViolation as violation:
        return violation
    source = value["requestData"]["source"]
    details = _DETAILS_FOR_SOURCE.get(source)
    if details is not None and details not in value["requestData"]:
        return ContractViolation(f"/requestData/{details}", f'required when source is "{source}"')
    return None


def schema_keywords():
    """Every keyword the generated schema uses (for the test that this checker knows them all)."""
    found = set()

    def walk(schema):
        if not isinstance(schema, dict):
            return
        for keyword, inner in schema.items():
            found.add(keyword)
            if keyword in ("properties", "patternProperties"):
                for item in inner.values():
                    walk(item)
            elif keyword == "items":
                walk(inner)
            elif keyword == "anyOf":
                for item in inner:
                    walk(item)

    walk(_REQUEST_SCHEMA)
    return found
