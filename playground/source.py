"""Where things are in a team file, so that its problems name the file's own lines.

A problem in a team file is reported the way a compiler reports one:
``demo.yaml:37: team.members[1] (billing).ai.tts_type: ...``, the path to the
value in the file's own keys, with the line it is on and, for a member, its
id. ``Source`` holds what that takes: the file's name, the line of every key
and list item (from ``yaml.compose``, whose nodes keep their positions), and
labels for list items. It holds no values and checks nothing.

JSON is read the same way (YAML reads JSON); where that fails, or for a team
built in code, messages simply carry no line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

# A path to a value: mapping keys (str) and list indexes (int), from the file's root.
FieldPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Source:
    """The positions of a team file's keys and list items, by path."""

    file: str = ""
    lines: Mapping[FieldPath, int] = field(default_factory=dict)
    labels: Mapping[FieldPath, str] = field(default_factory=dict)
    # Keys given twice in one mapping: YAML keeps the last one without a word.
    repeated: tuple[FieldPath, ...] = ()

    @classmethod
    def read(cls, file: str, text: str, labels: Mapping[FieldPath, str] | None = None) -> Source:
        """The positions in ``text``, the contents of ``file`` (none if it does not compose)."""
        lines: dict[FieldPath, int] = {}
        repeated: list[FieldPath] = []
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            root = None
        if root is not None:
            _collect(root, (), lines, repeated, set())
        return cls(file, lines, dict(labels or {}), tuple(repeated))

    def line(self, path: FieldPath) -> int | None:
        """The line of ``path``, or of its nearest ancestor in the file (a missing key)."""
        for end in range(len(path), 0, -1):
            if (found := self.lines.get(path[:end])) is not None:
                return found
        return 1 if self.lines else None

    def at(self, path: FieldPath) -> str:
        """``file:line`` for ``path``, as much of it as is known."""
        line = self.line(path)
        if not self.file:
            return "" if line is None else f"line {line}"
        return self.file if line is None else f"{self.file}:{line}"

    def describe(self, path: FieldPath) -> str:
        """``path`` in the file's keys: ``team.members[1] (billing).ai.tts_type``."""
        text = ""
        for end, part in enumerate(path, start=1):
            if isinstance(part, int):
                text += f"[{part}]"
                if label := self.labels.get(path[:end]):
                    text += f" ({label})"
            else:
                text += f".{part}" if text else part
        return text or "(the file)"

    def problem(self, path: FieldPath, message: str) -> str:
        """One line naming where ``path`` is and what is wrong with it."""
        return ": ".join(p for p in (self.at(path), self.describe(path), message) if p)


def _collect(
    node: yaml.Node,
    path: FieldPath,
    lines: dict[FieldPath, int],
    repeated: list[FieldPath],
    ancestors: set[int],
) -> None:
    # An alias may point back at its own ancestor (``&a [*a]``): walk each node once per branch.
    if id(node) in ancestors:
        return
    ancestors = ancestors | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            child = (*path, str(key.value))
            if key.value in seen:
                repeated.append(child)
            seen.add(key.value)
            # YAML keeps the last of a repeated key, so its line is the one that counts.
            lines[child] = key.start_mark.line + 1
            _collect(value, child, lines, repeated, ancestors)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _collect(item, (*path, index), lines, repeated, ancestors)
