"""``cluster-envs tune``: hyper-parameter sweeps of the SB3 agents with Ray Tune.

The sweep is described in YAML::

    algo: ppo                                   # maskable_ppo, ppo, a2c or dqn
    env: cluster_envs/MoldableScheduling-v0
    env_kwargs: {preset: toy}
    timesteps: 20000                            # per trial
    eval_seeds: 100-104                         # held-out seeds scored after training
    metric: avg_jct_s                           # mean over eval seeds; minimised
    num_samples: 8                              # trials
    seed: 0
    space:                                      # hyper-parameters, Ray Tune samplers
      learning_rate: {loguniform: [1.0e-4, 1.0e-2]}
      gamma: {uniform: [0.95, 0.999]}
      n_steps: {choice: [128, 256, 512]}
      ent_coef: {quniform: [0.0, 0.02, 0.005]}

Each trial trains with :func:`agents.train.train` (the same code as ``cluster-envs
train``) into its own folder, then plays the held-out seeds and reports the mean metric.
Results: ``DIR/sweep.yml`` (the resolved sweep), ``DIR/trials.json`` (every trial's
hyper-parameters and scores, best first), ``DIR/best.yml`` (the best hyper-parameters, a
file ``cluster-envs train --hyperparams`` reads) and Ray Tune's own experiment folder.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from cluster_envs.errors import ConfigError
from cluster_envs.names import unknown_name

#: Ray Tune samplers a space entry may name, with their argument counts.
SAMPLERS = {"uniform": 2, "loguniform": 2, "quniform": 3, "randint": 2, "choice": 1}
SWEEP_KEYS = {
    "algo", "env", "env_kwargs", "timesteps", "eval_seeds", "metric", "mode",
    "num_samples", "seed", "space", "max_concurrent",
}  # fmt: skip


def read_sweep(path: str | Path) -> dict[str, Any]:
    """Read and validate a sweep YAML file (see the module docstring)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"sweep file {str(path)!r} does not exist") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a sweep is a mapping of {sorted(SWEEP_KEYS)}")
    for key in data:
        if key not in SWEEP_KEYS:
            raise ConfigError(f"{path}: {unknown_name('sweep key', key, SWEEP_KEYS)}")
    for key in ("algo", "env", "space"):
        if key not in data:
            raise ConfigError(f"{path}: the sweep needs {key!r}")
    if not isinstance(data["space"], dict) or not data["space"]:
        raise ConfigError(f"{path}: 'space' must map hyper-parameters to samplers")
    for name, spec in data["space"].items():
        _sampler(name, spec)  # validates
    sweep = {
        "env_kwargs": {},
        "timesteps": 10_000,
        "eval_seeds": "100-104",
        "metric": "avg_jct_s",
        "mode": "min",
        "num_samples": 4,
        "seed": 0,
        "max_concurrent": 1,
        **data,
    }
    if sweep["mode"] not in ("min", "max"):
        raise ConfigError(f"{path}: mode must be 'min' or 'max'")
    return sweep


def _sampler(name: str, spec: Any) -> Any:
    """A Ray Tune search-space entry from ``{sampler: [args]}`` (or a constant)."""
    from ray import tune

    if not isinstance(spec, dict):
        return spec  # a constant
    if len(spec) != 1:
        raise ConfigError(f"space entry {name!r} must name one sampler, got {spec!r}")
    kind, args = next(iter(spec.items()))
    if kind not in SAMPLERS:
        raise ConfigError(f"space entry {name!r}: {unknown_name('sampler', kind, SAMPLERS)}")
    if kind == "choice":
        if not isinstance(args, list) or not args:
            raise ConfigError(f"space entry {name!r}: choice needs a non-empty list")
        return tune.choice(args)
    if not isinstance(args, list) or len(args) != SAMPLERS[kind]:
        raise ConfigError(f"space entry {name!r}: {kind} needs {SAMPLERS[kind]} numbers")
    return getattr(tune, kind)(*args)


def _trial(config: dict[str, Any], sweep: dict[str, Any], out: str) -> None:
    """One trial: train, evaluate on held-out seeds, report the score (runs in Ray)."""
    from ray import tune

    from agents.evaluate import evaluate, resolve_model
    from agents.train import train
    from cluster_envs.seeds import parse_seeds

    trial_dir = Path(out) / "trials" / tune.get_context().get_trial_id()
    result = train(
        sweep["algo"],
        sweep["env"],
        trial_dir,
        timesteps=int(sweep["timesteps"]),
        seed=int(sweep["seed"]),
        env_kwargs=dict(sweep["env_kwargs"]),
        hyperparams={**config},
        eval_freq=0,
        progress_bar=False,
        force=True,
    )
    spec = resolve_model(str(result.last_model))
    _, _, rows = evaluate(
        spec, sweep["env"], dict(sweep["env_kwargs"]), parse_seeds(str(sweep["eval_seeds"]))
    )
    scores = [r[sweep["metric"]] for r in rows if sweep["metric"] in r]
    tune.report({sweep["metric"]: sum(scores) / len(scores), "fps": result.fps})


def run_sweep(sweep: dict[str, Any], out: Path, force: bool = False) -> list[dict[str, Any]]:
    """Run the sweep into ``out``; returns the trials, best first."""
    import ray
    from ray import tune

    if out.exists() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} already holds files; pass --force to overwrite them")
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.yml").write_text(yaml.safe_dump(sweep, sort_keys=False))
    space = {name: _sampler(name, spec) for name, spec in sweep["space"].items()}
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=max(int(sweep["max_concurrent"]), 1), include_dashboard=False,
                 log_to_driver=False)  # fmt: skip
    try:
        tuner = tune.Tuner(
            tune.with_parameters(_trial, sweep=sweep, out=str(out.resolve())),
            param_space=space,
            tune_config=tune.TuneConfig(
                metric=sweep["metric"],
                mode=sweep["mode"],
                num_samples=int(sweep["num_samples"]),
                max_concurrent_trials=int(sweep["max_concurrent"]),
                search_alg=tune.search.BasicVariantGenerator(random_state=int(sweep["seed"])),
            ),
            run_config=tune.RunConfig(name="ray_tune", storage_path=str(out.resolve()), verbose=0),
        )
        grid = tuner.fit()
    finally:
        if started:
            ray.shutdown()
    trials: list[dict[str, Any]] = []
    for i in range(len(grid)):
        res = grid[i]
        if res.error is not None:
            trials.append({"config": res.config, "error": str(res.error)})
        else:
            assert res.metrics is not None  # a trial that ended without error reported
            trials.append({"config": res.config, sweep["metric"]: res.metrics[sweep["metric"]]})
    reverse = sweep["mode"] == "max"
    ok = sorted(
        (t for t in trials if "error" not in t), key=lambda t: t[sweep["metric"]], reverse=reverse
    )
    trials = ok + [t for t in trials if "error" in t]
    (out / "trials.json").write_text(json.dumps(trials, indent=1, default=float) + "\n")
    if ok:
        best = {sweep["env"]: {**ok[0]["config"], "env_kwargs": dict(sweep["env_kwargs"])}}
        (out / "best.yml").write_text(yaml.safe_dump(best, sort_keys=False))
    return trials


def _add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sweep", required=True, help="sweep YAML (search space and budget)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--num-samples", type=int, default=None, help="override num_samples")
    p.add_argument("--timesteps", type=int, default=None, help="override timesteps per trial")
    p.add_argument("--force", action="store_true", help="overwrite an existing output folder")


def _run(args: argparse.Namespace) -> int:
    sweep = read_sweep(args.sweep)
    if args.num_samples is not None:
        sweep["num_samples"] = args.num_samples
    if args.timesteps is not None:
        sweep["timesteps"] = args.timesteps
    trials = run_sweep(sweep, Path(args.out), args.force)
    metric = sweep["metric"]
    for t in trials:
        score = t.get(metric, t.get("error"))
        print(f"{metric}={score}  {json.dumps(t['config'], default=float)}")
    if not any(metric in t for t in trials):
        print("every trial failed", flush=True)
        return 1
    print(f"best hyper-parameters: {Path(args.out) / 'best.yml'}")
    return 0


TUNE = ("hyper-parameter sweep of an SB3 agent with Ray Tune (space in YAML)", _add, _run)
