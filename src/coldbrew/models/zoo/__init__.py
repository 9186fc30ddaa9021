"""The cold-start zoo: the baselines of the cold-start literature, one file per model beside
its torch-free options (``NAME_config.py``).

Most learn from a collaborative backbone trained on the warm interactions
(``coldbrew.training.backbone``) and share ``teacher.py``: DeepMusic, DropoutNet, Heater, GAR,
ALDI, content KNN and ridge. MARec (closed-form EASE) and BPR-MF (the warm baseline, and the
backbone ``--backbone bpr`` trains) stand alone. Nothing here imports torch until a model
module is imported.
"""
