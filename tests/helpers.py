"""Hand-made jobs with simple, exactly known speed models for simulator tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from cluster_envs.policies import make_policy
from cluster_envs.sim.engine import Simulator
from cluster_envs.sim.fork import settle
from cluster_envs.types import JobKind, JobSpec
from cluster_envs.workload import synthetic_workload


@dataclass(frozen=True)
class LinearSpeedup:
    """S(n) = n (perfect scaling)."""

    def speedup(self, n: int) -> float:
        return float(n)


@dataclass(frozen=True)
class SpreadPenaltySpeed:
    """``rate_1 * n * compute_speed``, divided by ``1 + penalty * (nodes - 1) / network``."""

    rate_1: float = 1.0
    penalty: float = 0.5

    def throughput(
        self, gpus_per_node: tuple[int, ...], compute_speed: float = 1.0, network_speed: float = 1.0
    ) -> float:
        n = sum(gpus_per_node)
        extra = len(gpus_per_node) - 1
        return self.rate_1 * n * compute_speed / (1.0 + self.penalty * extra / network_speed)


def make_job(
    job_id: int,
    submit_time_s: float,
    iterations: float,
    num_gpus: int = 1,
    *,
    kind: JobKind = JobKind.RIGID,
    min_gpus: int | None = None,
    max_gpus: int | None = None,
    speed: object | None = None,
) -> JobSpec:
    """A job whose runtime on ``n`` packed T4 GPUs is ``iterations / n`` seconds."""
    return JobSpec(
        job_id=job_id,
        name=f"job-{job_id}",
        submit_time_s=submit_time_s,
        model="test",
        num_gpus=num_gpus,
        min_gpus=num_gpus if min_gpus is None else min_gpus,
        max_gpus=num_gpus if max_gpus is None else max_gpus,
        kind=kind,
        batch_size=32,
        total_iterations=iterations,
        speed=speed or SpreadPenaltySpeed(),  # type: ignore[arg-type]
    )


def fifo_decisions(count: int, cluster: str, seed: int, probs: dict[int, float]) -> Iterator[Any]:
    """The first ``count`` FIFO head-of-line decisions (view, job, free GPUs) of a 12-job
    synthetic episode at load 2 on ``cluster`` (GPU demands drawn from ``probs``)."""
    wl = synthetic_workload(
        num_jobs=12, cluster=cluster, seed=seed, load=2.0, gpu_demand_probs=probs
    )
    sim = Simulator(wl.jobs, cluster, {"node_interference": 0.1}, seed=0)
    driver = make_policy("fifo")
    driver.reset(0)
    found = 0
    while not sim.done and found < count:
        sim.step()
        if not sim.queue:
            continue
        view = sim.view()
        job = view.queue[0]
        free = np.asarray(view.free_gpus)
        if free.sum() >= job.num_gpus:
            yield view, job, free
            found += 1
        settle(sim, driver)
    assert found == count


def play_registry_agent(agent: Any, env_id: str, family: str, metric: str, seeds: Any) -> Any:
    """A shipped agent on ``family``'s test split the registry's way (the env built with the
    card's observation and action, weights adapted): ``(env, each seed's metric)``."""
    import gymnasium as gym

    from cluster_envs.envs.rollout import rollout
    from cluster_envs.policies.trained import agent_env_kwargs

    env = gym.make(env_id, **agent_env_kwargs(agent, {"family": family, "split": "test"}))
    agent.fit_env(env)
    return env, [rollout(env, agent, s).metrics[metric] for s in seeds]
