"""Per-sample gradients with torch.func, after torch's tutorial: a small CNN, the gradient of each
sample's loss computed by a loop of per-sample backward() calls and by vmap(grad(...)) over
functional_call, compared and their norms printed. Deterministic data and weights (no download)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(128, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


def init_weights(model):
    """Deterministic weights, the same on every device."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_((torch.sin(torch.arange(n, dtype=torch.float32) * (0.7 + 0.1 * i)) * 0.3).reshape(p.shape))


device = "cpu"
batch_size = 8
data = torch.cos(torch.arange(batch_size * 12 * 12, dtype=torch.float32) * 0.05).reshape(batch_size, 1, 12, 12)
data = data.to(device)
targets = (torch.arange(batch_size) * 3 % 10).to(device)

model = SimpleCNN().to(device=device)
init_weights(model)

predictions = model(data)
loss = loss_fn(predictions, targets)
print(f"batch loss {loss.item():.4f}")


def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)
    model.zero_grad()
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    loss.backward()
    return [p.grad.detach().clone() for p in model.parameters()]


def compute_sample_grads(data, targets):
    """manually process each sample with per sample gradient"""
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


per_sample_grads = compute_sample_grads(data, targets)
print(tuple(per_sample_grads[1].shape))

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)

    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

for (name, ft_per_sample_grad), per_sample_grad in zip(ft_per_sample_grads.items(), per_sample_grads):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    norms = ft_per_sample_grad.flatten(1).norm(dim=1)
    print(f"{name:12s} {tuple(ft_per_sample_grad.shape)} norms " + " ".join(f"{v:.4f}" for v in norms.tolist()))

# the mean of the per-sample gradients is the batch gradient
model.zero_grad()
loss_fn(model(data), targets).backward()
for (name, g), p in zip(ft_per_sample_grads.items(), model.parameters()):
    print(f"{name:12s} mean matches batch gradient: {torch.allclose(g.mean(0), p.grad, atol=1e-5, rtol=1e-4)}")
