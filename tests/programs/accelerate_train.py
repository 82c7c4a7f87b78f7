"""accelerate, as its documentation shows: an Accelerator prepares a model, its optimizer, a scheduler and a
DataLoader, trains with ``accelerator.backward``, gathers predictions and saves the unwrapped model."""

import os
import tempfile

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, TensorDataset

set_seed(0)
accelerator = Accelerator(cpu=True)
x = torch.randn(64, 8)
y = (x @ torch.randn(8, 1)).squeeze(-1) + 0.1 * torch.randn(64)
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
for epoch in range(3):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb).squeeze(-1), yb)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
    print(f"epoch {epoch} loss {loss.item():.6f} lr {scheduler.get_last_lr()[0]:.6f}")
model.eval()
with torch.no_grad():
    preds = accelerator.gather_for_metrics(model(x).squeeze(-1))
print(f"eval mse {torch.nn.functional.mse_loss(preds, y).item():.6f}")
with tempfile.TemporaryDirectory() as tmp:
    accelerator.save_model(model, tmp)
    state = accelerator.unwrap_model(model).state_dict()
    print("saved", sorted(os.listdir(tmp)), sorted(state))
