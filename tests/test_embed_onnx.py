"""The onnx encoder on a tiny BERT (random weights, the real tokenizer): its graph computes what a plain numpy
BERT computes, its vectors are unit length and deterministic whatever the batch, its cache is keyed by the
weights, the config and the builder's version, and it shares a process with kglite and faiss.

The real model's vectors are compared with sentence-transformers' in test_embed_onnx_equal.py (slow tier).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from chronokg.errors import ChronoKGError
from chronokg.retrieval import embed_onnx, onnx_graph
from chronokg.retrieval.embed import OnnxEmbedder, default_model_path, make_embedder, shared_embedder
from chronokg.settings import Settings
from tests.helpers import REPO

HIDDEN, HEADS, LAYERS, INNER, VOCAB = 16, 4, 2, 32, 30522
TEXTS = ["The compression depth changed in 2010.", "", "x" * 3000, "naïve café 中文 \x00\x07", "one two three " * 100]


def _tiny_model(folder: Path, seed: int = 0) -> Path:
    """A BERT sentence encoder with random weights and all-MiniLM-L6-v2's tokenizer."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    (folder / "1_Pooling").mkdir()
    real = default_model_path(Settings())
    shutil.copy(real / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(real / "modules.json", folder / "modules.json")
    shutil.copy(real / "1_Pooling" / "config.json", folder / "1_Pooling" / "config.json")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64}))
    config = {"model_type": "bert", "hidden_act": "gelu", "hidden_size": HIDDEN, "num_attention_heads": HEADS,
              "num_hidden_layers": LAYERS, "intermediate_size": INNER, "vocab_size": VOCAB, "type_vocab_size": 2,
              "max_position_embeddings": 128, "layer_norm_eps": 1e-12}
    (folder / "config.json").write_text(json.dumps(config))

    def w(*shape: int) -> np.ndarray[Any, Any]:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    weights = {"embeddings.word_embeddings.weight": w(VOCAB, HIDDEN),
               "embeddings.position_embeddings.weight": w(128, HIDDEN),
               "embeddings.token_type_embeddings.weight": w(2, HIDDEN),
               "embeddings.LayerNorm.weight": 1 + w(HIDDEN), "embeddings.LayerNorm.bias": w(HIDDEN)}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            weights[f"{p}.attention.self.{name}.weight"] = w(HIDDEN, HIDDEN)
            weights[f"{p}.attention.self.{name}.bias"] = w(HIDDEN)
        for name, (out, inp) in {"attention.output.dense": (HIDDEN, HIDDEN), "intermediate.dense": (INNER, HIDDEN),
                                 "output.dense": (HIDDEN, INNER)}.items():
            weights[f"{p}.{name}.weight"], weights[f"{p}.{name}.bias"] = w(out, inp), w(out)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{p}.{name}.weight"], weights[f"{p}.{name}.bias"] = 1 + w(HIDDEN), w(HIDDEN)
    save_file(weights, str(folder / "model.safetensors"))
    return folder


def _reference(folder: Path, ids: list[int]) -> np.ndarray[Any, Any]:
    """BERT in plain numpy (float64) for one unpadded text: embeddings, layers, mean, L2."""
    from safetensors.numpy import load_file

    wt = {k: v.astype(np.float64) for k, v in load_file(str(folder / "model.safetensors")).items()}

    def norm(x: np.ndarray[Any, Any], p: str) -> np.ndarray[Any, Any]:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return np.asarray((x - mu) / np.sqrt(var + 1e-12) * wt[f"{p}.weight"] + wt[f"{p}.bias"])

    def lin(x: np.ndarray[Any, Any], p: str) -> np.ndarray[Any, Any]:
        return np.asarray(x @ wt[f"{p}.weight"].T + wt[f"{p}.bias"])

    n, d = len(ids), HIDDEN // HEADS
    x = norm(wt["embeddings.word_embeddings.weight"][ids] + wt["embeddings.position_embeddings.weight"][:n]
             + wt["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    erf = np.vectorize(math.erf)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        q, k, v = (lin(x, f"{p}.attention.self.{m}").reshape(n, HEADS, d).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        a = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((a / a.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = norm(lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        h = lin(x, f"{p}.intermediate.dense")
        x = norm(lin(h * 0.5 * (1 + erf(h / math.sqrt(2))), f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    mean = x.mean(0)
    return np.asarray(mean / np.linalg.norm(mean))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny model and a cache holding its graph (built once for the module)."""
    root = tmp_path_factory.mktemp("tiny")
    folder, cache = _tiny_model(root / "model"), root / "cache"
    embed_onnx.graph_file(folder, cache)
    return folder, cache


def _embedder(folder: Path, cache: Path, batch_size: int = 64) -> OnnxEmbedder:
    return OnnxEmbedder(folder, batch_size=batch_size,
                        settings=Settings(embedding_model=str(folder), embedding_cache=cache))


def test_the_graph_computes_bert_as_numpy_does(built: tuple[Path, Path]) -> None:
    folder, cache = built
    embedder = _embedder(folder, cache)
    vectors = embedder.encode(TEXTS)
    tokenizer = embedder._load()[1]
    for text, vector in zip(TEXTS, vectors, strict=True):
        ids = tokenizer.encode(text).ids
        assert 2 <= len(ids) <= 64  # [CLS] text [SEP], truncated at the folder's max_seq_length
        np.testing.assert_allclose(vector, _reference(folder, ids), atol=2e-5)
    assert max(len(tokenizer.encode(t).ids) for t in TEXTS) == 64


def test_vectors_are_unit_length_and_the_same_whatever_the_batch(built: tuple[Path, Path]) -> None:
    folder, cache = built
    together = _embedder(folder, cache).encode(TEXTS)
    assert together.shape == (len(TEXTS), HIDDEN) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    again = _embedder(folder, cache, batch_size=2).encode(list(reversed(TEXTS)))[::-1]  # other batches, padding
    alone = np.vstack([_embedder(folder, cache).encode([t]) for t in TEXTS])
    np.testing.assert_allclose(again, together, atol=1e-6)
    np.testing.assert_allclose(alone, together, atol=1e-6)
    idle = _embedder(folder, cache)
    assert idle.encode([]).size == 0 and idle._model is None  # no texts: nothing loaded


def test_the_cache_is_rebuilt_when_weights_config_or_builder_change(
        built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = shutil.copytree(built[0], tmp_path / "model")
    cache = tmp_path / "cache"
    builds: list[Path] = []
    real_write = onnx_graph.write_graph

    def counted(model: Path, target: Path) -> None:
        builds.append(target)
        real_write(model, target)

    monkeypatch.setattr(embed_onnx, "write_graph", counted)
    first = embed_onnx.graph_file(folder, cache)
    assert embed_onnx.graph_file(folder, cache) == first and len(builds) == 1  # warm: no build
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temporary folder left

    _tiny_model(tmp_path / "other", seed=1)
    shutil.copy(tmp_path / "other" / "model.safetensors", folder / "model.safetensors")  # new weights
    second = embed_onnx.graph_file(folder, cache)
    assert second != first and len(builds) == 2
    assert not np.allclose(_embedder(folder, cache).encode(["same text"]),
                           _embedder(built[0], built[1]).encode(["same text"]))

    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-6}))
    third = embed_onnx.graph_file(folder, cache)
    assert third not in (first, second) and len(builds) == 3

    monkeypatch.setattr(embed_onnx, "BUILDER_VERSION", onnx_graph.BUILDER_VERSION + 1)
    fourth = embed_onnx.graph_file(folder, cache)
    assert fourth not in (first, second, third) and len(builds) == 4
    assert fourth.parent.name.endswith(f"-b{onnx_graph.BUILDER_VERSION + 1}")


def test_the_weights_digest_is_remembered_by_size_and_time(built: tuple[Path, Path], tmp_path: Path) -> None:
    weights = shutil.copy(built[0] / "model.safetensors", tmp_path / "model.safetensors")
    digest = embed_onnx.weights_digest(Path(weights), tmp_path)
    memo = json.loads((tmp_path / "digests.json").read_text())
    key = str(Path(weights).resolve())
    memo[key]["sha256"] = "remembered"
    (tmp_path / "digests.json").write_text(json.dumps(memo))
    assert embed_onnx.weights_digest(Path(weights), tmp_path) == "remembered"  # not hashed again
    os.utime(weights, ns=(memo[key]["stamp"][1] + 10**9, memo[key]["stamp"][1] + 10**9))
    assert embed_onnx.weights_digest(Path(weights), tmp_path) == digest  # touched: hashed again


def test_a_folder_without_a_model_or_on_a_gpu_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ChronoKGError, match=r"no sentence-transformers model at .*missing model.safetensors"):
        _embedder(tmp_path, tmp_path / "cache").encode(["x"])
    with pytest.raises(ChronoKGError, match="CHRONOKG_EMBEDDING_BACKEND=sentence-transformers"):
        make_embedder(Settings(embedding_device="cuda"))
    assert type(shared_embedder(Settings())).__name__ == "OnnxEmbedder"
    assert type(make_embedder(Settings(embedding_backend="sentence-transformers"))).__name__ == \
        "SentenceTransformerEmbedder"


@pytest.mark.slow  # a fresh interpreter loading kglite, faiss and onnxruntime: seconds on a busy machine
def test_onnxruntime_shares_a_process_with_kglite_and_faiss(built: tuple[Path, Path], tmp_path: Path) -> None:
    """torch cannot (glibc's static TLS: see embed_st); the onnx encoder runs beside both, no child process."""
    folder, cache = built
    script = textwrap.dedent(f"""
        import sys, faiss, kglite
        from chronokg.graph.kglite_store import KgliteStore
        from chronokg.retrieval.embed import OnnxEmbedder
        from chronokg.settings import Settings
        with KgliteStore({str(tmp_path / "s.kgl")!r}) as store:
            pass
        vectors = OnnxEmbedder(settings=Settings(embedding_model={str(folder)!r},
                                                 embedding_cache={str(cache)!r})).encode(["a", "b c"])
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        print("ranks", index.search(vectors, 2)[1][:, 0].tolist(), "torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ranks [0, 1] False" in done.stdout


def test_baseline_embedding_ranks_options_with_the_shared_encoder(built: tuple[Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`baseline/embedding` encodes with the settings' encoder, never sentence-transformers of its own."""
    from chronokg.bench.question import AnswerKey, Choice, Question
    from chronokg.eval.baselines import Baseline

    folder, cache = built
    monkeypatch.setenv("CHRONOKG_EMBEDDING_MODEL", str(folder))
    monkeypatch.setenv("CHRONOKG_EMBEDDING_CACHE", str(cache))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # importing it would fail
    key = AnswerKey(query="q", params={}, evidence=[], evidence_hash="sha256:0")
    stem = "How deep should chest compressions be for an adult?"
    question = Question(id="q", family="test", variant="v", input=stem, target="B", answer_key=key, snapshot="s",
                        choices=[Choice(label="A", text="Cats sleep most of the day."), Choice(label="B", text=stem),
                                 Choice(label="C", text="zzz qqq")])
    assert Baseline("baseline/embedding", "embedding", None)._most_similar(question) == "B"


def test_a_backend_setting_it_cannot_take_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The error names the variable and its choices (the CLI prints it as is), never pydantic's table."""
    monkeypatch.setenv("CHRONOKG_EMBEDDING_BACKEND", "garbage")
    with pytest.raises(ChronoKGError) as info:
        make_embedder(Settings())
    assert str(info.value) == "CHRONOKG_EMBEDDING_BACKEND='garbage': Input should be 'onnx' or 'sentence-transformers'"


def test_other_weights_of_the_same_size_under_the_same_time_are_hashed_again(built: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    """A copy that keeps the source's time (`cp -p`, rsync, tar) changes the change time, which is remembered."""
    weights = Path(shutil.copy(built[0] / "model.safetensors", tmp_path / "model.safetensors"))
    first = embed_onnx.weights_digest(weights, tmp_path)
    before = weights.stat()
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_size == before.st_size and weights.stat().st_mtime_ns == before.st_mtime_ns
    assert embed_onnx.weights_digest(weights, tmp_path) != first


def test_a_cache_it_cannot_write_still_serves_its_graphs(built: tuple[Path, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    folder, cache = built[0], Path(shutil.copytree(built[1], tmp_path / "cache"))
    (cache / "digests.json").unlink()

    def refused(target: Path, data: bytes) -> None:
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr(embed_onnx, "write_whole", refused)
    assert embed_onnx.graph_file(folder, cache).is_file()


def test_a_damaged_graph_is_built_again_and_a_killed_build_swept(built: tuple[Path, Path], tmp_path: Path) -> None:
    folder, cache = built[0], Path(shutil.copytree(built[1], tmp_path / "cache"))
    expected = _embedder(*built).encode(["same text"])
    tensors = embed_onnx.graph_file(folder, cache).parent / onnx_graph.WEIGHTS
    tensors.write_bytes(tensors.read_bytes()[:1000])  # a truncated copy
    old, fresh = cache / ".build-killed", cache / ".build-running"
    for left in (old, fresh):
        left.mkdir()
    os.utime(old, (0, 0))
    assert np.allclose(_embedder(folder, cache).encode(["same text"]), expected, atol=1e-6)
    assert not old.exists() and fresh.exists()  # swept by the build again: one an hour old is nobody's


def test_weights_it_cannot_read_are_one_line_naming_the_file(built: tuple[Path, Path], tmp_path: Path) -> None:
    folder = Path(shutil.copytree(built[0], tmp_path / "model"))
    (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:1000])
    with pytest.raises(ChronoKGError, match=r"model.safetensors: the onnx encoder cannot build a graph from these "
                                            r"weights \(SafetensorError: [^\n]*\)$"):
        embed_onnx.graph_file(folder, tmp_path / "cache")
