"""CLCRec through the task/model engine gives the previous engine's numbers (one thread).

EXPECTED_* come from ``python benchmarks/pins/pin_previous_engine.py e6ed567``: the same
configuration and data (``pinned_run.py``) on the CLCRec-only trainer this engine replaced. On the machine
that made them the two agree bit for bit; the tolerances only absorb another CPU's float
rounding (a rank flip at the top-20 boundary moves a metric by about 1/200).
"""

from __future__ import annotations

import pytest
from pinned_run import SETTINGS, pinned_dataset

from coldbrew.config import make_config
from coldbrew.training.run import train

EXPECTED_LOSSES = [
    {"loss": 2.824852466583252, "item_content": 2.71091365814209, "user_item": 2.829240560531616, "reg": 0.5477542877197266},
    {"loss": 2.7112832069396973, "item_content": 2.518893003463745, "user_item": 2.800354480743408, "reg": 0.5165950059890747},
    {"loss": 2.641700506210327, "item_content": 2.429234027862549, "user_item": 2.7465696334838867, "reg": 0.5379854440689087},
]  # fmt: skip
EXPECTED_LAST_VALIDATION = {
    "all": {"recall@20": 0.6917083333333331, "ndcg@20": 0.5617109377003604, "precision@10": 0.276},
    "warm": {"recall@20": 0.6753258845437616, "ndcg@20": 0.42508246880853295, "precision@10": 0.11731843575418996},
    "cold": {"recall@20": 0.9874788494077835, "ndcg@20": 0.7258405125124561, "precision@10": 0.2609137055837564},
}  # fmt: skip


def test_short_run_matches_the_previous_engine(tmp_path, one_thread):
    config = make_config({**SETTINGS, "data": "synthetic"})  # the dataset is given below
    results = train(config, tmp_path / "run", dataset=pinned_dataset())
    losses = [entry["losses"] for entry in results["history"]]
    assert losses == [pytest.approx(expected, rel=1e-4) for expected in EXPECTED_LOSSES]
    last = results["history"][-1]["val"]
    for group, expected in EXPECTED_LAST_VALIDATION.items():
        for name, value in expected.items():
            assert last[group][name] == pytest.approx(value, abs=0.011), (group, name)
