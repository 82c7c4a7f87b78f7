"""An LSTM sequence predictor on sine waves, trained with LBFGS in float64.

The data goes through torch.save/torch.load in the working directory: a first run writes it, later
runs (under any framework) read the same file.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

# the data, as the original example's generate_sine_wave.py writes it
np.random.seed(2)
T, L, N = 20, 100, 12
x = np.empty((N, L), "int64")
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
path = "traindata.pt"
if not os.path.exists(path):
    torch.save(np.sin(x / 1.0 / T).astype("float64"), open(path, "wb"))


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 16)
        self.lstm2 = nn.LSTMCell(16, 16)
        self.linear = nn.Linear(16, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 16, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), 16, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), 16, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), 16, dtype=torch.double, device=input.device)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    device = "cuda" if torch.cuda.is_available() else "cpu"
    np.random.seed(0)
    torch.manual_seed(0)
    data = torch.load(path, weights_only=False)
    input = torch.from_numpy(data[3:, :-1]).to(device)
    target = torch.from_numpy(data[3:, 1:]).to(device)
    test_input = torch.from_numpy(data[:3, :-1]).to(device)
    test_target = torch.from_numpy(data[:3, 1:]).to(device)
    seq = Sequence().double().to(device)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=8)
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
        print(f"STEP {i} loss: {loss.item():.10f}")
        with torch.no_grad():
            future = 20
            pred = seq(test_input, future=future)
            test_loss = criterion(pred[:, :-future], test_target)
            print(f"test loss: {test_loss.item():.10f}")
    print(f"final loss {test_loss.item():.10f}")
