"""``cluster-envs place`` through the real CLI entry point."""

from __future__ import annotations

import json

from cluster_envs.cli import main


def test_place_writes_json_and_png(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    argv = [
        "place",
        "--method",
        "rf",
        "--calls",
        "6",
        "--instance",
        "small",
        "--seed",
        "1",
        "--out",
        str(out),
        "--json",
    ]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["method"] == "rf" and printed["num_evaluations"] == 6
    assert printed["total_jct_true_s"] > 0 and printed["total_jct_estimated_s"] > 0
    trace_path = out / "place-small-seed1-rf-seed1.json"
    png = out / "place-small-seed1-rf-seed1.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record = json.loads(trace_path.read_text())
    best = [row["best_so_far_s"] for row in record["trace"]]
    assert len(best) == 6 and best == sorted(best, reverse=True)
    assert all(row["suggest_s"] >= 0 for row in record["trace"])
    assert record["total_jct_estimated_s"] == best[-1]
    # A second run refuses to overwrite and leaves the files as they were.
    before = trace_path.read_text()
    assert main(argv) == 2
    assert "already exist; pass --force" in capsys.readouterr().err
    assert trace_path.read_text() == before
    assert main([*argv, "--force"]) == 0


def test_place_prints_placement_for_an_instance_file(tmp_path, capsys) -> None:
    path = tmp_path / "inst.json"
    path.write_text(
        json.dumps(
            {
                "cluster": "hetero-small",
                "batch": [{"model": "bert", "num_gpus": 2}, {"model": "cifar10", "num_gpus": 4}],
            }
        )
    )
    assert main(["place", "--method", "greedy-optimus", "--instance", str(path)]) == 0
    text = capsys.readouterr().out
    assert "total JCT:" in text and "with true lengths" in text
    assert "bert-0" in text and "cifar10-1" in text


def test_place_errors_are_clear(tmp_path, capsys) -> None:
    assert main(["place", "--method", "gp-eii", "--instance", "small"]) == 2
    assert "did you mean 'gp-ei'" in capsys.readouterr().err
    assert main(["place", "--instance", "smal"]) == 2
    assert "did you mean 'small'" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cluster": "toy", "batch": [{"model": "resnet", "num_gpus": 1}]}))
    assert main(["place", "--instance", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.json: batch[0].model: unknown zoo model 'resnet'" in err
    assert main(["place", "--instance", str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
