"""cluster.yaml is a real Ray autoscaler file: Ray's own schema accepts it, it has a CPU head and fast-FP64 GPU
workers, and its setup installs the project the way the README does."""

import copy
import re
from pathlib import Path

import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[3]
CONFIG = yaml.safe_load((ROOT / "cluster.yaml").read_text())
FAST_FP64 = {"p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en"}  # V100, A100, H100 (H200) families
SLOW_FP64 = {"g4dn", "g4ad", "g5", "g5g", "g6", "g6e", "gr6"}  # T4, A10G, L4, L40S: FP64 at 1/32-1/64 of FP32
# The GPUs of the worker instance types (AWS), and FP64 rates without tensor cores (NVIDIA data sheets, TFLOP/s).
INSTANCE_GPUS = {"p3.2xlarge": ("V100", 1), "p3.8xlarge": ("V100", 4), "p4d.24xlarge": ("A100", 8),
                 "p5.48xlarge": ("H100", 8)}
FP64_TFLOPS = {"V100": 7.8, "A100": 9.7, "H100": 34.0}


def _family(instance_type: str) -> str:
    return instance_type.split(".")[0]


def test_ray_accepts_the_file_with_its_own_schema():
    prepared = prepare_config(copy.deepcopy(CONFIG))
    validate_config(prepared)  # raises on any field Ray's ray-schema.json does not allow
    # Every command list is ours, not defaults.yaml's (which would install a nightly Ray wheel).
    for key in ("setup_commands", "head_setup_commands", "worker_setup_commands", "head_start_ray_commands",
                "worker_start_ray_commands"):
        assert key in CONFIG, key


def test_aws_with_a_cpu_head_and_gpu_workers_with_fast_fp64_only():
    assert CONFIG["provider"]["type"] == "aws" and re.fullmatch(r"[a-z]{2}-[a-z]+-\d", CONFIG["provider"]["region"])
    types = CONFIG["available_node_types"]
    head = types[CONFIG["head_node_type"]]
    assert _family(head["node_config"]["InstanceType"])[0] in "mcr"  # general purpose / compute / memory: no GPU
    assert head["resources"].get("GPU", 0) == 0
    workers = {name: t for name, t in types.items() if name != CONFIG["head_node_type"]}
    families = {_family(t["node_config"]["InstanceType"]) for t in workers.values()}
    assert families & FAST_FP64 and not families & SLOW_FP64
    assert {"p3", "p4d", "p5"} <= families  # V100, A100, H100
    assert sum(t.get("max_workers", 0) for t in workers.values()) >= CONFIG["max_workers"] > 0
    for name, t in workers.items():  # each worker type is named for its GPU, and that GPU is fast in FP64
        gpu, count = INSTANCE_GPUS[t["node_config"]["InstanceType"]]
        assert name == f"gpu.{gpu.lower()}" and count >= 1 and FP64_TFLOPS[gpu] >= 5, (name, gpu)


def test_setup_installs_the_project_as_the_readme_does_with_the_pinned_ray():
    readme = (ROOT / "README.md").read_text()
    install = "pip install torch==2.13.0 -e ."
    assert install in readme
    setup = CONFIG["setup_commands"]
    assert any(install in c for c in setup)
    assert CONFIG["file_mounts"]["~/archstudy"] == "."  # the checkout `ray up` runs from
    pinned = re.search(r'"ray\[tune\]==([\d.]+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert any(f'"ray[default]=={pinned}"' in c for c in setup)
    assert all("ray start" in c or c == "ray stop" for c in CONFIG["head_start_ray_commands"])
