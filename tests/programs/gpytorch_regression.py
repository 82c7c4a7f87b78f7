"""gpytorch, as its regression tutorial shows: an exact GP with a scaled RBF kernel fitted by Adam on the
exact marginal log likelihood, then its posterior predictive mean and confidence region on test points."""

import math

import gpytorch
import torch

torch.manual_seed(0)
train_x = torch.linspace(0, 1, 20)
train_y = torch.sin(train_x * (2 * math.pi)) + torch.randn(train_x.size()) * math.sqrt(0.04)


class ExactGPModel(gpytorch.models.ExactGP):
    def __init__(self, train_x, train_y, likelihood):
        super().__init__(train_x, train_y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


likelihood = gpytorch.likelihoods.GaussianLikelihood()
model = ExactGPModel(train_x, train_y, likelihood)
model.train()
likelihood.train()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
for i in range(8):
    optimizer.zero_grad()
    loss = -mll(model(train_x), train_y)
    loss.backward()
    print(f"iter {i} loss {loss.item():.5f} lengthscale {model.covar_module.base_kernel.lengthscale.item():.5f} "
          f"noise {model.likelihood.noise.item():.5f}")
    optimizer.step()
model.eval()
likelihood.eval()
with torch.no_grad(), gpytorch.settings.fast_pred_var():
    pred = likelihood(model(torch.linspace(0, 1, 5)))
    lower, upper = pred.confidence_region()
print("mean", [f"{v:.4f}" for v in pred.mean.tolist()])
print("width", [f"{v:.4f}" for v in (upper - lower).tolist()])
