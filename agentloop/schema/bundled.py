"""The draft 2020-12 meta-schemas, shipped with the package so a ``$ref`` to them needs no fetch.

A schema may ``$ref`` the meta-schema (``https://json-schema.org/draft/2020-12/schema``)
or one of its vocabulary meta-schemas (``.../draft/2020-12/meta/core`` and the
others in :data:`META_SCHEMAS`); :class:`~agentloop.schema.document.Document`
then reads the document from ``metaschemas/`` (package data, unmodified; see
``metaschemas/PROVENANCE.md``) instead of refusing the reference as remote.
Any other URI is still remote and refused.  Nothing is read at import time;
each file is parsed once, on first use, and never mutated.
"""

from __future__ import annotations

import json
import pkgutil
import threading
from typing import Any, Dict, Optional

__all__ = ["META_SCHEMA", "META_SCHEMAS", "VOCABULARIES", "load"]

#: The URI of the draft 2020-12 meta-schema (Core 8.1.1 ``$schema``).
META_SCHEMA = "https://json-schema.org/draft/2020-12/schema"

_META = "https://json-schema.org/draft/2020-12/meta/"

#: Each bundled document's URI (its ``$id``) -> its file under ``metaschemas/``.
META_SCHEMAS: Dict[str, str] = {
    META_SCHEMA: "schema.json",
    _META + "core": "core.json",
    _META + "applicator": "applicator.json",
    _META + "unevaluated": "unevaluated.json",
    _META + "validation": "validation.json",
    _META + "meta-data": "meta-data.json",
    _META + "format-annotation": "format-annotation.json",
    _META + "format-assertion": "format-assertion.json",
    _META + "content": "content.json",
}

#: The draft 2020-12 vocabularies (Core 8.1.2 ``$vocabulary``), the only ones a
#: bundled document may declare.
VOCABULARIES = frozenset(
    "https://json-schema.org/draft/2020-12/vocab/" + name
    for name in (
        "core",
        "applicator",
        "unevaluated",
        "validation",
        "meta-data",
        "format-annotation",
        "format-assertion",
        "content",
    )
)

_parsed: Dict[str, Any] = {}
_lock = threading.Lock()


def load(uri: str) -> Optional[Any]:
    """The parsed bundled document whose ``$id`` is ``uri``, or ``None`` when none is.

    Raises ``OSError`` or ``ValueError`` when the file is missing from the
    installation or is not JSON (the caller turns that into a SchemaError).
    """
    name = META_SCHEMAS.get(uri)
    if name is None:
        return None
    with _lock:
        if uri not in _parsed:
            data = pkgutil.get_data(__name__.rpartition(".")[0], "metaschemas/" + name)
            if data is None:  # a loader that cannot read package data
                raise OSError("no loader can read metaschemas/%s" % name)
            _parsed[uri] = json.loads(data.decode("utf-8"))
        return _parsed[uri]
