"""A character-level model in makemore's style (an MLP over a context of characters) that logs its
training to TensorBoard with SummaryWriter: the loss each step, weight histograms, the embedding as
an image, the hyperparameters. Writes into ./runs/makemore."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.tensorboard import SummaryWriter

WORDS = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper", "evelyn",
         "abigail", "emily", "elizabeth", "mila", "ella", "avery", "sofia", "camila", "aria", "scarlett"]
chars = sorted(set("".join(WORDS)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
block_size = 3


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


class MLP(nn.Module):
    def __init__(self, vocab, n_embd=8, n_hidden=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.mlp = nn.Sequential(nn.Linear(block_size * n_embd, n_hidden), nn.Tanh(), nn.Linear(n_hidden, vocab))

    def forward(self, idx):
        emb = self.wte(idx)
        return self.mlp(emb.view(emb.shape[0], -1))


torch.manual_seed(42)
Xtr, Ytr = build_dataset(WORDS)
model = MLP(len(stoi))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
writer = SummaryWriter(log_dir="runs/makemore")
for step in range(30):
    ix = torch.randint(0, Xtr.shape[0], (16,))
    logits = model(Xtr[ix])
    loss = F.cross_entropy(logits, Ytr[ix])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    writer.add_scalar("Loss/train", loss.item(), step)
    if step % 10 == 0:
        print(f"step {step} | loss {loss.item():.4f}")
        for name, p in model.named_parameters():
            writer.add_histogram(name, p, step)
with torch.no_grad():
    full = F.cross_entropy(model(Xtr), Ytr).item()
    emb = model.wte.weight
    writer.add_image("embedding", (emb - emb.min()) / (emb.max() - emb.min()), 0, dataformats="HW")
writer.add_text("vocab", "".join(chars))
writer.add_hparams({"lr": 1e-2, "n_embd": 8, "block_size": block_size}, {"hparam/loss": full}, run_name="hp")
writer.close()
print(f"final loss {full:.4f}")
