"""The LM recommender's settings: one typed source of defaults, importable without torch.

``lm_mode``:

* ``cache``: the backbone is frozen; every item text (and user text) is embedded once, in
  batches, and cached on disk, so training runs at the speed of a content model.
* ``dynamic``: the backbone runs inside the training step, on the distinct items of the step.
  ``freeze`` trains the heads only; ``lora="R,ALPHA[,MODULE,...]"`` trains low-rank adapters
  (``peft``); neither fine-tunes every backbone weight.
* ``tune``: fine-tuning a CPU can afford. The backbone's lower layers run once per item and
  their output states are held; only the top ``tune_layers`` layers run in the step, with LoRA
  adapters (``lora``, default ``8,16``). A step sends ``tune_items`` of its distinct items
  through them; its other items take their vectors from a table that every such pass (and
  every evaluation) refreshes (``coldbrew.models.lm.tuned``).
"""

from __future__ import annotations

from dataclasses import dataclass

from coldbrew.errors import ColdbrewError
from coldbrew.options import option

LM_MODES = ("cache", "dynamic", "tune")
LOSSES = ("bpr", "infonce")
SCORES = ("dot", "cosine")
POOLINGS = ("auto", "mean", "last", "cls")
DEFAULT_NUM_NEG = {"bpr": 1, "infonce": 128}  # the seed's triples; a softmax wants many more
DEFAULT_TUNE_LORA = "8,16"  # tune mode trains adapters only


# the zoo's collaborative backbones (TeacherOptions.backbone): never a text model's name
ZOO_BACKBONES = ("als", "bpr")


@dataclass(frozen=True)
class LoraSpec:
    """``--lora R,ALPHA[,MODULE,...]``: rank, scale numerator and target modules (``()`` lets
    ``peft`` pick its default for the model type, e.g. ``query,value`` for BERT)."""

    rank: int
    alpha: float
    modules: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LoraSpec:
        parts = [part.strip() for part in text.split(",")]
        try:
            rank, alpha = int(parts[0]), float(parts[1])
        except (ValueError, IndexError):
            raise ColdbrewError(
                f"--lora expects R,ALPHA[,MODULE,...] such as 8,16 or 8,16,query,value; got {text!r}"
            ) from None
        if rank <= 0 or alpha <= 0:
            raise ColdbrewError(f"--lora rank and alpha must be positive, got {text!r}")
        modules = tuple(part for part in parts[2:] if part)
        return cls(rank, alpha, modules)


@dataclass
class LMConfig:
    """Settings of ``LMRecommender``; ``build(dataset, config)`` turns them into a model."""

    dim: int = option(64, "width of the user and item vectors that are scored", minimum=1)
    hidden: int = option(256, "hidden width of the projection MLPs", minimum=1)
    backbone: str = option(
        "all-MiniLM-L6-v2", "text model: the packaged MiniLM, mpnet, a local folder or a hub name"
    )
    pooling: str = option(
        "auto",
        "mean, last, cls or auto (last for decoder-only models, else mean)",
        choices=POOLINGS,
    )
    # 128: title, genres, director, cast and the plot's first sentences. Against 256, val cold
    # Recall@20 on ml-1m-coldstart (cache mode, seeds 1-3) rose on every seed (+0.012 ± 0.003):
    # mean pooling over a whole plot dilutes the rest (BENCHMARKS.md, "Tune mode")
    max_length: int = option(128, "tokens per text", minimum=1)
    lm_mode: str = option(
        "cache",
        "cache: frozen backbone, texts embedded once; dynamic: backbone in the step; tune: "
        "lower layers run once per item, the top layers fine-tuned with LoRA in the step",
        choices=LM_MODES,
    )
    freeze: bool = option(False, "dynamic mode: train the heads only")
    lora: str | None = option(
        None,
        f"dynamic or tune mode: LoRA adapters R,ALPHA[,MODULE,...] (peft; tune: {DEFAULT_TUNE_LORA})",
    )
    tune_layers: int = option(
        1, "tune mode: top layers fine-tuned (LoRA); the rest run once", minimum=1
    )
    # 16 at 128 tokens: 1.16x CLCRec in 17.6 CPU-minutes a run (BENCHMARKS.md, "Tune mode")
    tune_items: int = option(
        16,
        "tune mode: distinct items per step of --batch-size rows sent through the tuned layers "
        "(the step's other items use vectors refreshed as items pass)",
        minimum=1,
    )
    grad_checkpointing: bool = option(False, "dynamic mode with a trained backbone: recompute")
    # loss, score, num_neg, temperature, id_dropout (and lr 0.0013, batch 1024: the registry's
    # run_defaults): a screening and a 20-trial search on ml-1m-coldstart, then 3 seeds
    # (BENCHMARKS.md, "Accuracy against CLCRec, throughput, LoRA")
    loss: str = option(
        "infonce", "infonce (K negatives) or bpr (the seed's triples)", choices=LOSSES
    )
    num_neg: int | None = option(
        None, "negatives per positive (default: infonce 128, bpr 1)", minimum=1
    )
    temperature: float = option(0.11, "infonce logits are scores / temperature", above=0)
    score: str = option(
        "cosine",
        "cosine (unit user and item vectors; pair with a small temperature) or dot",
        choices=SCORES,
    )
    item_features: bool = option(
        True,
        "feed the data's item feature vectors (genre ...; not its precomputed text vectors) "
        "to the item head beside the text",
    )
    id_dropout: float = option(
        0.36,
        "training: drop a warm item's ID vector with this probability",
        minimum=0,
        maximum=0.99,
    )
    text_batch_size: int = option(64, "texts per backbone call when embedding", minimum=1)

    def __post_init__(self) -> None:
        # none means "the loss's default": resolved here, so config.yaml and results.json
        # record the number of negatives the run drew, not null
        if self.num_neg is None:
            self.num_neg = DEFAULT_NUM_NEG.get(self.loss)
        if self.lm_mode == "tune" and self.lora is None:
            self.lora = DEFAULT_TUNE_LORA
        self.validate()

    def resolved_num_neg(self) -> int:
        return self.num_neg if self.num_neg is not None else DEFAULT_NUM_NEG[self.loss]

    def negative_sampling(self) -> tuple[int, bool]:
        """Negatives per positive the recommendation task draws, and whether they all differ."""
        return self.resolved_num_neg(), False

    def fake_trace_blocker(self) -> str | None:
        """Why ``coldbrew memory`` cannot trace this model's step on fake tensors, if it can't."""
        if self.lm_mode != "cache":
            return (
                f"{self.lm_mode} mode loads pretrained backbone weights (and peft adapters), which "
                "fake tensors cannot hold; it is estimated from shapes instead "
                "(coldbrew.models.lm.memory.estimate_for_run)"
            )
        return None

    def shape_estimate(self, data, batch_size: int, world_size: int) -> dict[str, int]:
        """Per-device bytes of this model's step by part, from shapes
        (``coldbrew.models.lm.memory``): what ``coldbrew memory`` reports where it cannot
        trace the step (``fake_trace_blocker``)."""
        from coldbrew.models.lm.memory import estimate_for_run

        return estimate_for_run(self, data, batch_size, world_size).as_dict()

    def lora_spec(self) -> LoraSpec | None:
        return None if self.lora is None else LoraSpec.parse(self.lora)

    @property
    def trains_backbone(self) -> bool:
        """Whether any backbone weight receives gradients (LoRA, or full fine-tuning)."""
        return self.lm_mode == "tune" or (self.lm_mode == "dynamic" and not self.freeze)

    def validate(self) -> None:
        """Raise ``ColdbrewError`` with a one-line reason for an impossible combination."""
        checks = [
            (
                self.lm_mode in LM_MODES,
                f"lm_mode must be one of {', '.join(LM_MODES)}, not {self.lm_mode!r}",
            ),
            (
                self.backbone not in ZOO_BACKBONES,
                f"--backbone {self.backbone} is a collaborative backbone of the cold-start zoo "
                "(knn, gar ...); the lm's --backbone is a text model: all-MiniLM-L6-v2 (the "
                "default), mpnet, a local folder or a hub name",
            ),
            (self.loss in LOSSES, f"loss must be bpr or infonce, not {self.loss!r}"),
            (self.score in SCORES, f"score must be dot or cosine, not {self.score!r}"),
            (self.pooling in POOLINGS, f"pooling must be one of {', '.join(POOLINGS)}"),
            (self.dim > 0 and self.hidden > 0, "dim and hidden must be positive"),
            (self.max_length > 0, "max_length must be positive"),
            (self.text_batch_size > 0, "text_batch_size must be positive"),
            (self.num_neg is None or self.num_neg > 0, "num_neg must be positive"),
            (self.temperature > 0, "temperature must be positive"),
            (0.0 <= self.id_dropout < 1.0, "id_dropout must be in [0, 1)"),
            (
                self.lm_mode != "cache" or (not self.freeze and self.lora is None),
                "--freeze and --lora apply to lm_mode=dynamic or tune (cache mode is always frozen)",
            ),
            (
                not (self.freeze and self.lm_mode == "tune"),
                "tune mode trains LoRA adapters: no --freeze",
            ),
            (
                self.tune_layers > 0 and self.tune_items > 0,
                "tune_layers and tune_items must be positive",
            ),
            (not (self.freeze and self.lora is not None), "--freeze and --lora exclude each other"),
            (
                not self.grad_checkpointing or self.trains_backbone,
                "--grad-checkpointing needs a trained backbone (lm_mode=dynamic without --freeze)",
            ),
            (
                not (self.grad_checkpointing and self.lm_mode == "tune"),
                "--grad-checkpointing is for dynamic mode (tune mode holds the lower layers' states)",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ColdbrewError(f"bad lm config: {message}")
        self.lora_spec()
