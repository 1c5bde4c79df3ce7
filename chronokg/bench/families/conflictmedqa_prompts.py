"""ConflictMedQA prompt templates: verbatim text files in `prompts/conflictmedqa/`, loaded on first use.

Sources (see `prompts/conflictmedqa/README.md` for file and line of each):

* the authors' code, GitHub `wwyi1828/ConflictMed` (commit d750236 for `src/utils/scenario_generator.py`,
  f9a08dd for `src/evaluation/predict_scenarios.py`). The repository has no licence file: its code is not
  copied here; the prompt strings are reproduced byte for byte as the benchmark's definition, with
  provenance (`*_CODE` templates; the 【】 brackets and the unclosed "【might not," included);
* the paper, Wu et al., "Assessing and Mitigating Medical Knowledge Drift and Conflicts in Large Language
  Models", Findings of EMNLP 2025 (arXiv 2505.07968): Table 11 as printed (`GENERATE_PAPER`), Tables 8-10
  (`GUIDANCE_PAPER_*`, rebuilt from the printed table: see the README for the exact rules) and the
  question of Fig. 1 (`QUESTION_PAPER`).

`SHA256` holds each file's hash, checked by `check()` and the tests.
"""

from __future__ import annotations

import re

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'CLARIFY_CODE': 'e0ebd8ed98df7365149a34198517226d1b41b995d9a2c7f2cd34708be9d09033',
    'GENERATE_CODE': '7f65444bd40e718f666d29da540a37be55398ae78d347150e6bedad340197bf2',
    'GENERATE_PAPER': '5d7dafd2fb3438a5942aa2e48182b594ccb69cff449f5afb882f8dc0290df494',
    'GUIDANCE_CODE_CONFIRMATION': 'daf3938a1eaa1fd1db546addb647432ec769d19fefb9fbae2c90bbb6399086e2',
    'GUIDANCE_CODE_CULTURAL': 'd045bea4e0bf4925f53f6c514ff2ee33dd2c26b56cf5fefb5bce26ee2b2e2fee',
    'GUIDANCE_CODE_FALSE_CONSENSUS': '700a98d6d5a9e8e495473ad163910104a503317b67a04877761c628a77c90854',
    'GUIDANCE_CODE_FREQUENCY': '5268f21a73e66fa7b8e70b77da89cc3192857cfe53a23d794e39390031cc9271',
    'GUIDANCE_CODE_GEOGRAPHIC': '1be569176ba86be7db516ac9f47fa4be3e4b30bcabc0ca553430a48107a31bff',
    'GUIDANCE_CODE_NO_FACTOR': '7cb1a3cf5955471040bd67db1d348ec6ee50fb40b86f9a7dc6c1e19939e46347',
    'GUIDANCE_CODE_RACIAL_ETHNIC': '62887e8c1e682a136c8aec8f98fe9d55219d077af223a2870109cd19049326ee',
    'GUIDANCE_CODE_RECENCY': '6c1feb3160a4dbf4bae7215dc99514f86a0036c00eb455c9ded1694e30331a16',
    'GUIDANCE_CODE_SELF_DIAGNOSIS': '7c293498a95a7678a1c9f195e69144a9f8a5fad69054d62eb421699ed9a068b3',
    'GUIDANCE_CODE_SOCIOECONOMIC': '06ec47ecf7135e31fc8feeb890c9235b36c89137fde1212ff40681c86ba68bf2',
    'GUIDANCE_CODE_STATUS_QUO': '1385bb8e6a6a7c9ebf32ca16ff6907a3f93484be5d4b5040d63420f1b0bfd1cf',
    'GUIDANCE_PAPER_CONFIRMATION': 'edcb333ffb820f2f86ac80a798f9f56de01c55fd61fea59515ac4a2acc815992',
    'GUIDANCE_PAPER_CULTURAL': 'be91e1e57c1785f96db023cf60b962b1c29abe6cb844ae9c85e6c74891198b14',
    'GUIDANCE_PAPER_FALSE_CONSENSUS': '3dd15f8808f913fc216adca706b15adbfa484f1be4fbc0bbe792141ff229612d',
    'GUIDANCE_PAPER_FREQUENCY': '02dea111ef88234925d737f6b3c3e599700d8e684c0bae167804d925175b290a',
    'GUIDANCE_PAPER_GEOGRAPHIC': '3814377ab9103b716f574fde4992eca376ed93eeee1c63d928316f902abf7bb7',
    'GUIDANCE_PAPER_NO_FACTOR': 'e1cd361ee21381fef3bfd5d036c3f7d8abf2c49eb66bd3e32cac29369cc301d2',
    'GUIDANCE_PAPER_RACIAL_ETHNIC': '6f23f5e53bf0107e1b5291d14bab7e2d8013231bce8a1fb2c3e50aadb5fdc3a2',
    'GUIDANCE_PAPER_RECENCY': '46950516d5d21b5ff940c37d949361e29b6004af97fbe5cd91bcc7a9ed0cb89a',
    'GUIDANCE_PAPER_SELF_DIAGNOSIS': 'b92649f9bbd80ac9975254e57836dd4e12269e2948ec82bb849e1e3603c947b5',
    'GUIDANCE_PAPER_SOCIOECONOMIC': '6be146bec2ad4c752175331e3f8529cd310d750e29e5554244338e3d177f38c7',
    'GUIDANCE_PAPER_STATUS_QUO': '5e25092acf204106423c01ba5dd3a9bf43004ce121fd18d720ab849ace8312c3',
    'QUESTION_PAPER': '6fe405ca09ac2e45ffdec749dd31dbf563ed2443ff1b9805a3a331602f77cf17',
    'RAG_CODE': '1a87a437767639e2596fb0d23183bffde91f9c941913403e642bc5bc38edba7c',
    'TASK_CODE': '63b472cd5b4025df930003e4e33be4fac382226a3276653bd9060b758926d769',
}


TEMPLATES = TemplateSet("conflictmedqa", SHA256, "ConflictMedQA")
template = TEMPLATES.template


def fill(name: str, **values: str) -> str:
    """Template `name` with its `{key}` fields replaced in one pass, as Python's `str.format` does in the
    seed: a value that itself contains `{bias_type}` (advice text can hold braces) is not substituted again.
    Every field of the template must be given; a value for a field the template lacks is an error."""
    text = template(name)
    fields = set(re.findall(r"\{([a-z_]+)\}", text))
    if fields != set(values):
        raise KeyError(f"template {name} takes {sorted(fields)}, got {sorted(values)}")
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], text)


check = TEMPLATES.check
