"""torchmetrics, as its documentation shows: module metrics updated batch by batch and computed, a
MetricCollection, and the functional forms, on a tiny classifier's and regressor's outputs."""

import torch
import torchmetrics
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score, MulticlassPrecision
from torchmetrics.functional import mean_squared_error, pearson_corrcoef

torch.manual_seed(0)
model = torch.nn.Linear(5, 3)
collection = MetricCollection({"acc": MulticlassAccuracy(num_classes=3), "f1": MulticlassF1Score(num_classes=3),
                               "prec": MulticlassPrecision(num_classes=3, average="macro")})
auroc = torchmetrics.AUROC(task="multiclass", num_classes=3)
mse = torchmetrics.MeanSquaredError()
for batch in range(4):
    x, target = torch.randn(16, 5), torch.randint(0, 3, (16,))
    logits = model(x)
    step = collection(logits, target)
    auroc.update(logits.softmax(-1), target)
    mse.update(logits[:, 0], x[:, 0])
    print(f"batch {batch} acc {step['acc'].item():.6f}")
for name, value in sorted(collection.compute().items()):
    print(f"{name} {value.item():.6f}")
print(f"auroc {auroc.compute().item():.6f} mse {mse.compute().item():.6f}")
a, b = torch.randn(20), torch.randn(20)
print(f"functional mse {mean_squared_error(a, b).item():.6f} pearson {pearson_corrcoef(a, b).item():.6f}")
