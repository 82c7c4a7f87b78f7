"""Pyro, as its introduction shows: a Bayesian linear regression model, an AutoNormal guide fitted by SVI with
Trace_ELBO and pyro.optim.Adam, then posterior samples drawn by Predictive."""

import pyro
import pyro.distributions as dist
import torch
from pyro.infer import SVI, Predictive, Trace_ELBO
from pyro.infer.autoguide import AutoNormal

pyro.set_rng_seed(0)
x = torch.randn(50, 2)
y = x @ torch.tensor([1.5, -0.7]) + 0.3 + 0.2 * torch.randn(50)


def model(x, y=None):
    w = pyro.sample("w", dist.Normal(torch.zeros(2), torch.ones(2)).to_event(1))
    b = pyro.sample("b", dist.Normal(0.0, 1.0))
    sigma = pyro.sample("sigma", dist.HalfNormal(1.0))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("obs", dist.Normal(x @ w + b, sigma), obs=y)


pyro.clear_param_store()
guide = AutoNormal(model)
svi = SVI(model, guide, pyro.optim.Adam({"lr": 0.05}), loss=Trace_ELBO())
for step in range(6):
    print(f"step {step} loss {svi.step(x, y):.4f}")
samples = Predictive(model, guide=guide, num_samples=20)(x)
print(f"w mean {[round(v, 4) for v in samples['w'].mean(0).squeeze().tolist()]}")
print(f"obs shape {tuple(samples['obs'].shape)}")
