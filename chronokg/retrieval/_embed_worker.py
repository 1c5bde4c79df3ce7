"""The embedding worker: `python -m chronokg.retrieval._embed_worker MODEL_DIR DEVICE BATCH`.

Loads a sentence-transformers model from a local folder and answers on stdin/stdout: each
request is one JSON line `{"texts": [...]}`; each answer is a header of two little-endian
int32 (rows, dim) and rows x dim float32 (unit vectors). The first header (0, dim) says the
model is loaded; a failed request answers (-1, 0) and one line of error text. Runs in its own
process so torch never shares one with kglite and faiss (see `embed_st.SentenceTransformerEmbedder`; the
default onnx backend needs no such process).
"""

from __future__ import annotations

import json
import os
import struct
import sys


def main() -> int:
    path, device, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the answers
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device=device, local_files_only=True)
    dim = int(model.get_sentence_embedding_dimension() or 0)
    out.write(struct.pack("<ii", 0, dim))
    out.flush()
    for line in sys.stdin.buffer:
        try:
            texts = json.loads(line)["texts"]
            vectors = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False).astype("float32", copy=False)
            out.write(struct.pack("<ii", len(vectors), dim) + vectors.tobytes())
        except Exception as exc:  # the parent shows it; the worker stays up for the next request
            out.write(struct.pack("<ii", -1, 0) + f"{type(exc).__name__}: {exc}".replace("\n", " ").encode() + b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
