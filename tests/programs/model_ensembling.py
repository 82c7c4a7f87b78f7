"""Model ensembling with torch.func, after torch's tutorial: several MLPs' parameters stacked with
stack_module_state and run at once with vmap over functional_call, on different minibatches and on
the same one, compared with a loop over the models. The base model is a copy of the first model
(the tutorial moves it to the meta device; its tensors are never read either way). Deterministic
data and weights (no download)."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


def init_weights(model, k):
    """Deterministic weights for model ``k``, the same on every device."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_((torch.sin(torch.arange(n, dtype=torch.float32) * (0.3 + 0.11 * k + 0.05 * i)) * 0.25)
                    .reshape(p.shape))


device = "cpu"
num_models = 5

data = torch.cos(torch.arange(20 * 16 * 64, dtype=torch.float32) * 0.021).reshape(20, 16, 1, 8, 8).to(device)
targets = (torch.arange(20 * 16) % 10).to(device)

models = [SimpleMLP().to(device) for _ in range(num_models)]
for k, m in enumerate(models):
    init_weights(m, k)

minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]

minibatch = data[0]
predictions2 = [model(minibatch) for model in models]

from torch.func import functional_call, stack_module_state  # noqa: E402

params, buffers = stack_module_state(models)

base_model = copy.deepcopy(models[0])


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


from torch import vmap  # noqa: E402

print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension

assert minibatches.shape == (num_models, 16, 1, 8, 8)  # verify minibatch has leading dimension of size 'num_models'

predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)

# verify the ``vmap`` predictions match the
print(torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5))

predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)

print(torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5))
print(tuple(predictions1_vmap.shape), tuple(predictions2_vmap.shape))
for k in range(num_models):
    loss = F.cross_entropy(predictions1_vmap[k], targets[k * 16:(k + 1) * 16])
    print(f"model {k}: loss {loss.item():.4f} mean logit {predictions2_vmap[k].mean().item():.4f}")

# the stacked parameters are leaves: one SGD step trains every model of the ensemble at once
loss = vmap(lambda p, b, x, y: F.cross_entropy(fmodel(p, b, x), y))(
    params, buffers, minibatches, targets[:num_models * 16].reshape(num_models, 16)).sum()
loss.backward()
with torch.no_grad():
    for p in params.values():
        p -= 0.1 * p.grad
after = vmap(fmodel)(params, buffers, minibatches)
for k in range(num_models):
    print(f"model {k}: loss after one step "
          f"{F.cross_entropy(after[k], targets[k * 16:(k + 1) * 16]).item():.4f}")
