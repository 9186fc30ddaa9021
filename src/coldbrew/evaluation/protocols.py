"""The two evaluation protocols, and the original CLCRec's rule for picking the best epoch.

``protocol="coldbrew"`` (the default): a group ranks only its own items (``"warm"`` the warm
items, ``"cold"`` the cold items, ``"all"`` every item) and a user's training items are set to
``-inf``, so they are never recommended.

``protocol="original"``: what the original CLCRec ``Metric.rank`` does (weiyinwei/CLCRec, also
kept by the seed system's fork). Every group ranks every item; the user's training items *and*
the other group's items are set to ``1e-15`` instead of being removed. So in a cold ranking
every warm item sits at ``1e-15``, above each cold item with a negative score: a user whose
cold scores are mostly negative gets warm items (never hits) in the top K. Likewise in the
"all" ranking a training item outranks unseen items with negative scores. The metrics are then
computed from that list as before (a masked item that happens to be a held-out positive counts
as a hit, as in the original; in the CLCRec files no positive is ever masked).

Equal scores (every masked item, for one) rank by the items' tie keys, a fixed permutation of
the ids, in both protocols (``coldbrew.evaluation.topk``). The original uses ``torch.topk``, whose choice among equal
scores is unspecified; it changes the metrics only when a masked item is a positive.

Model selection in the original (``main.py``): after every epoch it ranks val and test; the
epoch whose *validation all-items Recall@10* is strictly greater than the best so far becomes
the best (the best starts at ``0.0``), and its test metrics are the ones reported. Training
stops at the 7th consecutive epoch without a strict improvement (``num_decreases > 5`` checked
before the increment; the seed system's fork increments first and stops at the 6th), or after
1000 epochs.
"""

from __future__ import annotations

from coldbrew.errors import ColdbrewError

PROTOCOLS = ("coldbrew", "original")
ORIGINAL_MASK_VALUE = 1e-15  # the original's stand-in score for a masked item
ORIGINAL_INITIAL_BEST = 0.0  # the original's max_recall before the first epoch


def check_protocol(protocol: str) -> str:
    if protocol not in PROTOCOLS:
        raise ColdbrewError(f"unknown protocol {protocol!r}; expected {' or '.join(PROTOCOLS)}")
    return protocol


def mask_value(protocol: str) -> float:
    """The score a training item (and, in the original, another group's item) is given."""
    return ORIGINAL_MASK_VALUE if check_protocol(protocol) == "original" else float("-inf")


def original_improved(value: float, best: float | None) -> bool:
    """The original's test: ``value > best``, where no best yet means 0.0. NaN never improves."""
    return value > (ORIGINAL_INITIAL_BEST if best is None else best)
