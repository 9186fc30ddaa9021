"""The model registry: name -> (typed config section, builder, task). No torch imported here.

A builder is named as ``"module:function"`` and imported only when a model is built, so the
CLI can list every model and its options without loading torch. ``build(dataset, config)``
returns an ``nn.Module`` keeping the contract of ``coldbrew.models.base``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from coldbrew.errors import ColdbrewError
from coldbrew.models.blend_config import BlendOptions
from coldbrew.models.clcrec.config import CLCRecConfig
from coldbrew.models.forecast.lstm_config import LSTMOptions
from coldbrew.models.lm.config import LMConfig
from coldbrew.models.zoo.aldi_config import ALDIOptions
from coldbrew.models.zoo.bpr_config import BPROptions
from coldbrew.models.zoo.deepmusic_config import DeepMusicOptions
from coldbrew.models.zoo.dropoutnet_config import DropoutNetOptions
from coldbrew.models.zoo.gar_config import GAROptions
from coldbrew.models.zoo.heater_config import HeaterOptions
from coldbrew.models.zoo.knn_config import KNNOptions
from coldbrew.models.zoo.marec_config import MARecOptions
from coldbrew.models.zoo.popularity_config import PopularityOptions
from coldbrew.models.zoo.ridge_config import RidgeOptions


@dataclass(frozen=True)
class ModelSpec:
    name: str
    config: type  # the model's options (a dataclass of ``option`` fields)
    builder: str  # "module:function" taking (dataset, TrainConfig)
    task: str  # the task that feeds it: "recommendation" or "forecasting"
    summary: str
    # options set for evaluation only: training-only parts need not be built to score
    evaluation_overrides: dict[str, Any] = field(default_factory=dict)
    # run options whose default differs for this model (under protocol defaults and the user's)
    run_defaults: dict[str, Any] = field(default_factory=dict)
    # options added after runs were saved without them: the value such a run was trained with
    absent_options: dict[str, Any] = field(default_factory=dict)
    # built from something trained before it: its builder takes (dataset, config, teacher), where
    # teacher is a ``coldbrew.models.base.Teacher``, or None when a saved run is rebuilt (its
    # checkpoint then fills the teacher's buffers). True: the collaborative backbone
    # (``TEACHERS[True]``); a "module:function" string: another provider (a blend's runs)
    teacher: bool | str = False
    # False: nothing to train (content KNN); a run evaluates the built model as it is
    trains: bool = True
    # run options the model has no use for beyond those of training (a blend reads its runs')
    ignores: tuple[str, ...] = ()
    # the validation group whose Recall@20 selects its epoch unless --early-stop-metric says
    # otherwise (where validation has no such group: "all", else the group it has)
    monitor_group: str = "cold"
    # False: the model never reads the data's sentence-encoded text block (the LM: its own
    # backbone reads the item texts), so its data is loaded without it and no encoder runs
    reads_text_vectors: bool = True
    # False: every user gets the same ranking (popularity); tables say so beside its name
    personalised: bool = True

    def build(self, dataset: Any, config: Any, teacher: Any = None) -> Any:
        builder = _load(self.builder)
        if self.teacher:
            return builder(dataset, config, teacher)
        return builder(dataset, config)

    def build_teacher(self, dataset: Any, config: Any, *, progress: bool) -> Any:
        """What the model is built from (None for a model that needs nothing)."""
        if not self.teacher:
            return None
        provider = _load(COLLABORATIVE if self.teacher is True else self.teacher)
        return provider(dataset, config.model_options, config.seed, progress=progress)


def build_model(
    name: str, dataset: Any, config: Any, teacher: Any = None, *, fixed_shapes: bool = False
) -> Any:
    """The registered model ``name`` built for ``dataset`` with ``config``; its initial weights
    come from the global torch RNG, like any ``nn.Module``'s. ``teacher``: a collaborative
    backbone's embeddings for the models that learn from one (None: rebuilt from a checkpoint).
    ``fixed_shapes``: the model takes the step a GPU takes on any device (``Recommender``)."""
    model = model_spec(name).build(dataset, config, teacher)
    if fixed_shapes:  # the model and its parts that choose a path (ContentEncoder)
        for module in model.modules():
            if hasattr(module, "fixed_shapes"):
                module.fixed_shapes = True
    return model


def _load(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


# the collaborative backbone, trained once per dataset, seed and options
COLLABORATIVE = "coldbrew.training.backbone:collaborative_teacher"

MODELS: dict[str, ModelSpec] = {
    "clcrec": ModelSpec(
        "clcrec",
        CLCRecConfig,
        "coldbrew.models.clcrec.model:build",
        "recommendation",
        "CLCRec (Wei et al. 2021): contrastive ID <-> content learning",
        evaluation_overrides={"neighbor_loss": False},
        # lr: with CLCRecConfig's defaults, a 20-trial search's best. patience 4 (the runs' 7
        # before): on ml-1m-coldstart seeds 1-3 patience 3, 4 and 7 select the same epochs
        # (4, 8, 6), 4 stops after 8, 12, 10 instead of 11, >= 15, >= 13; patience 2 misses
        # seed 3's (BENCHMARKS.md, "Time to a model", benchmarks/speed/replay_stopping.py)
        run_defaults={"lr": 0.0027, "patience": 4},
        absent_options={"neighbor_negatives": 0},  # the term used every other user before
    ),
    "lm": ModelSpec(
        "lm",
        LMConfig,
        "coldbrew.models.lm.builder:build_for_run",
        "recommendation",
        "LM metadata recommender: item and user text through a language model, cached or LoRA",
        run_defaults={"lr": 0.0013, "batch_size": 1024},  # with LMConfig's: a search's best
        absent_options={"score": "dot", "item_features": False},  # id_dropout was saved
        ignores=("text_encoder",),  # its backbone reads the texts; the text block is left out
        reads_text_vectors=False,
    ),
    "lstm": ModelSpec(
        "lstm",
        LSTMOptions,
        "coldbrew.models.forecast.lstm:build",
        "forecasting",
        "LSTM forecaster of daily interaction counts (coldbrew forecast)",
    ),
    "blend": ModelSpec(
        "blend",
        BlendOptions,
        "coldbrew.models.blend:build",
        "recommendation",
        "a blend of trained runs' per-user standardised scores (coldbrew blend)",
        teacher="coldbrew.training.blend:blend_vectors",
        trains=False,
        ignores=("features", "text_encoder"),
    ),
    "deepmusic": ModelSpec(
        "deepmusic",
        DeepMusicOptions,
        "coldbrew.models.zoo.deepmusic:build",
        "recommendation",
        "DeepMusic (van den Oord et al. 2013): content MLP regresses the backbone's item vectors",
        # an epoch regresses every warm item about 300 times at this batch; a few suffice, and
        # the decay keeps the MLP from fitting the backbone's noise (val cold Recall@20 fell
        # after epoch 1 without it)
        run_defaults={"batch_size": 16384, "lr": 0.005, "weight_decay": 0.001, "epochs": 3},
        teacher=True,
    ),
    "dropoutnet": ModelSpec(
        "dropoutnet",
        DropoutNetOptions,
        "coldbrew.models.zoo.dropoutnet:build",
        "recommendation",
        "DropoutNet (Volkovs et al. 2017): towers reproduce backbone scores, preference dropout",
        # seed 1 on ml-1m-coldstart (als backbone), val cold Recall@20 by epoch: 0.059 0.067
        # 0.073 0.085 0.095 0.099 0.101 0.099: still rising past 2 epochs; early stop picks
        run_defaults={"batch_size": 4096, "lr": 0.005, "epochs": 12},
        teacher=True,
    ),
    "heater": ModelSpec(
        "heater",
        HeaterOptions,
        "coldbrew.models.zoo.heater:build",
        "recommendation",
        "Heater (Zhu et al. 2020): randomized training, mixture-of-experts content, distillation",
        # seed 1 on ml-1m-coldstart (als backbone), val cold Recall@20 by epoch: 0.060 0.068
        # 0.093 0.110 0.105 0.112 0.117: still rising past 2 epochs; early stop picks
        run_defaults={"batch_size": 4096, "lr": 0.005, "epochs": 12},
        teacher=True,
    ),
    "gar": ModelSpec(
        "gar",
        GAROptions,
        "coldbrew.models.zoo.gar:build",
        "recommendation",
        "GAR (Chen et al. 2022): content generator vs recommender over a warm backbone",
        teacher=True,
        # a short sweep on val (seed 1, als backbone): cold Recall@20 peaked at epoch 2 of lr
        # 0.001 (the generator then overfits the warm items); large steps: the content encoder
        # runs on every distinct item of a step
        run_defaults={"batch_size": 8192, "lr": 0.001, "epochs": 2},
    ),
    "aldi": ModelSpec(
        "aldi",
        ALDIOptions,
        "coldbrew.models.zoo.aldi:build",
        "recommendation",
        "ALDI (Huang et al. 2023): content student distilled from a warm backbone",
        teacher=True,
        # large steps: the content encoder runs on every distinct item of a step (not searched);
        # patience 4 (7 before): seeds 1-3 on ml-1m-coldstart select the same epochs (3, 7, 3)
        # with patience 2, 3, 4 and 7, and stop after 7, 11, 7 instead of 10, >= 14, 10
        # (BENCHMARKS.md, "Time to a model")
        run_defaults={"batch_size": 8192, "lr": 0.005, "patience": 4},
    ),
    "knn": ModelSpec(
        "knn",
        KNNOptions,
        "coldbrew.models.zoo.content_knn:build",
        "recommendation",
        "content KNN: cold items average their content neighbours' backbone vectors",
        teacher=True,
        trains=False,
    ),
    "ridge": ModelSpec(
        "ridge",
        RidgeOptions,
        "coldbrew.models.zoo.ridge:build",
        "recommendation",
        "ridge: a closed-form linear map from content to the backbone's item vectors",
        teacher=True,
        trains=False,
    ),
    "marec": ModelSpec(
        "marec",
        MARecOptions,
        "coldbrew.models.zoo.marec:build",
        "recommendation",
        "MARec (Monteil et al. 2024): closed-form EASE whose cold columns follow content",
        trains=False,
    ),
    "popularity": ModelSpec(
        "popularity",
        PopularityOptions,
        "coldbrew.models.zoo.popularity:build",
        "recommendation",
        "content popularity: one ranking for all, cold items by the popularity content predicts",
        trains=False,
        personalised=False,
    ),
    "bpr": ModelSpec(
        "bpr",
        BPROptions,
        "coldbrew.models.zoo.bpr:build",
        "recommendation",
        "BPR-MF: a warm baseline (cold items score zero) and the zoo's collaborative backbone",
        monitor_group="warm",  # its cold scores are all zero: cold Recall@20 ranks ties
        reads_text_vectors=False,  # it reads no content: no encode, one row on an encoder board
    ),
}


def resolve_model_name(name: str) -> str:
    """A registered name, case-insensitively (the original's ``--model_name=CLCRec``)."""
    for known in MODELS:
        if known == name.lower():
            return known
    raise ColdbrewError(f"unknown model {name!r}; available: {', '.join(MODELS)}")


def model_spec(name: str) -> ModelSpec:
    return MODELS[resolve_model_name(name)]
