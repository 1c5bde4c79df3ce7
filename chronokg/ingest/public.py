"""Public files chronokg can download for users who have the internet.

Each entry is pinned to the upstream commit our tests' samples were cut from,
with its SHA-256, so a download is the exact release the docs describe.
"""

from __future__ import annotations

from pydantic import BaseModel


class PublicFile(BaseModel):
    name: str
    url: str
    sha256: str | None
    filename: str
    loader: str  # the `chronokg ingest` command that reads it
    note: str


PUBLIC_FILES: dict[str, PublicFile] = {
    f.name: f
    for f in (
        PublicFile(
            name="tempomed",
            url="https://raw.githubusercontent.com/GuanZihan/TempoMed-Bench/74b6f2246dd44df0612e3e1b24d56f6837d6428c/"
            "questions_2026_relaxed_4_option_augmented_verified.jsonl",
            sha256="8123e92e2efe950e84f47cbae6128b77ead7b192f41640bb258d5e187b4f90f2",
            filename="questions_2026_relaxed_4_option_augmented_verified.jsonl",
            loader="tempomed",
            note="TempoMed-Bench MCQs (MIT), 721 records",
        ),
        PublicFile(
            name="selfaware",
            url="https://raw.githubusercontent.com/yinzhangyue/SelfAware/f0bad1ff77bd42fc4eb2360281ed646c7bb7bd0c/"
            "data/SelfAware.json",
            sha256="32929585ffdd4048f35f7f167720722eb8ddcf59908ffc958da2f84ea634dc54",
            filename="SelfAware.json",
            loader="qa",
            note="SelfAware (CC BY-SA 4.0), 3,369 questions",
        ),
        PublicFile(
            name="truthfulqa",
            url="https://raw.githubusercontent.com/sylinrl/TruthfulQA/main/TruthfulQA.csv",
            sha256=None,
            filename="TruthfulQA.csv",
            loader="qa",
            note="TruthfulQA (Apache-2.0), 817 questions; the upstream file is not pinned to a commit",
        ),
    )
}
