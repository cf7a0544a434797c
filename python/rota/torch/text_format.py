# A reader for protobuf text format (Rota's recipes), with file:line:col in its errors.
"""parse_text_format(text) → {field: [values]}, a value being a str (scalars unquoted, strings
unescaped) or a nested dict. Message wraps one parsed message with typed getters that take the
proto default. Enough of the format for recipes: messages in { } or < >, `name: value`,
`name { ... }`, strings in single or double quotes (adjacent strings concatenate), lists
`[a, b]`, `#` comments, optional `;`/`,` separators.
"""
import re

_TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<comment>\#[^\n]*) |
    (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*') |
    (?P<punct>[{}:;,\[\]<>]) |
    (?P<word>[^\s{}:;,\[\]<>"'\#]+)""", re.VERBOSE)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
            "b": "\b", "f": "\f", "v": "\v", "?": "?"}


class TextFormatError(ValueError):
    pass


def _unescape(body):
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt].encode()
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", body[i + 1:]).group(0)
            out.append(int(digits, 8) & 0xFF)
            i += 1 + len(digits)
        elif nxt in "xX":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:]).group(0)
            out.append(int(digits, 16))
            i += 2 + len(digits)
        else:
            raise TextFormatError(f"unknown escape \\{nxt}")
    return out.decode("utf-8")


def _tokens(text, source):
    pos, line, col = 0, 1, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise TextFormatError(f"{source}:{line}:{col}: unexpected character {text[pos]!r}")
        kind, value = m.lastgroup, m.group(0)
        if kind not in ("space", "comment"):
            yield kind, value, line, col
        newlines = value.count("\n")
        if newlines:
            line += newlines
            col = len(value) - value.rfind("\n")
        else:
            col += len(value)
        pos = m.end()


def parse_text_format(text, source="<text>"):
    tokens = list(_tokens(text, source))
    pos = 0

    def where(i):
        if i < len(tokens):
            return f"{source}:{tokens[i][2]}:{tokens[i][3]}"
        return f"{source}: at the end"

    def scalar():
        nonlocal pos
        kind, value, _, _ = tokens[pos]
        if kind == "string":
            parts = []
            while pos < len(tokens) and tokens[pos][0] == "string":
                parts.append(_unescape(tokens[pos][1][1:-1]))
                pos += 1
            return "".join(parts)
        if kind != "word":
            raise TextFormatError(f"{where(pos)}: expected a value, found {value!r}")
        pos += 1
        return value

    def message(closing, depth):
        nonlocal pos
        if depth > 64:
            raise TextFormatError(f"{where(pos)}: messages nested deeper than 64")
        fields = {}
        while True:
            if pos >= len(tokens):
                if closing is None:
                    return fields
                raise TextFormatError(f"{source}: missing {closing!r} at the end")
            kind, value, _, _ = tokens[pos]
            if closing is not None and value == closing and kind == "punct":
                pos += 1
                return fields
            if kind != "word":
                raise TextFormatError(f"{where(pos)}: expected a field name, found {value!r}")
            name = value
            pos += 1
            colon = pos < len(tokens) and tokens[pos][1] == ":"
            if colon:
                pos += 1
            if pos >= len(tokens):
                raise TextFormatError(f"{source}: field {name} has no value")
            values = []
            if tokens[pos][1] in ("{", "<"):
                end = "}" if tokens[pos][1] == "{" else ">"
                pos += 1
                values.append(message(end, depth + 1))
            elif tokens[pos][1] == "[":
                pos += 1
                while tokens[pos][1] != "]":
                    if tokens[pos][1] in ("{", "<"):
                        end = "}" if tokens[pos][1] == "{" else ">"
                        pos += 1
                        values.append(message(end, depth + 1))
                    else:
                        values.append(scalar())
                    if tokens[pos][1] == ",":
                        pos += 1
                pos += 1
            else:
                if not colon:
                    raise TextFormatError(f"{where(pos)}: expected ':' after {name}")
                values.append(scalar())
            fields.setdefault(name, []).extend(values)
            if pos < len(tokens) and tokens[pos][1] in (";", ","):
                pos += 1

    try:
        return message(None, 0)
    except IndexError:
        raise TextFormatError(f"{source}: unexpected end of text") from None


class Message:
    """Typed, default-aware read access to one parsed message."""

    def __init__(self, fields, path, source="recipe"):
        self.fields, self.path, self.source = fields or {}, path, source

    def has(self, name):
        return name in self.fields

    def _last(self, name, default):
        values = self.fields.get(name)
        if not values:
            return default
        if isinstance(values[-1], dict):
            raise ValueError(f"{self.source}: {self.path}.{name} is a message, not a value")
        return values[-1]

    def scalar(self, name, default):
        return self._last(name, default)

    def integer(self, name, default):
        v = self._last(name, None)
        if v is None:
            return default
        try:
            return int(v, 0)
        except ValueError:
            raise ValueError(f"{self.source}: {self.path}.{name}: not an integer: {v!r}") from None

    def number(self, name, default):
        v = self._last(name, None)
        if v is None:
            return default
        text = v.lower().rstrip("f") if not v.lower().startswith("inf") else v.lower()
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{self.source}: {self.path}.{name}: not a number: {v!r}") from None

    def boolean(self, name, default):
        v = self._last(name, None)
        if v is None:
            return default
        if v in ("true", "True", "t", "1"):
            return True
        if v in ("false", "False", "f", "0"):
            return False
        raise ValueError(f"{self.source}: {self.path}.{name}: not a bool: {v!r}")

    def strings(self, name):
        return [v for v in self.fields.get(name, []) if not isinstance(v, dict)]

    def integers(self, name):
        """A repeated integer field (`blocks: 1 blocks: 3` or `blocks: [1, 3]`)."""
        out = []
        for v in self.strings(name):
            try:
                out.append(int(v, 0))
            except ValueError:
                raise ValueError(f"{self.source}: {self.path}.{name}: not an integer: {v!r}") \
                    from None
        return out

    def message(self, name):
        values = self.fields.get(name)
        if values and not isinstance(values[-1], dict):
            raise ValueError(f"{self.source}: {self.path}.{name} is a value, not a message")
        path = name if self.path in ("", "recipe") else f"{self.path}.{name}"
        return Message(values[-1] if values else {}, path, self.source)
