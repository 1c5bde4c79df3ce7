"""A BERT sentence encoder as an ONNX graph, built from a model folder's safetensors weights without torch.

The graph is what sentence-transformers runs for all-MiniLM-L6-v2 and its kin (modules.json: a BERT
`Transformer`, mean `Pooling`, `Normalize`): word + position + token-type embeddings and LayerNorm; per layer,
self-attention under the attention mask, a residual LayerNorm, an exact (erf) GELU feed-forward and another
residual LayerNorm; then the mean of the token vectors the mask keeps, L2-normalised. Inputs are `input_ids`
and `attention_mask` (int64, batch x tokens); the output `sentence_embedding` is batch x hidden float32.

Built once per weights file and builder version (`BUILDER_VERSION`: bump it whenever the graph changes) by
`chronokg.retrieval.embed_onnx`, which keeps the result in the cache folder; only this module imports `onnx`
(about a CPU-second), and only while it builds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chronokg.errors import ChronoKGError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BUILDER_VERSION = 1
OPSET = 18  # LayerNormalization (17) and reductions taking their axes as an input (18)
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"
GRAPH, WEIGHTS = "model.onnx", "model.weights"  # the files `write_graph` writes


class _Graph:
    """The nodes and weights of the graph being built, with fresh names for intermediate values."""

    def __init__(self) -> None:
        import onnx.helper

        self.helper = onnx.helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        import onnx.numpy_helper

        self.inits.append(onnx.numpy_helper.from_array(value, name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, weights: dict[str, npt.NDArray[Any]], prefix: str) -> str:
        """x @ W.T + b, as torch's Linear computes it (W stored out x in)."""
        import numpy as np

        w = self.const(f"{prefix}.weight_t", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
        return self.op("Add", self.op("MatMul", x, w), self.const(f"{prefix}.bias", weights[f"{prefix}.bias"]))

    def layer_norm(self, x: str, weights: dict[str, npt.NDArray[Any]], prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def _config(folder: Path) -> dict[str, Any]:
    """The folder's BERT config, refused in one line unless it is the architecture this builder knows."""
    try:
        config: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ChronoKGError(f"{folder}: not a sentence-transformers model folder ({exc})") from exc
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                 "pooling_mode_mean_sqrt_len_tokens"))
    if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
            or kinds != ["Transformer", "Pooling", "Normalize"] or not mean_only):
        raise ChronoKGError(f"{folder}: the ONNX encoder builds BERT models with mean pooling and normalisation "
                            "only; use CHRONOKG_EMBEDDING_BACKEND=sentence-transformers for this model")
    return config


def build_graph(folder: Path) -> Any:
    """The ONNX model (an `onnx.ModelProto`) of the sentence encoder in `folder` (see the module docstring)."""
    import numpy as np
    import onnx
    from safetensors.numpy import load_file

    config = _config(folder)
    weights: dict[str, np.ndarray[Any, Any]] = {k.removeprefix("bert."): v.astype(np.float32)
                                                if v.dtype.kind == "f" else v
                                                for k, v in load_file(str(folder / "model.safetensors")).items()}
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_dim, eps = hidden // heads, float(config["layer_norm_eps"])
    g = _Graph()
    h = g.helper
    ids, mask = INPUTS

    # Embeddings: every token type is 0 (one sentence), so that row is added to the position table once.
    positions = weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0]
    word = g.op("Gather", g.const("embeddings.word", weights["embeddings.word_embeddings.weight"]), ids, axis=0)
    seq_len = g.op("Gather", g.op("Shape", ids), g.const("one_i", np.array(1, dtype=np.int64)), axis=0)
    steps = g.op("Range", g.const("zero_i", np.array(0, dtype=np.int64)), seq_len, "one_i")
    pos = g.op("Gather", g.const("embeddings.position_and_type", positions), steps, axis=0)
    x = g.layer_norm(g.op("Add", word, pos), weights, "embeddings.LayerNorm", eps)

    # The additive attention mask: 0 where a token is kept, float32's lowest value where it is padding.
    mask_f = g.op("Cast", mask, to=onnx.TensorProto.FLOAT)
    lowest = g.const("lowest", np.array(np.finfo(np.float32).min, dtype=np.float32))
    bias = g.op("Mul", g.op("Sub", g.const("one_f", np.array(1.0, dtype=np.float32)), mask_f), lowest)
    bias = g.op("Unsqueeze", bias, g.const("axes_1_2", np.array([1, 2], dtype=np.int64)))  # batch x 1 x 1 x tokens
    split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("half", np.array(0.5, dtype=np.float32))

    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        q, k, v = (g.op("Reshape", g.linear(x, weights, f"{p}.attention.self.{n}"), split_heads)
                   for n in ("query", "key", "value"))
        q = g.op("Transpose", q, perm=[0, 2, 1, 3])
        k = g.op("Transpose", k, perm=[0, 2, 3, 1])
        v = g.op("Transpose", v, perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = g.op("Add", g.linear(context, weights, f"{p}.attention.output.dense"), x)
        x = g.layer_norm(attended, weights, f"{p}.attention.output.LayerNorm", eps)
        inner = g.linear(x, weights, f"{p}.intermediate.dense")
        gelu = g.op("Mul", g.op("Mul", inner, half),
                    g.op("Add", g.op("Erf", g.op("Div", inner, sqrt2)), "one_f"))
        out = g.op("Add", g.linear(gelu, weights, f"{p}.output.dense"), x)
        x = g.layer_norm(out, weights, f"{p}.output.LayerNorm", eps)

    # Mean pooling over the kept tokens (sentence-transformers clamps the count at 1e-9), then L2 (eps 1e-12).
    kept = g.op("Unsqueeze", mask_f, g.const("axis_2", np.array([2], dtype=np.int64)))
    axis_1 = g.const("axis_1", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", g.op("Mul", x, kept), axis_1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", kept, axis_1, keepdims=0),
                 g.const("count_eps", np.array(1e-9, dtype=np.float32)))
    mean = g.op("Div", summed, count)
    norm = g.op("Max", g.op("ReduceL2", mean, g.const("axis_last", np.array([-1], dtype=np.int64)), keepdims=1),
                g.const("norm_eps", np.array(1e-12, dtype=np.float32)))
    g.nodes.append(h.make_node("Div", [mean, norm], [OUTPUT]))

    graph = h.make_graph(
        g.nodes, "sentence_encoder",
        [h.make_tensor_value_info(n, onnx.TensorProto.INT64, ["batch", "tokens"]) for n in INPUTS],
        [h.make_tensor_value_info(OUTPUT, onnx.TensorProto.FLOAT, ["batch", hidden])], g.inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)], producer_name="chronokg",
                         producer_version=str(BUILDER_VERSION))
    model.ir_version = 8  # readable by every onnxruntime since 1.14
    onnx.checker.check_model(model)
    return model


def write_graph(folder: Path, target: Path) -> None:
    """Build `folder`'s graph into the folder `target`: GRAPH (the nodes) and WEIGHTS (its tensors, raw and
    aligned), which onnxruntime maps from the file rather than parsing them out of the graph: a faster start."""
    import onnx

    onnx.save_model(build_graph(folder), str(target / GRAPH), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=WEIGHTS, size_threshold=1024)
