"""A call's HTML timeline as a test reads it: its embedded turns, and what it would fetch."""

from __future__ import annotations

import json
import re


def embedded_turns(page: str) -> list[dict]:
    data = r'<script type="application/json" id="timeline-data">(.*?)</script>'
    found = re.search(data, page, re.S)
    assert found, "the page embeds its turns"
    return json.loads(found.group(1))


def outside_references(page: str) -> list[str]:
    """Everything in ``page`` that would make a browser fetch something from elsewhere."""
    patterns = [
        r"""(?:src|href|xlink:href|action|poster|srcset)\s*=\s*["']?\s*(?:https?:)?//[^"'\s>]*""",
        r"""@import[^;]*""",
        r"""url\(\s*["']?\s*(?:https?:)?//[^)]*\)""",
        r"""<link\b[^>]*>""",
        r"""<script\b[^>]*\bsrc\b[^>]*>""",
    ]
    return [m.group(0) for p in patterns for m in re.finditer(p, page, re.I)]
