"""Text from a history made safe to write: every string the report writes comes from
files anyone can edit, so it is cleaned here and escaped for its format by the caller."""

from __future__ import annotations

import re
from html import escape
from typing import Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

# Characters XML 1.0 forbids even as references (C0 controls but tab, LF and CR; U+FFFE,
# U+FFFF), lone surrogates (json.loads accepts "\ud800"; no UTF-8 encoder writes it), and
# DEL, which HTML counts as a parse error.
_UNWRITABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def clean(value: Any) -> str:
    """str(value) with unwritable characters replaced by U+FFFD (visibly, not dropped)."""
    return _UNWRITABLE.sub("\ufffd", str(value))


def html_text(value: Any) -> str:
    """For HTML text and quoted attribute values (quotes escaped too)."""
    return escape(clean(value), quote=True)


def xml_text(value: Any) -> str:
    return xml_escape(clean(value))


def xml_attr(value: Any) -> str:
    """A quoted XML attribute value, quotes included."""
    return quoteattr(clean(value), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})
