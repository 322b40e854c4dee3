"""An ONNX model read and written at the protobuf wire level: its top-level fields (the store's content digest
leaves the producer's out), the main graph's nodes in their order, the same model with every node output made a
graph output, and a one-node model that initialises a runtime. A runtime environment has no `onnx` package (only
the runtime and numpy), so the few fields this needs are read here from the wire format itself.

Fields used (onnx.proto): ModelProto.graph = 7; GraphProto.node = 1, .initializer = 5, .input = 11, .output = 12,
.value_info = 13; NodeProto.input = 1, .output = 2, .name = 3, .op_type = 4, .domain = 7; ValueInfoProto.name = 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

Field = Tuple[int, int, bytes]  # (number, wire type, the raw bytes of the whole field: key and value)


class WireError(ValueError):
    """Bytes that do not read as an ONNX model."""


@dataclass(frozen=True)
class Node:
    """One node of the main graph, where it stands in the graph's (topological) order."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]


def _varint(data: bytes, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fields(data: bytes) -> Iterator[Tuple[int, int, bytes, bytes]]:
    """Each field of a message: (number, wire type, its payload, the whole field's raw bytes)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, end = _varint(data, pos)
            payload = data[pos:end]
        elif wire == 1:
            end = pos + 8
            payload = data[pos:end]
        elif wire == 2:
            length, pos = _varint(data, pos)
            end = pos + length
            payload = data[pos:end]
        elif wire == 5:
            end = pos + 4
            payload = data[pos:end]
        else:
            raise WireError(f"wire type {wire} (field {number}) is not one ONNX uses")
        if end > len(data):
            raise WireError(f"field {number} runs past the end of the message")
        pos = end
        yield number, wire, payload, data[start:end]


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | 2) + _encode_varint(len(payload)) + payload


def _text(payload: bytes) -> str:
    return payload.decode("utf-8", errors="replace")


def _graph(model: bytes) -> bytes:
    found = [payload for number, wire, payload, _ in fields(model) if number == 7 and wire == 2]
    if not found:
        raise WireError("no graph in the model (ModelProto.graph, field 7)")
    return found[-1]


def _node(index: int, payload: bytes) -> Node:
    values: Dict[int, List[str]] = {1: [], 2: [], 3: [], 4: [], 7: []}
    for number, wire, value, _ in fields(payload):
        if number in values and wire == 2:
            values[number].append(_text(value))
    last = {n: (v[-1] if v else "") for n, v in values.items()}
    return Node(index, last[3], last[4], last[7], tuple(values[1]), tuple(values[2]))


def nodes(model: bytes) -> List[Node]:
    """The main graph's nodes in the order the graph holds them (ONNX requires a topological one)."""
    return [_node(i, p) for i, p in enumerate(p for n, w, p, _ in fields(_graph(model)) if n == 1 and w == 2)]


def _names(graph: bytes, number: int) -> List[str]:
    """The names of a graph's inputs, outputs or value_info (ValueInfoProto.name), or its initializers' (field 8)."""
    out = []
    for n, wire, payload, _ in fields(graph):
        if n == number and wire == 2:
            field_no = 8 if number == 5 else 1
            out += [_text(v) for k, w, v, _ in fields(payload) if k == field_no and w == 2][-1:]
    return out


def graph_outputs(model: bytes) -> List[str]:
    return _names(_graph(model), 12)


def exposed(model: bytes, only: Optional[Sequence[str]] = None) -> Tuple[bytes, List[str]]:
    """The model with each node output (or each of `only`) a graph output too, and the names it added.

    An added output carries the type its value_info gives it where the exporter wrote one, else its name alone (the
    runtimes infer the type). Outputs already in the graph, and empty optional outputs, are left as they are.
    """
    graph = _graph(model)
    present: Set[str] = set(_names(graph, 12)) | set(_names(graph, 11)) | set(_names(graph, 5))
    typed = {}
    for n, wire, payload, _ in fields(graph):
        if n == 13 and wire == 2:
            name = [_text(v) for k, w, v, _ in fields(payload) if k == 1 and w == 2]
            if name:
                typed[name[-1]] = payload
    wanted = list(only) if only is not None else [o for node in nodes(model) for o in node.outputs]
    added = []
    extra = b""
    for name in wanted:
        if name and name not in present:
            present.add(name)
            added.append(name)
            extra += _bytes_field(12, typed.get(name, _bytes_field(1, name.encode("utf-8"))))
    out = b""
    for number, wire, _, raw in fields(model):
        out += _bytes_field(7, graph + extra) if number == 7 and wire == 2 else raw
    return out, added


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3) + _encode_varint(value)


def tiny_model() -> bytes:
    """A one-node model, y = x + x over one float32 (opset 13, IR 7): what initialises a runtime before the graph
    measured, written here because a runtime environment has no `onnx` to write it with."""

    def value_info(name: str) -> bytes:
        dim = _bytes_field(1, _varint_field(1, 1))  # TensorShapeProto.dim {dim_value: 1}
        tensor = _varint_field(1, 1) + _bytes_field(2, dim)  # elem_type FLOAT, shape
        return _bytes_field(1, name.encode()) + _bytes_field(2, _bytes_field(1, tensor))

    node = _bytes_field(1, b"x") + _bytes_field(1, b"x") + _bytes_field(2, b"y") + _bytes_field(4, b"Add")
    graph = _bytes_field(1, node) + _bytes_field(2, b"tiny")
    graph += _bytes_field(11, value_info("x")) + _bytes_field(12, value_info("y"))
    opset = _bytes_field(1, b"") + _varint_field(2, 13)
    return _varint_field(1, 7) + _bytes_field(7, graph) + _bytes_field(8, opset)
