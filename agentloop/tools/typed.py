"""A JSON Schema, and a converter back to Python values, from a typed function.

:func:`function_spec` reads a function's signature and docstring and returns
the tool's ``parameters`` schema together with ``convert``, which turns
validated JSON arguments into what the annotations say.  Both come from one
walk over the same type information, so they cannot disagree.

| annotation | schema | JSON -> Python |
| --- | --- | --- |
| ``int`` | ``{"type": "integer"}`` | ``2.0`` -> ``2`` |
| ``float`` | ``{"type": "number"}`` | ``2`` -> ``2.0`` |
| ``str``, ``bool``, ``None`` | ``string``, ``boolean``, ``null`` | as is |
| ``Any`` | ``{}`` | as is |
| ``Optional[T]``, ``Union[...]``, ``X | Y`` | ``{"type": [...]}`` or ``anyOf`` | the first member that fits (below) |
| ``List[T]``, ``list[T]`` | ``{"type": "array", "items": T}`` | a list |
| ``Tuple[A, B]`` | ``prefixItems`` with ``items: false`` and ``minItems`` | a tuple |
| ``Tuple[T, ...]`` | ``{"type": "array", "items": T}`` | a tuple |
| ``Dict[str, T]`` | ``{"type": "object", "additionalProperties": T}`` | a dict |
| ``Literal[...]`` | ``{"enum": [...]}`` (with ``type`` when all alike) | the literal itself |
| ``Enum`` subclass | ``{"enum": [values]}`` | the member |
| ``TypedDict`` | an object with ``required`` from its totality | a dict |
| dataclass | an object with ``required`` for fields without defaults | an instance |

A union's schema is ``{"type": [...]}`` when every member is a bare type, else ``anyOf``; a value
converts to the first member whose schema accepts it.

Objects built from a dataclass or ``TypedDict`` (and the parameters object)
have ``additionalProperties: false``.  A parameter or field with a default is
not required and its default (as JSON) appears as ``default``; the default
must itself fit the annotation.  A dataclass or ``TypedDict`` that contains
itself goes to ``$defs`` and is referenced with ``$ref``.  Descriptions come
from the docstrings (:mod:`agentloop.tools.docstrings`): the function's summary is
the tool's description, ``Args`` entries describe parameters, and a class's
``Attributes``/``Args`` entries describe its fields.

:func:`type_schema` does the same for one annotation (the loop's
``output_schema=SomeDataclass``).  An ``async def`` function is read exactly
like a sync one (its return annotation, as any function's, is not used).

Refused, with an error naming the parameter: no annotation, ``*args``,
``**kwargs``, positional-only parameters, and any annotation not in the table
(an arbitrary class, ``Sequence``, ``Set``, dict keys other than ``str``...).
Nothing is guessed.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import sys
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..canonical import canonical_text
from .context import context_parameter
from .docstrings import parse_docstring
from ..errors import ToolDefinitionError, UnrecordableError
from ..schema.values import json_equal
from ..schema.validator import Validator, compile_schema

__all__ = ["FunctionSpec", "function_spec", "type_schema"]

Conv = Optional[Callable[[Any], Any]]  # None means "the JSON value is already right"
Schema = Dict[str, Any]

_UNION_TYPE = getattr(types, "UnionType", None)  # X | Y, Python 3.10+
_ANNOTATED = getattr(typing, "Annotated", None)  # Python 3.9+
_SIMPLE = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


class _Refused(Exception):
    """An annotation that has no JSON Schema here; the message says why."""


@dataclass(frozen=True)
class FunctionSpec:
    """What :func:`function_spec` derives from a function."""

    name: str
    description: str
    parameters: Dict[str, Any]
    convert: Callable[[Dict[str, Any]], Dict[str, Any]]


def _to_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) else value


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _identity(value: Any) -> Any:
    return value


def _json_scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int, str))


def _enum_type(values: List[Any]) -> Optional[str]:
    """The one JSON type all ``values`` share, if they do (bool before int)."""
    kinds = set()
    for value in values:
        if isinstance(value, bool):
            kinds.add("boolean")
        elif isinstance(value, int):
            kinds.add("integer")
        elif isinstance(value, float):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("string")
        else:
            kinds.add("null")
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 else None


def _is_typeddict(tp: object) -> bool:
    # typing.is_typeddict is 3.10+; this is what it checks on every version.
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__") and hasattr(tp, "__annotations__")


def _required_marks(tp: type) -> Dict[str, bool]:
    """``Required[...]``/``NotRequired[...]`` (3.11+) read from the resolved annotations.

    CPython computes ``__required_keys__`` without resolving string
    annotations, so under ``from __future__ import annotations`` it misses
    these marks; resolving them here gives the right answer on every version.
    """
    required, not_required = getattr(typing, "Required", None), getattr(typing, "NotRequired", None)
    if required is None or not_required is None:
        return {}
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception:
        return {}
    marks: Dict[str, bool] = {}
    for name, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is required or origin is not_required:
            marks[name] = origin is required
    return marks


def _with_defs(schema: Schema, defs: Mapping[str, Any]) -> Schema:
    return dict(schema, **{"$defs": dict(defs)}) if defs else schema


class _Builder:
    """One walk over a function's annotations, building schema and converters together."""

    def __init__(self) -> None:
        self.defs: Dict[str, Schema] = {}
        self.def_names: Dict[type, str] = {}  # recursive classes -> their $defs name
        self.active: List[type] = []  # classes being expanded (for recursion)
        self.cells: Dict[type, List[Callable[[Any], Any]]] = {}
        self.pending: List[Callable[[Mapping[str, Any]], None]] = []  # run once $defs is final
        self.context: List[str] = []  # "parameter 'p'", "field 'x' of Point": where we are

    # -- dispatch -------------------------------------------------------

    def build(self, tp: Any) -> Tuple[Schema, Conv]:
        if tp is Any:
            return {}, None
        if tp is None or tp is type(None):
            return {"type": "null"}, None
        if tp in _SIMPLE:
            conv = {int: _to_int, float: _to_float}.get(tp)
            return {"type": _SIMPLE[tp]}, conv
        if hasattr(tp, "__supertype__") and callable(tp):  # typing.NewType
            return self.build(tp.__supertype__)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if _ANNOTATED is not None and origin is _ANNOTATED:
            return self.build(args[0])
        if origin is typing.Union or (_UNION_TYPE is not None and origin is _UNION_TYPE):
            return self._union(args)
        if origin is typing.Literal:
            return self._literal(args)
        if origin is list or tp is list:
            return self._list(args)
        if origin is tuple or tp is tuple:
            return self._tuple(args, bare=tp is tuple or tp is typing.Tuple)
        if origin is dict or tp is dict:
            return self._dict(args)
        if origin is not None:
            raise _Refused("%s is not supported (use List, Tuple, Dict, Optional, Union or Literal)" % _name(tp))
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self._enum(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._class(tp, dataclass_=True)
        if _is_typeddict(tp):
            return self._class(tp, dataclass_=False)
        if isinstance(tp, (str, typing.ForwardRef)):
            raise _Refused("the forward reference %r cannot be resolved" % (tp,))
        raise _Refused(
            "%s cannot be expressed as JSON Schema (supported: int, float, str, bool, None, "
            "Any, Optional, Union, List, Tuple, Dict[str, T], Literal, Enum, TypedDict, "
            "dataclasses)" % _name(tp)
        )

    # -- unions and literals ---------------------------------------------

    def _union(self, members: Tuple[Any, ...]) -> Tuple[Schema, Conv]:
        built = [self.build(member) for member in members]
        schemas = [schema for schema, _ in built]
        if all(list(s) == ["type"] and isinstance(s["type"], str) for s in schemas):
            names: List[str] = []
            for s in schemas:
                if s["type"] not in names:
                    names.append(s["type"])
            schema: Schema = {"type": names}
        else:
            schema = {"anyOf": schemas}
        convs = [conv for _, conv in built]
        if all(conv is None for conv in convs):
            return schema, None
        others = [(s, c) for (s, c), m in zip(built, members) if m is not type(None)]
        if len(others) == 1:  # Optional[T]: None, or T
            only = others[0][1]
            assert only is not None
            return schema, lambda v: None if v is None else only(v)
        choices: List[Tuple[Validator, Callable[[Any], Any]]] = []

        def finish(defs: Mapping[str, Any]) -> None:
            for member_schema, conv in built:
                choices.append((compile_schema(_with_defs(member_schema, defs)), conv or _identity))

        self.pending.append(finish)

        def convert_union(value: Any) -> Any:
            for validator, conv in choices:  # the first member that accepts the value
                if validator.is_valid(value):
                    return conv(value)
            return value

        return schema, convert_union

    def _literal(self, values: Tuple[Any, ...]) -> Tuple[Schema, Conv]:
        pairs: List[Tuple[Any, Any]] = []  # (JSON value, Python value)
        for value in values:
            json_value = value.value if isinstance(value, enum.Enum) else value
            if not _json_scalar(json_value):
                raise _Refused("Literal value %r is not a JSON scalar" % (value,))
            pairs.append((json_value, value))
        return self._choice([json_value for json_value, _ in pairs], pairs)

    def _enum(self, tp: "type[enum.Enum]") -> Tuple[Schema, Conv]:
        members = list(tp)
        if not members:
            raise _Refused("Enum %s has no members" % tp.__name__)
        for member in members:
            if not _json_scalar(member.value):
                raise _Refused(
                    "Enum %s member %s has a value that is not a JSON scalar: %r"
                    % (tp.__name__, member.name, member.value)
                )
        return self._choice([member.value for member in members], [(m.value, m) for m in members])

    def _choice(self, values: List[Any], pairs: List[Tuple[Any, Any]]) -> Tuple[Schema, Conv]:
        schema: Schema = {"enum": values}
        kind = _enum_type(values)
        if kind is not None:
            schema = {"type": kind, "enum": values}
        if not any(
            isinstance(python, enum.Enum) or (isinstance(python, (int, float)) and not isinstance(python, bool))
            for _, python in pairs
        ):
            return schema, None  # str, bool and None literals are their own JSON

        def convert_choice(value: Any) -> Any:
            for json_value, python in pairs:
                if json_equal(value, json_value):
                    return python
            return value

        return schema, convert_choice

    # -- containers -----------------------------------------------------

    def _list(self, args: Tuple[Any, ...]) -> Tuple[Schema, Conv]:
        if not args:
            return {"type": "array"}, None
        items, conv = self.build(args[0])
        schema: Schema = {"type": "array"}
        if items:
            schema["items"] = items
        if conv is None:
            return schema, None
        return schema, lambda v: [conv(x) for x in v]

    def _tuple(self, args: Tuple[Any, ...], bare: bool) -> Tuple[Schema, Conv]:
        if bare:
            return {"type": "array"}, tuple
        if args in ((), ((),)):  # Tuple[()] (spelled ((),) before Python 3.11)
            return {"type": "array", "maxItems": 0}, tuple
        if len(args) == 2 and args[1] is Ellipsis:
            items, conv = self.build(args[0])
            schema: Schema = {"type": "array"}
            if items:
                schema["items"] = items
            if conv is None:
                return schema, tuple
            return schema, lambda v: tuple(conv(x) for x in v)
        built = [self.build(arg) for arg in args]
        schema = {"type": "array", "prefixItems": [s for s, _ in built], "items": False, "minItems": len(built)}
        convs = [c or _identity for _, c in built]
        return schema, lambda v: tuple(c(x) for c, x in zip(convs, v))

    def _dict(self, args: Tuple[Any, ...]) -> Tuple[Schema, Conv]:
        if not args:
            return {"type": "object"}, None
        if args[0] is not str:
            raise _Refused("Dict keys must be str (JSON object keys are strings), got %s" % _name(args[0]))
        values, conv = self.build(args[1])
        schema: Schema = {"type": "object"}
        if values:
            schema["additionalProperties"] = values
        if conv is None:
            return schema, None
        return schema, lambda v: {k: conv(x) for k, x in v.items()}

    # -- classes --------------------------------------------------------

    def _class(self, tp: type, dataclass_: bool) -> Tuple[Schema, Conv]:
        if tp in self.active or tp in self.def_names:  # recursion: go through $defs
            if tp not in self.def_names:
                name = tp.__name__
                while name in self.defs or name in self.def_names.values():
                    name += "_"
                self.def_names[tp] = name
            cell = self.cells.setdefault(tp, [_identity])
            return {"$ref": "#/$defs/%s" % self.def_names[tp]}, lambda v: cell[0](v)
        self.active.append(tp)
        try:
            schema, conv = self._fields(tp, dataclass_)
        finally:
            self.active.pop()
        if tp in self.def_names:
            self.defs[self.def_names[tp]] = schema
            self.cells.setdefault(tp, [_identity])[0] = conv or _identity
            return {"$ref": "#/$defs/%s" % self.def_names[tp]}, conv
        return schema, conv

    def _fields(self, tp: type, dataclass_: bool) -> Tuple[Schema, Conv]:
        if dataclass_:  # before get_type_hints, which cannot read InitVar on 3.8
            initvars = [
                f.name
                for f in getattr(tp, "__dataclass_fields__", {}).values()
                if getattr(f, "_field_type", None) is getattr(dataclasses, "_FIELD_INITVAR", object())
                and f.default is dataclasses.MISSING
            ]
            if initvars:
                # __init__ needs it and fields() hides it: every call would fail.
                raise _Refused(
                    "dataclass %s has the InitVar %s without a default, which a schema cannot carry"
                    % (tp.__name__, initvars[0])
                )
        try:
            hints = typing.get_type_hints(tp)
        except Exception as exc:  # NameError and friends from unresolvable annotations
            raise _Refused("cannot resolve the annotations of %s: %s" % (tp.__name__, exc)) from None
        doc = parse_docstring(tp.__doc__)
        entries: List[Tuple[str, Any, bool, Any]] = []  # (name, annotation, required, default)
        if dataclass_:
            for f in dataclasses.fields(tp):
                if not f.init:
                    continue
                default = f.default
                required = default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                entries.append((f.name, hints[f.name], required, default))
        else:
            total = getattr(tp, "__total__", True)
            required_keys = getattr(tp, "__required_keys__", None)  # Python 3.9+
            marks = _required_marks(tp)
            for name, annotation in hints.items():
                required = name in required_keys if required_keys is not None else bool(total)
                required = marks.get(name, required)
                entries.append((name, annotation, required, dataclasses.MISSING))
        properties: Dict[str, Schema] = {}
        required_names: List[str] = []
        convs: Dict[str, Callable[[Any], Any]] = {}
        for name, annotation, required, default in entries:
            self.context.append("field %r of %s" % (name, tp.__name__))
            try:
                schema, conv = self.build(annotation)
                properties[name] = self.annotate(schema, doc.params.get(name), default)
            except _Refused as exc:
                raise _Refused("field %r of %s: %s" % (name, tp.__name__, exc)) from None
            finally:
                self.context.pop()
            if required:
                required_names.append(name)
            if conv is not None:
                convs[name] = conv
        schema = _object_schema(properties, required_names)

        if dataclass_:

            def make(value: Any) -> Any:
                return tp(**{k: convs[k](x) if k in convs else x for k, x in value.items()})

            return schema, make
        if not convs:
            return schema, None
        return schema, lambda value: {k: convs[k](x) if k in convs else x for k, x in value.items()}

    def annotate(self, schema: Schema, description: Optional[str], default: Any) -> Schema:
        """A copy of ``schema`` with its description and default (checked once $defs is final)."""
        schema = dict(schema)
        if description:
            schema["description"] = description
        if default is not dataclasses.MISSING and default is not inspect.Parameter.empty:
            value = _default_json(default)
            schema["default"] = value
            where = ": ".join(self.context)
            bare = {k: v for k, v in schema.items() if k != "default"}

            def check(defs: Mapping[str, Any]) -> None:
                error = compile_schema(_with_defs(bare, defs)).first_error(value)
                if error is not None:
                    problem = error.reason if error.path == "$" else str(error)
                    raise _Refused(
                        "%s: default %s does not fit the annotation: %s" % (where, canonical_text(value), problem)
                    )

            self.pending.append(check)
        return schema


def _object_schema(properties: Dict[str, Schema], required: List[str]) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _default_json(value: Any) -> Any:
    """A default as the JSON the model would send (Enum -> value, tuple -> list, dataclass -> object)."""
    if isinstance(value, enum.Enum):
        value = value.value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: _default_json(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    elif isinstance(value, (list, tuple)):
        value = [_default_json(item) for item in value]
    elif isinstance(value, dict):
        value = {key: _default_json(item) for key, item in value.items()}
    try:
        canonical_text(value)
    except UnrecordableError as exc:
        raise _Refused("default %r is not a JSON value: %s" % (value, exc.reason)) from None
    return value


def _name(tp: Any) -> str:
    if isinstance(tp, type) and getattr(tp, "__module__", "") == "builtins":
        return tp.__name__
    if isinstance(tp, type):
        return "class %s" % tp.__qualname__
    return repr(tp).replace("typing.", "")


class _Annotations:
    """Something :func:`typing.get_type_hints` can read one annotation from."""

    def __init__(self, annotations: Dict[str, Any]) -> None:
        self.__annotations__ = annotations


def _resolve(fn: Callable[..., Any], name: str, annotation: Any) -> Any:
    """The annotation with string forward references evaluated in ``fn``'s module.

    One parameter at a time, through a holder object rather than ``fn`` itself,
    so that Python 3.8-3.10 do not wrap ``x: int = None`` into ``Optional[int]``.
    """
    namespace = getattr(inspect.unwrap(fn), "__globals__", None)
    if namespace is None:
        namespace = vars(sys.modules.get(getattr(fn, "__module__", "") or "", types))
    try:
        return typing.get_type_hints(_Annotations({name: annotation}), globalns=dict(namespace))[name]
    except Exception as exc:
        raise _Refused("cannot resolve the annotation %r: %s: %s" % (annotation, type(exc).__name__, exc)) from None


def function_spec(
    fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None
) -> FunctionSpec:
    """Derive the schema, description and argument converter of ``fn`` (see the module docstring).

    Raises :class:`~agentloop.errors.ToolDefinitionError` naming the parameter
    whose annotation cannot be expressed.
    """
    tool_name = name if name is not None else getattr(fn, "__name__", repr(fn))
    if not callable(fn):
        raise ToolDefinitionError(tool_name, "fn must be callable")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(tool_name, "cannot read the signature: %s" % exc) from None
    doc = parse_docstring(inspect.getdoc(fn))
    skip = context_parameter(fn, tool_name)  # agentloop.tools.context: given by the loop, never in the schema
    builder = _Builder()
    properties: Dict[str, Schema] = {}
    required: List[str] = []
    convs: Dict[str, Callable[[Any], Any]] = {}
    current = ""
    try:
        for current, parameter in [item for item in signature.parameters.items() if item[0] != skip]:
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                raise _Refused("*%s cannot be passed as a JSON object member" % current)
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                raise _Refused("**%s cannot be described by a schema" % current)
            if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise _Refused("a positional-only parameter cannot be passed by name")
            if parameter.annotation is inspect.Parameter.empty:
                raise _Refused("has no annotation")
            builder.context = ["parameter %r" % current]
            schema, conv = builder.build(_resolve(fn, current, parameter.annotation))
            properties[current] = builder.annotate(schema, doc.params.get(current), parameter.default)
            if parameter.default is inspect.Parameter.empty:
                required.append(current)
            if conv is not None:
                convs[current] = conv
        current = ""  # from here on, messages carry their own context
        parameters = _object_schema(properties, required)
        if builder.defs:
            parameters["$defs"] = builder.defs
        for finish in builder.pending:
            finish(builder.defs)
    except _Refused as exc:
        where = "parameter %r: " % current if current else ""
        raise ToolDefinitionError(tool_name, where + str(exc)) from None

    def convert(arguments: Dict[str, Any]) -> Dict[str, Any]:
        if not convs:
            return arguments
        return {key: convs[key](value) if key in convs else value for key, value in arguments.items()}

    text = description if description is not None else doc.summary
    return FunctionSpec(tool_name, text, parameters, convert)


def type_schema(tp: Any, what: str = "output_schema") -> Tuple[Dict[str, Any], Callable[[Any], Any]]:
    """The JSON Schema of one annotation from the table above, and the converter
    from a validated JSON value to what the annotation says (a dataclass
    instance, a tuple, an Enum member...).

    Raises :class:`~agentloop.errors.ToolDefinitionError` naming ``what``
    when the annotation cannot be expressed.
    """
    builder = _Builder()
    builder.context = [what]
    try:
        schema, conv = builder.build(tp)
        schema = _with_defs(schema, builder.defs)
        for finish in builder.pending:
            finish(builder.defs)
    except _Refused as exc:
        raise ToolDefinitionError(what, str(exc)) from None
    return schema, conv or _identity
