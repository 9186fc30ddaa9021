#!/usr/bin/env python
"""The teacher models' step before and after the change that weighs distinct rows by their
occurrences (Heater, DeepMusic) and fuses the pair scores on the CPU (Heater, DropoutNet): one
trainer runs the code as it was (its forward and pair scores, copied below), the other the
code as it is. First one batch through both with the same weights (the relative differences
of loss and gradients printed), then calls in turn in one process, medians of the step's wall
time.

    COLDBREW_DATA=../shared/data python benchmarks/teacher_step_before_after.py mpnet heater 100
"""

import statistics
import sys
import time
import types

import torch

from coldbrew.config import Flags, make_config
from coldbrew.data import load_dataset
from coldbrew.models.base import LossOutput
from coldbrew.perf.bench import measured_call
from coldbrew.training.run import build_trainer


def squared_distance(predicted, target):
    return (predicted - target).square().sum(-1).mean()


def heater_before(self, batch):
    users, items = batch.users, batch.items
    distinct, inverse = self.step_items(items)
    content = self.content_vectors(distinct)
    preference = self.teacher_items[distinct]
    swapped = self.content_only(distinct, self.randomize)
    item_vectors = self.item_tower(torch.where(swapped, content, preference))
    regression = self.score_regression(users, items, item_vectors, inverse)
    similarity = squared_distance(content[inverse], self.teacher_items[items])
    total = regression + self.similarity_weight * similarity
    return LossOutput(total=total, terms={"regression": regression, "similarity": similarity})


def deepmusic_before(self, batch):
    distinct, inverse = self.step_items(batch.items)
    predicted = self.encoder(distinct)[inverse]
    regression = squared_distance(predicted, self.teacher_items[batch.items])
    return LossOutput(total=regression, terms={"regression": regression})


def pair_scores_before(self, user_vectors, item_vectors, rows):
    picked = torch.nn.functional.embedding(rows, item_vectors)
    return torch.bmm(picked, user_vectors.unsqueeze(2)).squeeze(2)


BEFORE = {"heater": heater_before, "deepmusic": deepmusic_before}
enc, model_name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = make_config(
    Flags(
        {
            "data": "ml-1m-coldstart",
            "features": "genre,text",
            "model": model_name,
            "text_encoder": enc,
            "device": "cpu",
        }
    )
)
ds = load_dataset(config.data, features=config.resolved_features(), seed=1, text_encoder=enc)
tr_new = build_trainer(config, ds)
tr_old = build_trainer(config, ds)
m = tr_old.model
if model_name in BEFORE:
    m.forward = types.MethodType(BEFORE[model_name], m)
m.pair_scores = types.MethodType(pair_scores_before, m)


def loss_and_grads(model, batch):
    model.zero_grad()
    torch.manual_seed(5)  # the same random swaps / dropouts in both
    loss = model(batch).total
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads


# first, the same weights and batch through both codes: equal up to float rounding
tr_old.model.load_state_dict(tr_new.model.state_dict())
torch.manual_seed(0)
batch = tr_new.task.make_batch(torch.arange(config.batch_size))
loss_new, grads_new = loss_and_grads(tr_new.model, batch)
loss_old, grads_old = loss_and_grads(m, batch)
worst = max(
    float((grads_new[k] - grads_old[k]).abs().max() / grads_old[k].abs().max().clamp_min(1e-30))
    for k in grads_old
)
print(
    f"{model_name} {enc}: one batch, relative difference of the loss "
    f"{abs(float(loss_new - loss_old)) / abs(float(loss_old)):.1e}, of the gradients at most "
    f"{worst:.1e}"
)
new, _ = measured_call("train", tr_new, config, ds.num_users)
old, _ = measured_call("train", tr_old, config, ds.num_users)
for _ in range(5):
    new()
    old()
times = {"before": [], "after": []}
for _ in range(steps):
    for name, call in (("before", old), ("after", new)):
        t = time.perf_counter()
        call()
        times[name].append(time.perf_counter() - t)
b, a = statistics.median(times["before"]), statistics.median(times["after"])
print(
    f"{model_name} {enc} threads {torch.get_num_threads()} batch {config.batch_size}: before {b * 1000:.1f} ms, after {a * 1000:.1f} ms, {b / a:.2f}x"
)
