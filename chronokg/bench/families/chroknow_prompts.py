"""ChroKnowBench prompt templates: verbatim text files in `prompts/chroknow/`, loaded on first use.

Source: dmis-lab/ChroKnowledge `sources/template.py` at commit 37ff685f0bf761c71778c6b8e5a98e71b9390e7b
(no licence file in the repository; the templates are facts of the benchmark, reproduced here with
provenance, all code is our own); the distractor-writing prompts are from the paper (Park et al., ICLR
2025, arXiv 2410.09870, Tables 10 and 12). Where each template sits in the seed is listed in
`prompts/chroknow/README.md`; `SHA256` holds each file's hash, checked by `check()` and the tests.

Files hold one template, or (`prompt_qa_*`, `prompt_tf_*`: the seed's per-relation dicts) one block per
key, each block a `### key` line followed by the template (every one of them ends in a newline), or
(`distractor_*`) one block per chat message (`### system|user|assistant`). Templates were python-liquid
templates in the seed; `render` reproduces what python-liquid 1.12.1 prints for the values the
benchmark passes (see `liquid_text`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'api_system': '75357d685f238b6afd7738be9786fdafde641eb6ca9a3be7471939715a68a4de',
    'chrono_cand_system': '81e34a9a8ef04a324eea0434c0f7070d64143ff0ba1572349f4b76d9f030ea0f',
    'chrono_none_system': 'e521be912175ed33f9f4d74fe912bd7dcd913f606cc7dc7654cad4c5ae201fe4',
    'distractor_general': 'c01a7755c34b4b45442566aba2de8668579376fc676f551f2035987e5fc095a4',
    'distractor_legal': 'ac4fd10355a4d452aac16be155880a096dd0ed298014efee5967bdd7f9e7ee3d',
    'general_system': 'a1a169a8a2676708007cad4d80a17fcb65da646e0e9c9e6952773306f3f7a36c',
    'prompt_gen_legal_t': 'c61d912ab395f69fb991d8fe643bbfc4d460df105e57732c5f6de71ce01d2f60',
    'prompt_gen_zs_t': '242bd77f1bd6b61db90a4f7c830e2244de3f4360b8186a1dce6e5abdb9e968f4',
    'prompt_kt_t': 'c2483289466cb8d77dd35363988d407b7fcbdd0d983eeec4f95205f2a893b4a4',
    'prompt_kt_zs_t': '5064484430257c279311ff7075804599c36751ce2653cdd5f16b447b9afe98fe',
    'prompt_qa_biomedical_t': 'dd5f73e63ff2af61c1afad6578817f0f7155daa087787ca3868a87465e264a52',
    'prompt_qa_commonsense_t': '8ade4a58907c729f1f98dab3e89d52244deadfa14f8e2d6fd0a93bad87203936',
    'prompt_qa_general_t': '846915f851e89e38862aab5693bae9754d9d2c4f503368f998eac27703f52233',
    'prompt_qa_legal_t': 'a16ce16aebe2c3b999aff017a4fbf3346203f3274ca2d1ef8d31444eb6abd200',
    'prompt_qa_math_t': '25e6ff46be5a768f099b2b735d0950440d8ef826cca468a4f3757d29e11467f4',
    'prompt_tf_biomedical_t': 'ba955a74183e91088bc6751ec67c2c5b702536faf04d8c8aaa795573c916c9d7',
    'prompt_tf_commonsense_t': '58bfb920265c65218b5aec9782e528da2602cf7e78f1983e6cbc23439397dfa7',
    'prompt_tf_general_t': '0916f81ea50e57186f4d8fa8ba43b67d65b22a90f2df53005e9dad7b6ee6e712',
    'prompt_tf_legal_t': '56914e1fb8a2be52791bb05bd7ac1f48aa6f6ef307c98e63e529cf1d432ac1c8',
    'prompt_tf_math_t': 'e555bd64129702a1ed9bf41378b8716433153260d9bb44131a925339c403f70c',
}
_VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_HEADER = re.compile(r"^### (.+)\n", re.M)


TEMPLATES = TemplateSet("chroknow", SHA256, "ChroKnowBench")
template = TEMPLATES.template


def _blocks(name: str) -> list[tuple[str, str]]:
    text = template(name)
    heads = list(_HEADER.finditer(text))
    if not heads or heads[0].start() != 0:
        raise ValueError(f"template file {name} is not a list of '### key' blocks")
    return [(h[1], text[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)])
            for i, h in enumerate(heads)]


@cache
def keyed(name: str) -> dict[str, str]:
    """A per-relation (or per-question-type) template dict of the seed, in its key order."""
    return dict(_blocks(name))


def messages(name: str) -> list[dict[str, str]]:
    """A chat prompt file as messages (the newline that ends each block is not part of the message)."""
    return [{"role": role, "content": text.removesuffix("\n")} for role, text in _blocks(name)]


def liquid_text(value: Any) -> str:
    """What python-liquid 1.12.1 prints for `{{value}}`: strings as they are, booleans lower-case, None as
    nothing, a list as its items' `str()` glued together with no separator (so an alias list prints as
    'Real Madrid CFReal Madrid', a nested list as its Python repr), anything else as `str()`."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, list):
        return "".join(str(item) for item in value)
    return str(value)


def render(text: str, **values: Any) -> str:
    """A liquid template with `{{name}}` variables filled in one pass (an undefined one prints nothing)."""
    return _VARIABLE.sub(lambda m: liquid_text(values.get(m[1])), text)


check = TEMPLATES.check
