"""``cluster-envs train`` / ``evaluate`` through the real CLI, with a tiny budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agents.cli import _add_train
from cluster_envs.cli import main

TOY = '{"preset": "toy"}'
TINY_HP = "{n_steps: 32, batch_size: 32, n_epochs: 1}"


def train_argv(out: Path, *extra: str) -> list[str]:
    return [
        "train", "--algo", "maskable_ppo", "--env", "cluster_envs/MoldableScheduling-v0",
        "--env-kwargs", TOY, "--hyperparams", TINY_HP, "--n-envs", "1", "--timesteps", "128",
        "--seed", "7", "--eval-freq", "64", "--eval-episodes", "1", "--out", str(out),
        "--no-progress", *extra,
    ]  # fmt: skip


def test_train_then_evaluate_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(train_argv(out)) == 0
    assert "trained maskable_ppo" in capsys.readouterr().out
    for name in ("config.yml", "command.txt", "versions.json", "seed", "best_model.zip"):
        assert (out / name).is_file(), name
    config = yaml.safe_load((out / "config.yml").read_text())
    assert config["algo"] == "maskable_ppo"
    assert config["env_kwargs"] == {"preset": "toy"}
    assert config["seed"] == 7 and config["eval_seed"] == 7 + 10_000
    assert config["algo_kwargs"]["n_steps"] == 32  # the CLI override won over the YAML
    assert "--timesteps 128" in (out / "command.txt").read_text()
    versions = json.loads((out / "versions.json").read_text())
    assert {"python", "numpy", "torch", "gymnasium", "stable-baselines3", "sb3-contrib"} <= set(
        versions
    )
    assert (out / "seed").read_text().strip() == "7"

    # evaluate finds algo, env and env kwargs from the run folder; JSON output.
    argv = ["evaluate", "--model", str(out / "last_model.zip"), "--seeds", "100-102", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["algo"] == "maskable_ppo" and report["env_kwargs"] == {"preset": "toy"}
    assert [r["seed"] for r in report["per_seed"]] == [100, 101, 102]
    jct = [r["avg_jct_s"] for r in report["per_seed"]]
    assert report["summary"]["avg_jct_s"]["mean"] == pytest.approx(sum(jct) / 3)
    assert report["summary"]["avg_jct_s"]["ci95"] > 0
    assert all(r["num_invalid_actions"] == 0 for r in report["per_seed"])  # masked
    # Same seeds again -> the same numbers (deterministic evaluation).
    assert main([*argv[:-1], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["per_seed"] == report["per_seed"]
    # The table form, sb3: prefix, seeds as a list.
    spec = f"sb3:{out / 'best_model.zip'}"
    assert main(["evaluate", "--model", spec, "--seeds", "1,2"]) == 0
    text = capsys.readouterr().out
    assert "mean ± 95% CI" in text and "avg_jct_s" in text


def test_cli_refuses_to_overwrite_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    (out).mkdir()
    (out / "config.yml").write_text("algo: ppo\n")  # someone's run
    assert main(train_argv(out)) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert (out / "config.yml").read_text() == "algo: ppo\n"
    assert main(train_argv(out, "--force")) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--algo", "maskable-ppo", "--out", "X"], "did you mean 'maskable_ppo'"),
        (
            ["train", "--algo", "ppo", "--env", "cluster_envs/MoldableSchedule-v0", "--out", "X"],
            "did you mean 'MoldableScheduling-v0'",
        ),
        (
            ["train", "--algo", "ppo", "--env-kwargs", '{"preset": "tiny"}', "--out", "X"],
            "unknown preset 'tiny'",
        ),
        (["train", "--algo", "ppo", "--env-kwargs", "{oops", "--out", "X"], "not valid JSON"),
        (["train", "--algo", "ppo", "--hyperparams", "{gama: 0.9}", "--out", "X"], "'gamma'"),
        (["evaluate", "--model", "nowhere/model.zip"], "does not exist"),
        (["evaluate", "--model", "pretrained:MoldableSchedulin-v0"], "did you mean"),
        (
            ["evaluate", "--model", "pretrained:MoldableScheduling-v0", "--seeds", "9-3"],
            "bad seeds",
        ),
    ],
)
def test_bad_inputs_exit_2_with_a_message(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / "out") if a == "X" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "config.yml").exists()  # nothing half-written


def test_help_lists_train_and_evaluate(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("train", "evaluate"):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        assert exc.value.code == 0
        assert "--seed" in capsys.readouterr().out


def test_vec_env_flag_picks_the_vectorisation_and_all_kinds_play_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch
    from stable_baselines3.common.save_util import load_from_zip_file

    from agents.envs import VEC_ENV_KINDS

    params = {}
    for kind in ("native", "dummy"):
        out = tmp_path / kind
        assert main(train_argv(out, "--vec-env", kind)) == 0
        _, state, _ = load_from_zip_file(out / "last_model.zip")
        params[kind] = state["policy"]
    assert params["native"].keys() == params["dummy"].keys()
    assert all(torch.equal(params["native"][k], params["dummy"][k]) for k in params["native"])
    with pytest.raises(SystemExit) as exc:
        main(train_argv(tmp_path / "bad", "--vec-env", "subproc"))
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
    # The CLI's literal choices (kept literal so --help needs no SB3 import) are the kinds.
    import argparse

    p = argparse.ArgumentParser()
    _add_train(p)
    (action,) = [a for a in p._actions if a.dest == "vec_env"]
    assert tuple(action.choices or ()) == VEC_ENV_KINDS
