"""PyTorch Lightning, as its documentation shows: a LightningModule with training and validation steps,
a LightningDataModule over local tensors, and a Trainer fitting, validating and testing on the CPU."""

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import pytorch_lightning as pl


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 1))
        self.losses = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss)
        self.losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x).squeeze(-1), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.mse_loss(self.net(x).squeeze(-1), y))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.9)}


class Data(pl.LightningDataModule):
    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(96, 6, generator=g)
        y = torch.sin(x.sum(-1))
        self.train, self.val = TensorDataset(x[:64], y[:64]), TensorDataset(x[64:], y[64:])

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=16)

    def test_dataloader(self):
        return DataLoader(self.val, batch_size=32)


pl.seed_everything(0, verbose=False)
model = Regressor()
trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, datamodule=Data())
for i, loss in enumerate(model.losses):
    print(f"step {i} loss {loss:.6f}")
print(f"val loss {trainer.validate(model, datamodule=Data(), verbose=False)[0]['val_loss']:.6f}")
print(f"test loss {trainer.test(model, datamodule=Data(), verbose=False)[0]['test_loss']:.6f}")
