"""Automatic mixed precision training, as torch's AMP recipe writes it: an autocast region around the forward
pass and the loss, a GradScaler around backward and step, gradients unscaled for clipping, and the scaler's
state saved with the model's. bfloat16 on the CPU (float16 on CUDA); shrunk sizes, generated data."""

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16

batch_size, in_size, out_size, num_layers, epochs = 64, 32, 8, 3, 6


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers)).to(device)


data = [torch.randn(batch_size, in_size, device=device) for _ in range(8)]
targets = [torch.randn(batch_size, out_size, device=device) for _ in range(8)]

net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.MSELoss()
scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 8, growth_interval=10)

for epoch in range(epochs):
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device, dtype=amp_dtype):
            output = net(input)
            assert output.dtype is amp_dtype
            loss = loss_fn(output, target)
            assert loss.dtype is torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    print(f"epoch {epoch}: loss {loss.item():.6f} scale {scaler.get_scale():.1f}")

checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
torch.save(checkpoint, "amp_checkpoint.pt")
restored = torch.load("amp_checkpoint.pt", map_location=device)
net.load_state_dict(restored["model"])
opt.load_state_dict(restored["optimizer"])
scaler.load_state_dict(restored["scaler"])
with torch.no_grad(), torch.autocast(device_type=device, dtype=amp_dtype):
    check = loss_fn(net(data[0]), targets[0])
print(f"restored scale {scaler.get_scale():.1f}, check loss {check.item():.6f}")
print(f"final loss {loss.item():.6f}")
