"""Fit a degree-4 polynomial to a polynomial plus 3|x| with nn.Linear, updating parameters through param.data.add_."""
import torch
import torch.nn.functional as F

POLY_DEGREE = 4
torch.manual_seed(0)
W_target = torch.tensor([[1.5], [-2.0], [0.5], [3.0]])
b_target = torch.tensor([0.7])


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_target) + b_target.item() + 3.0 * x[:, :1].abs()


def get_batch(batch_size=128):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.rand(batch_size) * 2 - 1
    x = make_features(random)
    y = f(x)
    return x, y


device = "cuda" if torch.cuda.is_available() else "cpu"
fc = torch.nn.Linear(W_target.size(0), 1).to(device)

for batch_idx in range(1, 1201):
    batch_x, batch_y = get_batch()
    batch_x, batch_y = batch_x.to(device), batch_y.to(device)
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.5 * param.grad)
    if batch_idx % 300 == 0:
        print(f"batch {batch_idx} loss {loss:.6f}")

with torch.no_grad():
    grid = make_features(torch.linspace(-1, 1, 101)).to(device)
    final = F.smooth_l1_loss(fc(grid), f(grid)).item()
print("learned bias", [round(v, 4) for v in fc.bias.tolist()])
print(f"final loss {final:.6f}")
