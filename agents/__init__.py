"""SB3 agents for cluster-envs: training, evaluation, callbacks and hyper-parameter YAML.

* ``cluster-envs train`` / :func:`agents.train.train`: MaskablePPO, PPO, A2C, DQN with
  zoo-style YAML (``agents/hyperparams/<algo>.yml``), TensorBoard cluster metrics,
  held-out evaluation, checkpoints and resumable, reproducible run folders.
* ``cluster-envs evaluate`` / :mod:`agents.evaluate`: per-seed metrics, mean ± 95% CI.
* :class:`agents.policy.Sb3Agent`: a model as an env agent; registry prefixes
  ``sb3:PATH`` and ``pretrained:<EnvName-vN>``.

This package never imports ``baselines/`` (nor does ``baselines/`` import it).
"""
