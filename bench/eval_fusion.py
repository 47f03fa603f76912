"""The fusion rows of `bench.eval_retrieval` again, from the candidates it saved: no upload, no
ingestion, no search, so a change to `retrieval/fusion.py` is scored in seconds.

    .venv/bin/python -m bench.eval_retrieval --dataset DIR --level LEVEL --queries all \\
        --save-candidates /tmp/candidates.jsonl          # writes /tmp/candidates-LEVEL.jsonl
    .venv/bin/python -m bench.eval_fusion /tmp/candidates-LEVEL.jsonl [...]

The rows are `eval_retrieval`'s (the same `fusion_variants`), over the same candidates; its
"docchat" row runs the service's retriever and is not repeated here. Scores as there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.common import table
from bench.eval_retrieval import METRICS, Candidates, first_hit, fusion_variants, scores_of
from docchat.config import FusionSettings
from docchat.retrieval.fusion import Fusion


def _candidates(saved: dict[str, object]) -> Candidates:
    lexical = saved["lexical"]
    assert isinstance(lexical, list)
    return Candidates(
        [(str(key), float(score)) for key, score in saved["vector"]],  # type: ignore[attr-defined]
        [(str(key), float(score)) for key, score, _ in lexical],
        {str(key): float(value) for key, value in saved["others"].items()},  # type: ignore[attr-defined]
        {str(key): float(coverage) for key, _, coverage in lexical},
    )


def evaluate(path: Path) -> list[list[str]]:
    variants = fusion_variants(Fusion.from_settings(FusionSettings(_env_file=None)))  # type: ignore[call-arg]
    totals = {label: dict.fromkeys(METRICS, 0.0) for label in variants}
    questions = 0
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            saved = json.loads(line)
            found = _candidates(saved)
            units = {key: frozenset(value) for key, value in saved["units"].items()}
            relevant = set(saved["relevant"])
            questions += 1
            for label, rank in variants.items():
                ranking = [units.get(key, frozenset()) for key in rank(found)]
                if saved.get("documents_are_units"):
                    ranking = list(dict.fromkeys(ranking))
                for metric, value in scores_of(first_hit(ranking, relevant)).items():
                    totals[label][metric] += value
    return [
        [label, *(f"{values[metric] / max(questions, 1):.3f}" for metric in METRICS)]
        for label, values in totals.items()
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("candidates", type=Path, nargs="+", help="files of --save-candidates")
    for path in parser.parse_args().candidates:
        print(path.name)
        print(table(["retriever", *METRICS], evaluate(path)))
        print()
