"""Reading an ORT-format model back into an ONNX graph, so onnxruntime optimises it at load.

onnxruntime runs an `.ort` file as it was saved: none of its graph optimisations (constant
folding, fusions) apply at load time. Moonshine's files in `moonshine-cpp` were saved with
their int8 weights dequantized by Cast → Mul → Add nodes, so every decoder step converted all
41 MB of weights to float again (~50 ms of a ~55 ms step on this machine). The same graph as
ONNX lets onnxruntime fold those nodes once and fuse the rest; this module does only the
translation (flatbuffer → protobuf), with onnxruntime's own reader of its format and `onnx`'s
builders, plus folding the dequantization of weights at the top of the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ort_to_onnx"]

# Attribute kinds in the ORT schema (AttributeType) have the same numbers as ONNX's.
_FLOAT, _INT, _STRING, _TENSOR, _GRAPH, _FLOATS, _INTS, _STRINGS, _TENSORS, _GRAPHS = range(1, 11)


def ort_to_onnx(path: Path, *, int8: bool = True):
    """The `.ort` model at `path` as an `onnx.ModelProto` with its weight dequantization folded
    (into int8 matrix products with `int8`, else into float weights)."""
    import onnx
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs import InferenceSession

    data = path.read_bytes()
    model = InferenceSession.InferenceSession.GetRootAs(data, 0).Model()
    if model is None:
        raise ValueError(f"{path.name} holds no model")
    opsets = [onnx.helper.make_opsetid(_text(model.OpsetImport(i).Domain()), model.OpsetImport(i).Version())
              for i in range(model.OpsetImportLength())]
    graph = _fold_dequantized_weights(_graph(model.Graph(), top=True), int8=int8)
    proto = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="companion ort_to_onnx")
    proto.ir_version = model.IrVersion()
    return proto


def _text(value: bytes | None) -> str:
    return value.decode() if value else ""


def _graph(fb, *, top: bool = False):
    import onnx

    types = {}
    for i in range(fb.NodeArgsLength()):
        arg = fb.NodeArgs(i)
        types[_text(arg.Name())] = arg
    initializers = [_tensor(fb.Initializers(i)) for i in range(fb.InitializersLength())]
    init_names = {t.name for t in initializers}
    nodes = [_node(fb.Nodes(i)) for i in range(fb.NodesLength())]
    # A graph's inputs may list its initializers (older IR): ONNX wants only the real inputs.
    inputs = [_value_info(types[name]) for name in (_text(fb.Inputs(i)) for i in range(fb.InputsLength()))
              if name not in init_names or not top]
    outputs = [_value_info(types[_text(fb.Outputs(i))]) for i in range(fb.OutputsLength())]
    return onnx.helper.make_graph(nodes, "graph", inputs, outputs, initializer=initializers)


def _value_info(arg):
    import onnx

    name = _text(arg.Name())
    kind = arg.Type()
    if kind is None or kind.ValueType() != 1:  # only tensors are inputs and outputs here
        return onnx.helper.make_empty_tensor_value_info(name)
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs import TensorTypeAndShape

    tensor = TensorTypeAndShape.TensorTypeAndShape()
    table = kind.Value()
    tensor.Init(table.Bytes, table.Pos)
    shape = None
    if tensor.Shape() is not None:
        shape = []
        for i in range(tensor.Shape().DimLength()):
            value = tensor.Shape().Dim(i).Value()
            if value is None or value.DimType() == 0:
                shape.append(None)
            elif value.DimType() == 1:
                shape.append(value.DimValue())
            else:
                shape.append(_text(value.DimParam()))
    return onnx.helper.make_tensor_value_info(name, tensor.ElemType(), shape)


def _tensor(fb):
    import onnx

    proto = onnx.TensorProto()
    proto.name = _text(fb.Name())
    proto.data_type = fb.DataType()
    proto.dims.extend(int(d) for d in (fb.DimsAsNumpy() if fb.DimsLength() else []))
    if fb.ExternalDataOffset() >= 0:
        raise ValueError(f"tensor {proto.name} keeps its data outside the model file")
    if fb.StringDataLength():
        proto.string_data.extend(fb.StringData(i) for i in range(fb.StringDataLength()))
    elif fb.RawDataLength():
        proto.raw_data = fb.RawDataAsNumpy().tobytes()
    return proto


def _node(fb):
    import onnx

    node = onnx.helper.make_node(
        _text(fb.OpType()),
        [_text(fb.Inputs(i)) for i in range(fb.InputsLength())],
        [_text(fb.Outputs(i)) for i in range(fb.OutputsLength())],
        name=_text(fb.Name()), domain=_text(fb.Domain()) or None,
    )
    for i in range(fb.AttributesLength()):
        node.attribute.append(_attribute(fb.Attributes(i)))
    return node


def _attribute(fb):
    import onnx

    name, kind = _text(fb.Name()), fb.Type()
    attr = onnx.AttributeProto()
    attr.name, attr.type = name, kind
    if kind == _FLOAT:
        attr.f = fb.F()
    elif kind == _INT:
        attr.i = fb.I()
    elif kind == _STRING:
        attr.s = fb.S() or b""
    elif kind == _TENSOR:
        attr.t.CopyFrom(_tensor(fb.T()))
    elif kind == _GRAPH:
        attr.g.CopyFrom(_graph(fb.G()))
    elif kind == _FLOATS:
        attr.floats.extend(float(x) for x in fb.FloatsAsNumpy())
    elif kind == _INTS:
        attr.ints.extend(int(x) for x in fb.IntsAsNumpy())
    elif kind == _STRINGS:
        attr.strings.extend(fb.Strings(i) for i in range(fb.StringsLength()))
    elif kind == _TENSORS:
        attr.tensors.extend(_tensor(fb.Tensors(i)) for i in range(fb.TensorsLength()))
    elif kind == _GRAPHS:
        attr.graphs.extend(_graph(fb.Graphs(i)) for i in range(fb.GraphsLength()))
    else:
        raise ValueError(f"attribute {name} has a kind ({kind}) this reader does not know")
    return attr


BLOCK = 32
"""MatMulNBits' block: the weights keep one scale per tensor, repeated for every block."""


@dataclass(frozen=True)
class _Dequantized:
    """`Cast(q) * scale + offset` of one int8 initializer, per tensor."""

    q: np.ndarray
    scale: np.ndarray
    offset: np.ndarray

    def floats(self) -> np.ndarray:
        return (self.q.astype(np.float32) * self.scale + self.offset).astype(np.float32)

    def zero_point(self) -> int | None:
        """The offset as a whole number of steps (so `(q + 128 - zp) * scale` is exact), else None."""
        if self.q.ndim != 2 or self.scale.size != 1 or self.offset.size != 1 or self.q.dtype != np.int8:
            return None
        steps = float(self.offset.ravel()[0] / self.scale.ravel()[0])
        return 128 - round(steps) if abs(steps - round(steps)) < 1e-3 and abs(round(steps)) <= 127 else None


def _fold_dequantized_weights(graph, *, int8: bool):
    """Remove each `Cast(int8 weight) → Mul(scale) → Add(offset)` on initializers.

    With `int8`, a MatMul that multiplies by such a weight (or by its transpose) becomes a
    MatMulNBits holding the same int8 values (8 bits, accuracy level 4: int8 arithmetic),
    which reads a quarter of the memory per step, and a Gather from one (the token embedding)
    dequantizes only the rows it takes; anything else that still reads the weight gets the
    float weight, computed once here.
    """
    from onnx import numpy_helper

    inits = {t.name: t for t in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    weights: dict[str, _Dequantized] = {}
    dropped = set()
    for cast in graph.node:
        if cast.op_type != "Cast" or cast.input[0] not in inits:
            continue
        after = consumers.get(cast.output[0], [])
        if len(after) != 1 or after[0].op_type != "Mul":
            continue
        mul = after[0]
        scale = next((n for n in mul.input if n != cast.output[0]), None)
        after = consumers.get(mul.output[0], [])
        if scale not in inits or len(after) != 1 or after[0].op_type != "Add":
            continue
        add = after[0]
        offset = next((n for n in add.input if n != mul.output[0]), None)
        if offset not in inits or producers.get(add.output[0]) is not add:
            continue
        weights[add.output[0]] = _Dequantized(*(numpy_helper.to_array(inits[n]) for n in (cast.input[0], scale, offset)))
        dropped.update({id(cast), id(mul), id(add)})
    keep = [node for node in graph.node if id(node) not in dropped]
    del graph.node[:]
    graph.node.extend(keep)
    if int8:
        packed: dict[str, list] = {}
        _int8_matmuls(graph, weights, packed)
        graph.initializer.extend(t for tensors in packed.values() for t in tensors)
    _drop_dead_nodes(graph)
    used = {name for node in graph.node for name in node.input} | _outer_names(graph)
    graph.initializer.extend(numpy_helper.from_array(w.floats(), name) for name, w in weights.items() if name in used)
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return graph


def _int8_matmuls(graph, weights: dict[str, _Dequantized], packed: dict[str, list]) -> None:
    """In this graph and its subgraphs, a MatMul by a folded weight becomes a MatMulNBits, and a
    Gather from one (the token embedding) reads the int8 rows and dequantizes only those."""
    import onnx
    from onnx import numpy_helper

    transposed = {node.output[0]: node.input[0] for node in graph.node
                  if node.op_type == "Transpose" and node.input[0] in weights
                  and list(next((a.ints for a in node.attribute if a.name == "perm"), [1, 0])) == [1, 0]}
    nodes = []
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _int8_matmuls(sub, weights, packed)
        if node.op_type == "Gather" and node.input[0] in weights and not any(
                a.name == "axis" and a.i != 0 for a in node.attribute):
            key, weight = node.input[0], weights[node.input[0]]
            if key + "_rows" not in packed:
                packed[key + "_rows"] = [numpy_helper.from_array(weight.q, key + "_int8"),
                                         numpy_helper.from_array(weight.scale, key + "_scale"),
                                         numpy_helper.from_array(weight.offset, key + "_offset")]
            out = node.output[0]
            step = node.name or out
            nodes += [
                onnx.helper.make_node("Gather", [key + "_int8", node.input[1]], [step + "_q"], name=step + "_q"),
                onnx.helper.make_node("Cast", [step + "_q"], [step + "_f"], name=step + "_f", to=onnx.TensorProto.FLOAT),
                onnx.helper.make_node("Mul", [step + "_f", key + "_scale"], [step + "_m"], name=step + "_m"),
                onnx.helper.make_node("Add", [step + "_m", key + "_offset"], [out], name=step + "_a"),
            ]
            continue
        if node.op_type != "MatMul":
            nodes.append(node)
            continue
        name = node.input[1]
        if name in weights:  # B is [K, N]; MatMulNBits keeps it as [N, K]
            weight, by_row, key = weights[name], True, name
        elif name in transposed:  # B is the transpose of a [N, K] weight (a tied output layer)
            weight, by_row, key = weights[transposed[name]], False, transposed[name] + "_T"
        else:
            nodes.append(node)
            continue
        zero = weight.zero_point()
        rows = weight.q.T if by_row else weight.q
        if zero is None or rows.shape[1] % BLOCK:
            nodes.append(node)
            continue
        n, k = rows.shape
        blocks = k // BLOCK
        if key not in packed:
            values = (rows.astype(np.int16) + 128).astype(np.uint8).reshape(n, blocks, BLOCK)
            packed[key] = [
                numpy_helper.from_array(np.ascontiguousarray(values), key + "_q8"),
                numpy_helper.from_array(np.full(n * blocks, weight.scale.ravel()[0], np.float32), key + "_scales"),
                numpy_helper.from_array(np.full(n * blocks, zero, np.uint8), key + "_zero_points"),
            ]
        nodes.append(onnx.helper.make_node(
            "MatMulNBits", [node.input[0], key + "_q8", key + "_scales", key + "_zero_points"], list(node.output),
            name=node.name + "_int8", domain="com.microsoft", K=k, N=n, bits=8, block_size=BLOCK,
            accuracy_level=4,
        ))
    del graph.node[:]
    graph.node.extend(nodes)


def _drop_dead_nodes(graph) -> None:
    """Remove nodes (here and in subgraphs) whose outputs nothing reads, e.g. a weight's
    Transpose once its MatMul reads the int8 weight itself."""
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _drop_dead_nodes(sub)
    while True:
        wanted = {o.name for o in graph.output} | _outer_names(graph)
        wanted |= {name for node in graph.node for name in node.input}
        dead = [node for node in graph.node if not any(out in wanted for out in node.output)]
        if not dead:
            return
        for node in dead:
            graph.node.remove(node)


def _outer_names(graph) -> set[str]:
    """Names the subgraphs (If branches) read from this graph."""
    names = set()
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                names |= {name for n in sub.node for name in n.input} | _outer_names(sub)
    return names
