"""``han_nets``: the Han papers' nets and training as the authors' code runs them, checked against torch's own
modules, optimizer and scheduler (``nn.Linear``, ``torch.optim.SGD``, ``MultiStepLR``, ``nn.init``) and against
the parameter counts of Yu and Zhang's Table 3."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from archstudy.study.reproduce import han_nets
from archstudy.study.reproduce.han_nets import HanArch, Stack, accuracy, initial_parameters, rate_factor, train

HANNET = HanArch(20, 30, True, "abs", "orthogonal")


def test_the_hannet_is_the_codes_layer_for_layer_and_table_3_counts_its_parameters():
    kinds = HANNET.layers()
    assert kinds[:2] == [("dense", 2, 30), ("dense", 30, 30)] and kinds[-2:] == [("dense", 30, 30), ("dense", 30, 2)]
    assert kinds[2:-2] == [("reflection", 30, 30)] * 17 and len(kinds) == 21  # 20 hidden layers and the output
    # Table 3 (two outputs): 2*30+30 + 2 (30*30+30) + 17 * 2 * 30 + 30*2+2
    assert HANNET.num_params == 90 + 2 * 930 + 17 * 60 + 62 == 3032
    for hidden, width, count in ((6, 100, 51002), (10, 100, 91402), (6, 300, 453002)):  # FCNet1-3, Table 3
        fc = HanArch(hidden, width, False, "relu", "kaiming")
        assert fc.num_params == count and [k for k, _, _ in fc.layers()] == ["dense"] * (hidden + 1)
    # Table 7's 100 x 17 (width x depth): 17 hidden layers of width 100, 14 of them Householder layers
    h17 = HanArch(17, 100, True, "abs", "orthogonal")
    assert [k for k, _, _ in h17.layers()].count("reflection") == 14 and len(h17.layers()) == 18
    assert h17.num_params == 300 + 2 * 10100 + 14 * 200 + 202


def test_the_initialization_is_the_codes():
    params = initial_parameters(HANNET, seed=5)
    w_in, w_out = params[0]["weight"], params[-1]["weight"]
    np.testing.assert_allclose(w_in.T @ w_in, np.eye(2), atol=1e-12)  # orthonormal columns, gain 1 (no sqrt(15))
    np.testing.assert_allclose(w_out @ w_out.T, np.eye(2), atol=1e-12)  # the output layer orthogonal too
    np.testing.assert_allclose(params[1]["weight"] @ params[1]["weight"].T, np.eye(30), atol=1e-12)
    for p, (kind, fan_in, _) in zip(params, HANNET.layers()):
        bound = 1 / math.sqrt(fan_in)
        assert 0 < np.abs(p["bias"]).max() <= bound and len(np.unique(p["bias"])) == len(p["bias"])
        if kind == "reflection":
            assert np.linalg.norm(p["v"]) == pytest.approx(1.0, abs=1e-12)  # torch's orthogonal_ of [n, 1]
    # the distribution of torch's orthogonal_: the first entry of a uniform unit vector in R^30 has mean 0 and
    # variance 1/30; its square's variance is 3 / (30 * 32) - 1 / 900, so 4 standard errors over 400 draws
    first = np.array([initial_parameters(HANNET, seed=s)[5]["v"][0] for s in range(400)])
    assert abs(first.var() - 1 / 30) < 4 * math.sqrt((3 / 960 - 1 / 900) / 400)
    # FCNets: Kaiming normal, N(0, 2 / fan_in), the output layer included
    w = initial_parameters(HanArch(2, 300, False, "relu", "kaiming"), seed=1)[1]["weight"]
    assert w.std() == pytest.approx(math.sqrt(2 / 300), rel=0.02) and abs(w.mean()) < 4 * math.sqrt(2 / 300) / 300
    assert math.isclose(
        torch.nn.init.calculate_gain("leaky_relu", 0), math.sqrt(2)
    )  # torch's kaiming_normal_ default gain


class Reflector(torch.nn.Module):
    """Algorithm 1's layer written as the paper states it: H(v) x + b with H(v) = I - 2 v v^T / |v|^2 formed."""

    def __init__(self, v, b):
        super().__init__()
        self.v, self.b = torch.nn.Parameter(v.clone()), torch.nn.Parameter(b.clone())

    def forward(self, x):
        n = len(self.v)
        h = torch.eye(n, dtype=x.dtype) - 2 * torch.outer(self.v, self.v) / (self.v @ self.v)
        return x @ h.T + self.b


def reference_net(arch: HanArch, params) -> torch.nn.Sequential:
    """The same net from torch modules, one run's parameters copied in."""
    act = torch.nn.ReLU if arch.activation == "relu" else None
    layers: list[torch.nn.Module] = []
    for k, (p, (kind, fan_in, fan_out)) in enumerate(zip(params, arch.layers())):
        if kind == "reflection":
            layers.append(Reflector(torch.tensor(p["v"]), torch.tensor(p["bias"])))
        else:
            lin = torch.nn.Linear(fan_in, fan_out, dtype=torch.float64)
            with torch.no_grad():
                lin.weight.copy_(torch.tensor(p["weight"]))
                lin.bias.copy_(torch.tensor(p["bias"]))
            layers.append(lin)
        if k < len(params) - 1:
            layers.append(act() if act else Abs())
    return torch.nn.Sequential(*layers)


class Abs(torch.nn.Module):
    def forward(self, x):
        return x.abs()


@pytest.mark.parametrize(
    "arch", [HANNET, HanArch(5, 8, True, "relu", "orthogonal"), HanArch(3, 16, False, "abs", "kaiming")]
)
def test_the_stack_computes_each_runs_net(arch):
    seeds = [3, 4]
    stack = Stack(arch, seeds)
    x = torch.rand(40, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 2 - 1
    out = stack(x)
    assert out.shape == (2, 40, 2)
    for r, s in enumerate(seeds):
        ref = reference_net(arch, initial_parameters(arch, s))
        torch.testing.assert_close(out[r], ref(x), rtol=1e-12, atol=1e-12)


def test_the_rate_schedule_is_torchs_multisteplr():
    for iterations in (40, 32, 40_000):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        sched = torch.optim.lr_scheduler.MultiStepLR(
            opt, milestones=[0.5 * iterations, 0.7 * iterations, 0.9 * iterations], gamma=0.2
        )
        for it in range(iterations):
            assert rate_factor(it, iterations) == pytest.approx(opt.param_groups[0]["lr"], rel=1e-12), (iterations, it)
            opt.step()
            sched.step()
    assert rate_factor(31, 32) == pytest.approx(0.2)  # 22.4 and 28.8 never equal a step count: they never fire


def test_accuracy_rounds_the_mean_output_and_counts_a_half_as_wrong():
    f = torch.tensor([[[0.2, 0.9], [0.5, 0.5], [1.4, -0.2], [0.1, 0.2]]], dtype=torch.float64)
    y = torch.tensor([1, 0, 1, 0])
    # means 0.55 -> 1 (right), 0.5 (wrong either way), 0.6 -> 1 (right), 0.15 -> 0 (right)
    assert accuracy(f, y).tolist() == [0.75]


def test_training_is_torchs_sgd_with_momentum_and_the_step_schedule_run_by_run():
    """Two runs trained together equal each run trained alone by torch.optim.SGD(momentum=0.9) and MultiStepLR
    on the same minibatches, with the mean squared error of both outputs against the label."""
    arch = HanArch(5, 8, True, "abs", "orthogonal")
    g = torch.Generator().manual_seed(1)
    x = torch.rand(60, 2, dtype=torch.float64, generator=g) * 2 - 1
    y = (x[:, 0] * x[:, 1] > 0).long()
    seeds, rates, iterations, batch = [11, 12], [0.05, 0.2], 20, 10
    out = train(arch, seeds, rates, x, y, x, y, iterations=iterations, batch=batch, order_seed=9, evaluate_every=3)
    for r, (s, lr) in enumerate(zip(seeds, rates)):
        ref = reference_net(arch, initial_parameters(arch, s))
        opt = torch.optim.SGD(ref.parameters(), lr=lr, momentum=0.9)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[10, 14, 18], gamma=0.2)
        order = torch.Generator().manual_seed(9)
        best = -1.0
        for it in range(iterations):
            idx = torch.rand(2, 60, generator=order).topk(batch, dim=1).indices[r]  # the runs' draws
            loss = torch.nn.functional.mse_loss(ref(x[idx]), y[idx].double().unsqueeze(1).expand(batch, 2))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if it % 3 == 0:
                with torch.no_grad():
                    best = max(best, accuracy(ref(x).unsqueeze(0), y).item())
        with torch.no_grad():
            torch.testing.assert_close(out.stack(x)[r], ref(x), rtol=1e-9, atol=1e-10)
        assert out.best[r] == pytest.approx(best) and not out.diverged[r]
    assert han_nets.EVALUATE_EVERY == 100
