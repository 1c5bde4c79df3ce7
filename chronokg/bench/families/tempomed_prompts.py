"""TempoMed-Bench prompt templates: verbatim text files in `prompts/tempomed/`, loaded on first use.

Source: GuanZihan/TempoMed-Bench at commit 74b6f2246dd44df0612e3e1b24d56f6837d6428c (MIT licence,
(c) 2026 Guan Zihan); paper arXiv 2605.13045 (CC BY 4.0), Appendix listings 13-18. Where each template
sits in the seed is listed in `prompts/tempomed/README.md`. The templates are facts of the benchmark,
reproduced byte for byte (typos such as "You MUST Not generated" and "If you do know the answer"
included); `SHA256` holds each one's hash, checked by `check()` and the tests.
"""

from __future__ import annotations

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'MCQ5_SYSTEM': '76f14e8c3589af296bd033bf4afc83bc1a4cb7fceb703c9d82b54b8bda59348c',
    'MCQ5_USER': '861329aec2424583d9fcbad3f15506f1249107350c64d80fff3b7fd191596c25',
    'MCQ4_USER': 'daa475614e3a234694262d94b69811c540b1e807dafbc3c9795517f71c41cc6a',
    'PROBE_SYSTEM': '63d0b9d68347e102f406be08e32bf7a256fb6223e9a8f092a7639c1032f2b1a9',
    'PROBE_USER': 'a95e24375aecfd77bd4e86e6f23b2b1e2d22b15719985401fdbb25cfa0991670',
    'PROBE_FALLBACK': 'f3ce40123209c37bfe472f01c99641d15e2a701e2eeb44e46403d6ef3eaa2f44',
    'PROBE_TEMPLATE_SYSTEM': '1ce95409efe6527fab2f3f417fd15f2bf524ec8b4b986f41c1782243854d8387',
    'PROBE_TEMPLATE_USER': '9b60fe90876aeb10780c2e0f1bb12841d27a617dfa769d916623c97e01670cd7',
    'NBME_SYSTEM': '6b0b988b00c45d46c8f1f6b0b6f3ef4adc8be8c063a029729a6c787680691558',
    'NBME_USER': '9a5861c01f2b2834579384963c382b05b83d918916566a2cb29f97d3380ed1ba',
    'NBME_EXAMPLE': '6cd1a56d0aefcf56cbd9f911987c524926e7aa7635d9f6b10116773f379f2868',
    'DIFF_SYSTEM': '7983be0dcb5be6dc9b39c26b19c9dc7697c64a88b39257a4fb920ec4042c43cd',
    'DIFF_USER': '5b252cc94e9c60832ffba1b76981c9edc243467642ddb03919f682a7c4fd1314',
    'VERIFY_SYSTEM': '8591b6cd9abaae03dc7d660622582ea266a86ca4d341f8fc900f33640bd59f81',
    'VERIFY_USER': '7331c732eb678cc0070b6040410eae94add562774e543ef394803805abca275e',
    'RAG_SYSTEM': '88ca178fa5381d585dc5959e8be19c5e7e5b3a18175c7fb7896896e067e370b5',
    'RAG_USER': 'd986f644c66d6aaf4a7aae8737f7748180fffc00032daff454b45a386423e910',
}


TEMPLATES = TemplateSet("tempomed", SHA256, "TempoMed-Bench")
template = TEMPLATES.template
render = TEMPLATES.render
check = TEMPLATES.check
