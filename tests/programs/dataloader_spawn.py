"""A DataLoader with two worker processes started by "spawn" (macOS's default start method): the dataset
builds its tensors with torch inside the workers, then a small model trains on the batches."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.tensor([i / self.n], dtype=torch.float32)
        return x, x ** 2, get_worker_info().id


if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(Squares(12), batch_size=4, shuffle=True, num_workers=2, multiprocessing_context="spawn")
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for epoch in range(2):
        for x, y, worker in loader:
            print(epoch, type(x).__name__, x.dtype, [round(v, 4) for v in x.flatten().tolist()], worker.tolist())
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
    print(f"final loss {loss.item():.6f}")
