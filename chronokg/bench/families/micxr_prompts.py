"""MI-CXR templates: text files in `prompts/micxr/`, loaded on first use, each checked against its sha256.

Three kinds (provenance of each file in `prompts/micxr/README.md`):

* the released question and null-option wording (`questions_seed.txt`; `questions_chronokg.txt` is the
  grammatical form `--protocol chronokg` uses), one line per question type:
  `qtype<TAB>question<TAB>option E`, `{abn}` standing for the abnormality;
* the paper's four GTS text-realisation prompts (Figures 5-8), verbatim from the submission copy;
* chronokg's own evaluation prompts (single step and the two stages): the paper does not publish its
  evaluation or stage-wise prompts, so these are chronokg's, not the seed's.
"""

from __future__ import annotations

from functools import cache

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'EVAL_SYSTEM': '7d9e77b1317e983074fab90fdce94d539752e7c4c50e46a21f25b1d1fd802265',
    'EVAL_USER': 'f9530006ec1a2fc9059cd9455f724fac1ab3e7dd7aa3c340ef32e5ca82277540',
    'GTS_MULTI_CORRECT': '2d717ab2cbd7953c5f35d213ece30b34f27c159ca799596eb2115487a817ea7a',
    'GTS_MULTI_INCORRECT': '7df38b19398a9d125b8ab6d450daf20ccdd8ca01f1f838261c46edcac52332fc',
    'GTS_SINGLE_CORRECT': 'fefe7bb1979fbb650fda1b1a08f3ef787d3db3d57add3cf24c58fd8c66ec9900',
    'GTS_SINGLE_INCORRECT': '6ceb4fe1cb393134acf8fb1a63a9353d9a4a4e426c3971f8e08bcbba1161b7e4',
    'GTS_USER': '5f3aa68d95e34a0c5b5dee2f9268405a62d4966a3e64d4a597a91a36409f68b3',
    'QUESTIONS_CHRONOKG': '917b9dffdd08cfd4efa332230b6ba6ca62b7271a3520061103aeb01b9282ab97',
    'QUESTIONS_SEED': 'bc1b6b30abdba6a380a2f55897285f656c1c52943f34d505151d97ad764f28b3',
    'STAGE1_GTS': 'be4142f7196b522b3cce265d7af97d57a3cdf95b160f5bc9263c7bd524a9dc5b',
    'STAGE1_ICR': '1e0f1b7d67366a64a276ea8df3ace77b6c369b8635ede3a05e9ea887910fc186',
    'STAGE1_SYSTEM': 'f6c2ccc4dbd4c365bc80d8ef12e2b1686b0e247e1a0ec9a730bfabf43eada43b',
    'STAGE1_TEL': 'fbb5c204bb06d10c242ca337a14c02ab73ad09f2b8c267687783072730252063',
    'STAGE1_USER': 'b494722a36cf8eb584ddbd908ab668df59b03638d4ad87a4cb9903ad91bba3c4',
    'STAGE2_SYSTEM': 'a9b7a38297e69276abd290188d354d66b76a4cab85d271fec1b2a578f4394252',
    'STAGE2_USER': '4aa895d519ca240e68ab6582aac76fdada52c91a43eaad3ce25b78fb27b13ab5',
}


TEMPLATES = TemplateSet("micxr", SHA256, "MI-CXR")
template = TEMPLATES.template
render = TEMPLATES.render
check = TEMPLATES.check


@cache
def questions(protocol: str) -> dict[str, tuple[str, str]]:
    """qtype -> (question, option E) templates of `protocol` (seed or chronokg)."""
    name = {"seed": "QUESTIONS_SEED", "chronokg": "QUESTIONS_CHRONOKG"}[protocol]
    out: dict[str, tuple[str, str]] = {}
    for line in template(name).splitlines():
        qtype, question, none = line.split("\t")
        out[qtype] = (question, none)
    return out
