"""cluster.yaml is a real Ray autoscaler file: Ray's own schema accepts it, it has a CPU head and fast-FP64 GPU
workers, its setup installs the project the way the README does with the `cluster` extra, and `ray up`'s own
preparation of it (the AWS provider, EC2's instance types, IAM, key pair, network) passes offline."""

import copy
import json
import re
import types
from pathlib import Path

import boto3
import pytest
import yaml
from packaging.requirements import Requirement
from ray.autoscaler._private.util import prepare_config, validate_config

ROOT = Path(__file__).resolve().parents[3]
CONFIG = yaml.safe_load((ROOT / "cluster.yaml").read_text())
FAST_FP64 = {"p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en"}  # V100, A100, H100 (H200) families
SLOW_FP64 = {"g4dn", "g4ad", "g5", "g5g", "g6", "g6e", "gr6"}  # T4, A10G, L4, L40S: FP64 at 1/32-1/64 of FP32
# The GPUs of the worker instance types (AWS), and FP64 rates without tensor cores (NVIDIA data sheets, TFLOP/s).
INSTANCE_GPUS = {
    "p3dn.24xlarge": ("V100", 8),
    "p4d.24xlarge": ("A100", 8),
    "p5.4xlarge": ("H100", 1),
    "p5.48xlarge": ("H100", 8),
}
FP64_TFLOPS = {"V100": 7.8, "A100": 9.7, "H100": 34.0}


def _family(instance_type: str) -> str:
    return instance_type.split(".")[0]


def test_ray_accepts_the_file_with_its_own_schema():
    prepared = prepare_config(copy.deepcopy(CONFIG))
    validate_config(prepared)  # raises on any field Ray's ray-schema.json does not allow
    # Every command list is ours, not defaults.yaml's (which would install a nightly Ray wheel).
    for key in (
        "setup_commands",
        "head_setup_commands",
        "worker_setup_commands",
        "head_start_ray_commands",
        "worker_start_ray_commands",
    ):
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
    assert {"p4d", "p5"} <= families  # A100, H100
    assert sum(t.get("max_workers", 0) for t in workers.values()) >= CONFIG["max_workers"] > 0
    for name, t in workers.items():  # each worker type is named for its GPUs, and they are fast in FP64
        gpu, count = INSTANCE_GPUS[t["node_config"]["InstanceType"]]
        assert name == f"gpu.{gpu.lower()}" + (f"x{count}" if count > 1 else "") and FP64_TFLOPS[gpu] >= 5, (name, gpu)


def test_setup_installs_the_project_as_the_readme_does_with_the_cluster_extra():
    readme = (ROOT / "README.md").read_text()
    install = "pip install torch==2.13.0 -e ."
    assert install in readme
    setup = CONFIG["setup_commands"]
    assert any(install in c for c in setup)
    assert CONFIG["file_mounts"]["~/archstudy"] == "."  # the checkout `ray up` runs from
    # every node installs the `cluster` extra (the head's autoscaler needs its boto3), whose Ray is the pinned one
    assert any('pip install -q -e ".[cluster]"' in c and "cd ~/archstudy" in c for c in setup)
    text = (ROOT / "pyproject.toml").read_text()
    pinned = re.search(r'"ray\[tune\]==([\d.]+)"', text).group(1)
    extra = re.search(r"^cluster = \[(.*)\]$", text, re.M).group(1)
    cluster = {Requirement(r).name: Requirement(r) for r in re.findall(r'"([^"]+)"', extra)}
    assert set(cluster) == {"ray", "boto3"} and str(cluster["ray"].specifier) == f"=={pinned}"
    assert cluster["ray"].extras == {"default"}
    assert cluster["boto3"].specifier.contains(boto3.__version__)  # the pin admits the boto3 tested below
    assert all("ray start" in c or c == "ray stop" for c in CONFIG["head_start_ray_commands"])


# -- `ray up`'s own preparation of the file, offline ----------------------------------------------------------
# The two AWS-managed policies Ray's launcher attaches to the role it creates for the nodes
# (ray.autoscaler._private.aws.config._configure_iam_role).
RAY_NODE_POLICIES = ("AmazonEC2FullAccess", "AmazonS3FullAccess")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No traffic leaves this process: every socket connection and name lookup is refused and recorded (the list
    it yields); AWS is moto's in-process fake with the instance types cluster.yaml names, as AWS's own catalog
    (moto's copy of it) describes them, and the two managed policies Ray attaches; ~ is ``tmp_path`` (Ray writes
    the key pair it creates there); no AWS configuration or credentials of this machine are read."""
    pytest.importorskip("moto", reason="moto (the dev extra) fakes AWS in process")
    import socket

    tried: list = []

    def refuse(*args, **kwargs):
        tried.append(args[1:] if args and isinstance(args[0], socket.socket) else args)
        raise OSError("the offline test refuses every connection")

    for name in ("connect", "connect_ex"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(var, str(tmp_path / "absent"))
    for var in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore never asks the metadata address
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    import moto.ec2.models.instance_types as ec2_types
    import moto.iam.models as iam_models

    names = sorted({t["node_config"]["InstanceType"] for t in CONFIG["available_node_types"].values()})
    missing = [n for n in names if n not in ec2_types.INSTANCE_TYPES]
    assert not missing, f"cluster.yaml names instance types EC2 no longer lists: {missing}"
    # Only these: Ray's launcher lists every instance type of the region, which moto would serialize for seconds.
    monkeypatch.setattr(ec2_types.InstanceTypeBackend, "instance_types", [ec2_types.InstanceType(n) for n in names])
    policies = json.loads(iam_models.aws_managed_policies_data)
    monkeypatch.setattr(
        iam_models, "aws_managed_policies_data", json.dumps({name: policies[name] for name in RAY_NODE_POLICIES})
    )
    import ray.autoscaler._private.aws.config as aws_config

    waits: list = []  # Ray waits 15 s for IAM to propagate a new role and profile: not in a fake AWS
    monkeypatch.setattr(aws_config, "time", types.SimpleNamespace(sleep=waits.append))
    from moto import mock_aws

    with mock_aws():
        yield tried


def test_ray_up_prepares_the_file_with_the_aws_provider_offline(offline, tmp_path):
    """What `ray up cluster.yaml` does before it starts the head: Ray's own ``_bootstrap_config`` (its schema, its
    AWS node provider, whose import needs boto3, the resources of every node type from EC2's catalog, the IAM role,
    key pair, subnets and security group), against a fake AWS, with nothing leaving the machine."""
    from ray.autoscaler._private.commands import _bootstrap_config
    from ray.autoscaler._private.providers import _NODE_PROVIDERS

    from archstudy.study.execution.cluster import INSTANCE_TYPES

    provider = _NODE_PROVIDERS["aws"](CONFIG["provider"])  # the import that failed without boto3
    assert provider.__name__ == "AWSNodeProvider"
    ready = _bootstrap_config(copy.deepcopy(CONFIG), no_config_cache=True)
    assert offline == []  # no connection, no name lookup: no cloud, no metadata address
    types_ = ready["available_node_types"]
    assert set(types_) == set(CONFIG["available_node_types"])
    for name, t in types_.items():
        instance = t["node_config"]["InstanceType"]
        res = t["resources"]
        if name == CONFIG["head_node_type"]:
            assert res == {"CPU": 0}  # declared: no architecture runs on the head
            continue
        # filled in by Ray from EC2's catalog: the GPUs cluster.yaml's comments name, and the rehearsal's table
        gpu, count = INSTANCE_GPUS[instance]
        assert res["GPU"] == count and res[f"accelerator_type:{gpu}"] == 1, (name, res)
        assert (res["CPU"], res["GPU"]) == INSTANCE_TYPES[instance], name
        assert t["node_config"]["IamInstanceProfile"] == {"Name": "ray-autoscaler-v1"}
    zones = CONFIG["provider"]["availability_zone"].split(",")
    head = types_[CONFIG["head_node_type"]]["node_config"]
    assert head["ImageId"].startswith("ami-") and len(head["SubnetIds"]) == len(zones) and head["SecurityGroupIds"]
    key = Path(ready["auth"]["ssh_private_key"])
    assert key.is_file() and tmp_path in key.parents  # the key pair Ray created, under the fake home
