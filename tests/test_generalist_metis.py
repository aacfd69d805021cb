"""The MetisAllocation generalist (issue 13): option teachers, the training path and the
shipped agent's card."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import play_registry_agent
from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401  (registers the envs)
from agents import generalist
from agents.generalist_card import replay
from agents.policy import PRETRAINED_DIR, Sb3Agent, pretrained_info
from agents.teacher import FollowOption, LookaheadTeacher, make_teacher
from cluster_envs.envs.metis_hints import OPTIONS
from cluster_envs.envs.rollout import HeuristicAgent, rollout
from cluster_envs.errors import ConfigError
from cluster_envs.policies import make_agent
from cluster_envs.policies.trained import agent_env_kwargs
from cluster_envs.workload.families import family_names

METIS = "cluster_envs/MetisAllocation-v0"
SMALL = {"family": "synthetic-16", "split": "validation", "num_jobs": 12}


def _hints_env() -> gym.Env:
    return gym.make(METIS, action="hints", observation="scale_free_hints", **SMALL)


def test_teachers_answer_in_options() -> None:
    env = _hints_env()
    teacher = make_teacher("slaq", METIS, env.unwrapped)
    assert isinstance(teacher, FollowOption)
    assert make_teacher("slaq", METIS, gym.make(METIS, **SMALL).unwrapped) is None
    with pytest.raises(ConfigError, match="no option"):
        make_teacher("fifo-rigid", METIS, env.unwrapped)
    look = make_teacher("lookahead", METIS, env.unwrapped)
    assert isinstance(look, LookaheadTeacher) and look.options
    assert look.objective == "quality"


def test_a_one_candidate_lookahead_plays_that_heuristic() -> None:
    env = _hints_env()
    plain = gym.make(METIS, **SMALL)
    look = make_teacher("lookahead:optimus", METIS, env.unwrapped)
    played = rollout(env, look, seed=3)
    ref = rollout(plain, HeuristicAgent(plain.unwrapped.policy("optimus")), seed=3)
    assert played.metrics == ref.metrics
    assert look.choices == {"optimus": played.num_steps}


def test_the_quality_lookahead_switches_between_candidates() -> None:
    env = _hints_env()
    look = make_teacher("lookahead", METIS, env.unwrapped)
    obs, info = env.reset(seed=4)
    look.reset(env.unwrapped.episode_seed)
    steps = 0
    while steps < 40:
        action = look.act(env, obs, info)
        mask = info["action_mask"].reshape(-1, len(OPTIONS))
        assert mask[np.arange(len(action)), action].all()
        obs, _, term, trunc, info = env.step(action)
        steps += 1
        if term or trunc:
            break
    assert sum(look.choices.values()) == steps
    assert len(look.choices) >= 2  # not one heuristic throughout


def _labelled(teacher_name: str, seed: int) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """A lookahead's episode (hint policies with switch-window): its metrics, its labels
    and the GPU counts those labels ask for, slot by slot."""
    names = ("slaq", "optimus", "tiresias", "fair", "slaq-window", "switch-window")
    env = gym.make(METIS, action="hints", observation="scale_free_hints",
                   hint_policies=names, **SMALL)  # fmt: skip
    base = env.unwrapped
    teacher = make_teacher(teacher_name, METIS, base)
    labels, counts = [], []

    class Recorder:
        def reset(self, seed: int | None = None) -> None:
            teacher.reset(seed)

        def act(self, env: gym.Env, obs: np.ndarray, info: dict) -> np.ndarray:
            action = np.asarray(teacher.act(env, obs, info))
            table = base.hints.table(base.sim, base.slots)
            labels.append(action)
            counts.append(table[action, np.arange(len(action))])
            return action

    played = rollout(env, Recorder(), seed=seed)
    return played.metrics, np.concatenate(labels), np.concatenate(counts)


def test_prefer_relabels_ties_with_the_preferred_option_and_plays_the_same() -> None:
    look = "lookahead:slaq,optimus,tiresias,fair,slaq-window,switch-window"
    plain, plain_labels, plain_counts = _labelled(look, 500)
    metrics, labels, counts = _labelled(look + "@prefer=switch-window", 500)
    assert metrics == plain  # the same counts reach the env: the same episode
    np.testing.assert_array_equal(counts, plain_counts)
    switch = 5  # switch-window's option
    assert (labels == switch).sum() > 2 * (plain_labels == switch).sum()
    # relabelled only where the preferred option asked the same count
    moved = labels != plain_labels
    assert moved.any() and (labels[moved] == switch).all()


def test_teacher_settings_are_parsed_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    env = _hints_env()
    look = make_teacher("lookahead:slaq,tiresias@commit=3,margin=0.02,prefer=fair", METIS,
                        env.unwrapped)  # fmt: skip
    assert (look.commit, look.margin, look.prefer) == (3, 0.02, "fair")
    assert look.name == "lookahead(slaq,tiresias;commit=3;margin=0.02;prefer=fair)"
    assert look.options and look.objective == "quality"
    with pytest.raises(ConfigError, match="expected commit=<int>"):
        make_teacher("lookahead:slaq@commit=x", METIS, env.unwrapped)
    with pytest.raises(ConfigError, match="'speed=2'"):
        make_teacher("lookahead:slaq@speed=2", METIS, env.unwrapped)
    with pytest.raises(ConfigError, match="lookahead only"):
        make_teacher("slaq@commit=2", METIS, env.unwrapped)
    with pytest.raises(ConfigError, match="prefer='srpt' is no option"):
        make_teacher("lookahead:slaq@prefer=srpt", METIS, env.unwrapped)
    with pytest.raises(SystemExit) as refused:  # argparse: --workers must be >= 1
        generalist.main(["evaluate", "--env", "metis", "--model", "none", "--out", "x.json",
                         "--workers", "0"])  # fmt: skip
    assert refused.value.code == 2 and "must be >= 1" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="options only"):
        make_teacher("lookahead:slaq@prefer=fair", METIS, gym.make(METIS, **SMALL).unwrapped)


def test_train_metis_clones_slaq_and_scores_validation_per_family(tmp_path: Path) -> None:
    out = tmp_path / "run"
    generalist.main(["train", "--env", "metis", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "10", "--pretrain-episodes", "2", "--dagger-rounds", "0",
                     "--pretrain-epochs", "10", "--val-families", "synthetic-16,alibaba"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_id"] == METIS
    assert record["env_kwargs"] == {"observation": "scale_free_hints", "action": "hints"}
    assert record["warm_start"]["teacher"] == "slaq"
    assert record["warm_start"]["rounds"][0]["teacher_agreement"] > 0.95
    last = record["curve"][-1]
    assert set(last["val_families"]) == {"synthetic-16", "alibaba"}
    # A family's validation ratio is the reference's mean quality over the agent's (the
    # targets' ratio), not a geometric mean of per-seed ratios.
    spec = generalist.ENV_SPECS["metis"]
    curve = generalist.ValCurve(["synthetic-16"], 1, tmp_path, 10, spec)
    model = MaskablePPO.load(out / "best_model.zip", device="cpu")
    env = generalist.make_env("synthetic-16", "validation", 10, spec)
    agent = generalist._ModelAgent(generalist.adapt(model, env))
    vals = np.array(generalist.play(env, agent, generalist.VAL_SEEDS, spec.metric))
    # a reference whose per-seed ratios differ (0.5x .. 2x): their geometric mean is not
    # the ratio of the means
    ref = curve.refs["synthetic-16"] = vals * np.geomspace(0.5, 2.0, len(vals))
    curve.evaluate(model, 0)
    expected = float(np.mean(ref) / np.mean(vals))
    assert abs(expected - 1.0) > 0.05
    assert curve.curve[-1]["val_families"]["synthetic-16"] == pytest.approx(expected)
    test = tmp_path / "val.json"
    generalist.main(["evaluate", "--env", "metis", "--model", str(out / "best_model.zip"),
                     "--out", str(test), "--families", "synthetic-16", "--split", "validation",
                     "--quick", "--seeds", "500", "501"])  # fmt: skip
    data = json.loads(test.read_text())
    rows = data["rows"]["synthetic-16"]
    assert set(rows) == {*generalist.ENV_SPECS["metis"].baselines, "agent"}
    assert set(data["idle_wait_share"]["synthetic-16"]) == set(rows)
    summary = generalist.summarize(str(test))
    fam = summary["families"]["synthetic-16"]
    best = max(rows, key=lambda p: np.mean(rows[p]) if p != "agent" else -1.0)
    assert fam["best_heuristic"] == best
    # quality: higher is better, so the ratio is best / agent (> 1: worse than the best)
    assert fam["agent_to_best"] == pytest.approx(np.mean(rows[best]) / np.mean(rows["agent"]))
    # --workers: the families side by side, the same runs in the same order
    both = {}
    for workers in ("1", "2"):
        both[workers] = tmp_path / f"w{workers}.json"
        generalist.main(["evaluate", "--env", "metis", "--model", str(out / "best_model.zip"),
                         "--out", str(both[workers]), "--families", "synthetic-16,alibaba",
                         "--split", "validation", "--quick", "--seeds", "500", "500",
                         "--baselines", "slaq,tiresias", "--workers", workers])  # fmt: skip
    one, two = (json.loads(both[w].read_text()) for w in ("1", "2"))
    assert list(two["rows"]) == ["synthetic-16", "alibaba"]
    for key in ("rows", "gpu_utilization", "idle_wait_share"):
        assert one[key] == two[key]
    assert one["rows"]["synthetic-16"]["agent"] == rows["agent"][:1]


def test_a_run_with_other_hint_policies_carries_them_to_evaluation_and_agents(
    tmp_path: Path,
) -> None:
    """--hint-policies reaches the run record, evaluate infers it from the model's fields,
    and an agent loaded from a card with it plays the same options (agent_env_kwargs)."""
    out = tmp_path / "run"
    listed = ["slaq", "tiresias", "slaq-window"]
    generalist.main(["train", "--env", "metis", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "10", "--pretrain-episodes", "2", "--dagger-rounds", "0",
                     "--pretrain-epochs", "10", "--val-families", "synthetic-16",
                     "--teacher", "switch:slaq-window,tiresias",
                     "--hint-policies", ",".join(listed)])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_kwargs"]["hint_policies"] == listed
    assert record["warm_start"]["teacher"] == "switch:slaq-window,tiresias"
    model = generalist.MaskablePPO.load(out / "best_model.zip", device="cpu")
    spec = generalist.with_observation_of(model, generalist.ENV_SPECS["metis"])
    assert spec.hint_policies == tuple(listed)
    card = {"env_id": METIS, "algo": "maskable_ppo", "env_kwargs": record["env_kwargs"]}
    (out / "best_model.json").write_text(json.dumps(card))
    agent = make_agent(f"sb3:{out / 'best_model.zip'}")
    env = gym.make(METIS, **agent_env_kwargs(agent, dict(SMALL)))
    assert env.action_space.nvec[0] == len(listed) + 2  # type: ignore[attr-defined]
    assert rollout(env, agent, seed=500).metrics["quality_auc"] > 0


NAME = "MetisAllocation-v0"
#: Card families the exact-replay test plays: 16 GPUs (fast) and a 128-GPU cluster.
REPLAY_FAMILIES = ("synthetic-16", "alibaba")


def test_shipped_card_covers_every_family_and_its_ratios_follow_its_seeds() -> None:
    card = pretrained_info(NAME)
    assert card["env_id"] == METIS
    assert card["env_kwargs"] == {
        "observation": "scale_free_hints",
        "action": "hints",
        "hint_policies": ["slaq", "optimus", "tiresias", "fair", "slaq-window"],
        "observe_slice": True,
    }
    test = card["test_families"]
    assert test["split"] == "test" and len(test["seeds"]) >= 10
    assert set(test["families"]) == set(family_names("metis"))
    for fam, row in test["families"].items():
        auc = row["quality_auc"]
        best = max((p for p in auc if p != "agent"), key=lambda p: np.mean(auc[p]))
        assert row["best_heuristic"] == best, fam
        assert row["agent_to_best"] == pytest.approx(np.mean(auc[best]) / np.mean(auc["agent"]))
        assert row["agent_to_reference"] == pytest.approx(
            np.mean(auc["slaq"]) / np.mean(auc["agent"])
        )
        assert len(auc["agent"]) == len(test["seeds"])
        assert {"slaq", "optimus", "tiresias", "fair", "slaq-window"} <= set(auc), fam
    assert "train_pretrained.sh" in card["train_command"] and card["train_wall_s"] > 0


def test_shipped_card_numbers_come_back_exactly_from_their_seeds() -> None:
    card = pretrained_info(NAME)
    seeds = card["test_families"]["seeds"]
    agent = make_agent(f"pretrained:{NAME}")
    assert isinstance(agent, Sb3Agent) and agent.action == "hints"
    assert agent.hint_policies == tuple(card["env_kwargs"]["hint_policies"])
    for fam in REPLAY_FAMILIES:
        row = card["test_families"]["families"][fam]["quality_auc"]
        env, played = play_registry_agent(agent, card["env_id"], fam, "quality_auc", seeds)
        assert played == row["agent"], fam
        plain = gym.make(METIS, family=fam, split="test")
        slaq_agent = HeuristicAgent(plain.unwrapped.policy("slaq"))
        slaq = [rollout(plain, slaq_agent, s).metrics["quality_auc"] for s in seeds]
        assert slaq == row["slaq"], fam
        window_agent = HeuristicAgent(plain.unwrapped.policy("slaq-window"))
        window = [rollout(plain, window_agent, s).metrics["quality_auc"] for s in seeds]
        assert window == row["slaq-window"], fam
    # The card writer's own path gives the same numbers.
    fam = REPLAY_FAMILIES[0]
    again = replay(card, fam, seeds[:3], PRETRAINED_DIR / f"{NAME}.zip")
    assert again == card["test_families"]["families"][fam]["quality_auc"]["agent"][:3]


SIX = ("slaq", "optimus", "tiresias", "fair", "slaq-window", "switch-window")
L6 = "lookahead:" + ",".join(SIX) + "@prefer=switch-window"


def _six_env() -> gym.Env:
    return gym.make(METIS, action="hints", observation="scale_free_hints", hint_policies=SIX,
                    **SMALL)  # fmt: skip


def test_the_lookahead_scores_every_option_by_its_regret() -> None:
    """After each lookahead decision the teacher holds, per slot and option, the relative
    regret of the cheapest candidate asking that GPU count: 0 for its own label (and any
    option asking the label's count), > 0 for some option, none while a choice is held."""
    env = _six_env()
    base = env.unwrapped
    n = len(base.hints.options)
    look = make_teacher(L6 + ",commit=2", METIS, base)
    obs, info = env.reset(seed=501)
    look.reset(base.episode_seed)
    positive = held = 0
    for step in range(30):
        action = np.asarray(look.act(env, obs, info))
        if step % 2:  # the second decision of each commit=2 pair is held
            assert look.regrets is None
            held += 1
        else:
            regrets = look.regrets.reshape(-1, n)
            mask = info["action_mask"].reshape(-1, n)
            table = base.hints.table(base.sim, base.slots)
            slots = np.arange(len(action))
            assert (regrets >= 0).all()
            assert (regrets[slots, action] == 0).all()
            same = (table[action, slots][:, None] == table.T) & mask
            assert (regrets[same] == 0).all()
            positive += int((regrets[mask] > 0).any())
        obs, _, term, trunc, info = env.step(action)
        if term or trunc:
            break
    assert held and positive  # some decision mattered


def test_cost_sensitive_cloning_moves_mass_off_costly_options(tmp_path: Path) -> None:
    """--regret-coef: the teacher's regrets ride with the demonstrations (and through the
    cache); a fit with the regret term ends with a lower expected regret on them than plain
    cloning from the same start, and its loss is the likelihood plus that term."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from agents.imitation import PretrainSettings, _Fit, cached_demonstrations, pretrain
    from agents.set_policy import SetPolicy

    kwargs = {"action": "hints", "observation": "scale_free_hints", "hint_policies": list(SIX),
              **SMALL}  # fmt: skip
    demos = cached_demonstrations(tmp_path, METIS, kwargs, L6, 2, 11, 0.99)
    again = cached_demonstrations(tmp_path, METIS, kwargs, L6, 2, 11, 0.99)  # read back
    assert demos.regrets is not None and demos.regrets.shape == demos.masks.shape
    np.testing.assert_array_equal(again.regrets, demos.regrets)
    assert (demos.regrets.max(axis=1) > 0).any()

    def fitted(coef: float) -> MaskablePPO:
        venv = VecNormalize(DummyVecEnv([lambda: gym.make(METIS, **kwargs)]), norm_obs=False)
        model = MaskablePPO(SetPolicy, venv, n_steps=8, batch_size=8, seed=0, device="cpu",
                            policy_kwargs={"hidden": 16})  # fmt: skip
        settings = PretrainSettings(teacher=L6, epochs=15, batch_size=16, regret_coef=coef,
                                    value_coef=0.0)  # fmt: skip
        pretrain(model, demos, settings, seed=0)
        return model

    plain, costly = fitted(0.0), fitted(5.0)
    check = _Fit(costly, demos, 0.0, 1.0)
    idx = torch.arange(len(demos))
    _, nll_and_regret, _ = check.loss(idx)
    _, log_prob, _ = costly.policy.evaluate_actions(check.obs_t, check.act_t,
                                                    action_masks=demos.masks)  # fmt: skip

    def expected_regret(model: MaskablePPO) -> float:
        with torch.no_grad():
            dist = model.policy.get_distribution(check.obs_t, action_masks=demos.masks)
            probs = torch.cat([d.probs for d in dist.distributions], dim=1)
            return float((probs * check.regret_t).sum(dim=1).mean() / check.entries)

    assert expected_regret(costly) < expected_regret(plain)
    assert nll_and_regret.detach().item() == pytest.approx(
        -log_prob.detach().mean().item() + expected_regret(costly), rel=1e-4
    )
    with pytest.raises(ConfigError, match="regret_coef"):
        PretrainSettings(teacher="slaq", regret_coef=-1.0)


def test_critic_warmup_moves_only_the_critic() -> None:
    """critic_only freezes the actor (and the shared slot encoder): PPO then fits only the
    value function; unfreezing restores every parameter's gradient."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([_hints_env])
    model = MaskablePPO(generalist.SetPolicy, venv, n_steps=32, batch_size=32, n_epochs=2,
                        learning_rate=1e-3, seed=0, device="cpu")  # fmt: skip
    before = {n: p.detach().clone() for n, p in model.policy.named_parameters()}
    frozen = generalist.critic_only(model.policy)
    model.learn(64)
    moved = {n for n, p in model.policy.named_parameters() if not torch.equal(p, before[n])}
    critic = {n for n in before if n.startswith(("mlp_extractor.critic.", "value_net."))}
    assert critic and moved == critic
    assert len(frozen) == len(before) - len(critic)
    for param in frozen:
        param.requires_grad_(True)
    model.learn(64)
    moved = {n for n, p in model.policy.named_parameters() if not torch.equal(p, before[n])}
    assert moved - critic  # the actor learns again


def test_ppo_from_a_clone_over_several_families(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--init-model + --critic-warmup + --family a,b: the env groups cycle through the
    families, the warm-up leaves the clone's policy (its first checkpoint scores as the
    clone did), and too few groups for the families is an error."""
    clone = tmp_path / "clone"
    generalist.main(["train", "--env", "metis", "--out", str(clone), "--timesteps", "0",
                     "--num-jobs", "10", "--pretrain-episodes", "2", "--dagger-rounds", "0",
                     "--pretrain-epochs", "5", "--val-families", "synthetic-16"])  # fmt: skip
    made: list[str] = []
    real = generalist.make_env

    def spy(family: str, split: str, *args: object, **kwargs: object) -> gym.Env:
        if split == "train":
            made.append(family)
        return real(family, split, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(generalist, "make_env", spy)
    out = tmp_path / "ppo"
    generalist.main(["train", "--env", "metis", "--out", str(out), "--num-jobs", "10",
                     "--init-model", str(clone / "best_model.zip"),
                     "--family", "synthetic-16,alibaba", "--groups", "2", "--group-size", "2",
                     "--n-steps", "32", "--batch-size", "64", "--critic-warmup", "128",
                     "--timesteps", "128", "--eval-freq", "100000",
                     "--val-families", "synthetic-16"])  # fmt: skip
    assert made == ["synthetic-16", "synthetic-16", "alibaba", "alibaba"]
    record = json.loads((out / "train.json").read_text())
    assert record["critic_warmup"]["timesteps"] == 128
    assert record["timesteps"] == 256
    first = record["curve"][0]
    assert first["timesteps"] >= 128
    cloned = json.loads((clone / "train.json").read_text())["curve"][-1]
    assert first["val_families"] == cloned["val_families"]
    with pytest.raises(ConfigError, match="--groups 1"):
        generalist.main(["train", "--env", "metis", "--out", str(tmp_path / "bad"),
                         "--family", "synthetic-16,alibaba", "--groups", "1",
                         "--timesteps", "0", "--pretrain-episodes", "0"])  # fmt: skip


def test_observe_slice_adds_the_slice_length_and_nothing_else() -> None:
    """observe_slice=True appends slices_per_window (log2(W / slice) / 8) to the cluster
    fields; every other field, the rewards and the episode stay as without it."""
    from cluster_envs.envs.metis_scale_free import SLICE_FIELD, slices_per_window

    assert slices_per_window(60.0, 3600.0) == pytest.approx(np.log2(60) / 8)
    assert slices_per_window(7200.0, 3600.0) == 0.0  # a slice longer than the window
    plain = gym.make(METIS, action="hints", observation="scale_free_hints",
                     family="pollux", split="validation")  # fmt: skip
    sliced = gym.make(METIS, action="hints", observation="scale_free_hints",
                      family="pollux", split="validation", observe_slice=True)  # fmt: skip
    layout = sliced.unwrapped.encoder.layout  # type: ignore[attr-defined]
    assert layout.global_fields[-1] == SLICE_FIELD
    a, _ = plain.reset(seed=500)
    b, _ = sliced.reset(seed=500)
    for _ in range(5):
        assert b.shape == (a.size + 1,)
        np.testing.assert_array_equal(a, b[:-1])
        assert b[-1] == pytest.approx(np.log2(3600 / 60) / 8)  # pollux: 60 s slices
        a, ra, *_ = plain.step(np.zeros(plain.action_space.shape, dtype=np.int64))
        b, rb, *_ = sliced.step(np.zeros(sliced.action_space.shape, dtype=np.int64))
        assert ra == rb
    with pytest.raises(ConfigError, match="observe_slice needs a scale-free observation"):
        gym.make(METIS, observe_slice=True)


def test_an_agent_trained_with_observe_slice_plays_with_it(tmp_path: Path) -> None:
    """--observe-slice reaches the run's env kwargs; evaluate and agents loaded from its
    card infer it (with_observation_of, agent_env_kwargs)."""
    out = tmp_path / "run"
    generalist.main(["train", "--env", "metis", "--out", str(out), "--timesteps", "0",
                     "--num-jobs", "10", "--pretrain-episodes", "2", "--dagger-rounds", "0",
                     "--pretrain-epochs", "5", "--val-families", "synthetic-16",
                     "--observe-slice"])  # fmt: skip
    record = json.loads((out / "train.json").read_text())
    assert record["env_kwargs"]["observe_slice"] is True
    model = generalist.MaskablePPO.load(out / "best_model.zip", device="cpu")
    assert generalist.with_observation_of(model, generalist.ENV_SPECS["metis"]).observe_slice
    card = {"env_id": METIS, "algo": "maskable_ppo", "env_kwargs": record["env_kwargs"]}
    (out / "best_model.json").write_text(json.dumps(card))
    agent = make_agent(f"sb3:{out / 'best_model.zip'}")
    kwargs = agent_env_kwargs(agent, dict(SMALL))
    assert kwargs["observe_slice"] is True
    assert rollout(gym.make(METIS, **kwargs), agent, seed=500).metrics["quality_auc"] > 0
    shipped = make_agent(f"pretrained:{NAME}")
    # the shipped agent plays with the slice length because its card says so
    assert pretrained_info(NAME)["env_kwargs"]["observe_slice"] is True
    assert agent_env_kwargs(shipped, dict(SMALL))["observe_slice"] is True


def test_family_teacher_labels_that_family_in_both_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--family-teacher FAMILY=TEACHER: that family's teacher episodes and DAgger labels
    come from its own teacher, every other family's from --teacher; bad values are errors."""
    asked: list[tuple[str, str, bool]] = []
    real = generalist.collect_demonstrations

    def spy(env_id: str, kwargs: dict[str, object], teacher: str, *args: object,
            **more: object) -> object:  # fmt: skip
        asked.append((str(kwargs["family"]), teacher, more.get("student") is not None))
        return real(env_id, kwargs, teacher, *args, **more)  # type: ignore[arg-type]

    monkeypatch.setattr(generalist, "collect_demonstrations", spy)
    monkeypatch.setattr("agents.imitation.collect_demonstrations", spy)
    out = tmp_path / "run"
    common = ["train", "--env", "metis", "--timesteps", "0", "--num-jobs", "8",
              "--pretrain-episodes", "1", "--pretrain-epochs", "2", "--teacher", "slaq",
              "--val-families", "synthetic-16"]  # fmt: skip
    generalist.main([*common, "--out", str(out), "--dagger-rounds", "1",
                     "--demo-families", "synthetic-16,alibaba",
                     "--family-teacher", "alibaba=fair"])  # fmt: skip
    assert sorted(asked) == [("alibaba", "fair", False), ("alibaba", "fair", True),
                             ("synthetic-16", "slaq", False), ("synthetic-16", "slaq", True)]  # fmt: skip
    ws = json.loads((out / "train.json").read_text())["warm_start"]
    assert ws["teacher"] == "slaq" and ws["family_teachers"] == {"alibaba": "fair"}
    bad = [("alibaba", "expected FAMILY=TEACHER"), ("pollux=fair", "not among the demonstration"),
           ("alibaba=fair --family-teacher alibaba=slaq", "twice")]  # fmt: skip
    for value, message in bad:
        with pytest.raises(ConfigError, match=message):
            generalist.main([*common, "--out", str(tmp_path / "bad"), "--dagger-rounds", "0",
                             "--demo-families", "synthetic-16,alibaba",
                             *[a for v in value.split(" --family-teacher ")
                               for a in ("--family-teacher", v)]])  # fmt: skip
    with pytest.raises(ConfigError, match="needs --demo-families"):
        generalist.main([*common, "--out", str(tmp_path / "bad2"), "--dagger-rounds", "0",
                         "--family-teacher", "synthetic-16=fair"])  # fmt: skip
    # no warm start, so nothing the flag could act on: an error, not a silent no-op
    for no_warm_start in (
        ["--pretrain-episodes", "0"],
        ["--init-model", str(out / "pretrained_model.zip")],
    ):
        with pytest.raises(ConfigError, match="acts only in a warm start"):
            generalist.main([*common, "--out", str(tmp_path / "bad3"), *no_warm_start,
                             "--demo-families", "synthetic-16,alibaba",
                             "--family-teacher", "alibaba=fair"])  # fmt: skip
