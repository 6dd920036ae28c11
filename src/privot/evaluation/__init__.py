"""Evaluation of releases against the data: not releases, and never publishable.

One namespace for the measures privot uses to say how good a release is, for every
capability: the heatmaps' similarity and EMD (:mod:`privot.evaluation.heatmaps`), the
barycenters' transport costs (:mod:`privot.evaluation.barycenters`), the fairness
metrics of a trained model (:mod:`privot.evaluation.learning`) and the sampling
mechanisms' error measures (:mod:`privot.evaluation.sampling`).

Privacy
-------
Every function here reads the exact data (or its exact aggregate) and a release, and
returns an exact statistic of both: **curator-only**. Benchmarks, the demo's report and
the CLI's curator files use them; no release path does.
"""
