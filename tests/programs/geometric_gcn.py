"""PyTorch Geometric, as its introduction shows: a two-layer GCN on a small graph built here (a Data object,
edge_index), trained for node classification, plus a batched graph-level readout with global_mean_pool."""

import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GCNConv, global_mean_pool
from torch_geometric.utils import to_undirected

torch.manual_seed(0)
edge_index = to_undirected(torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7, 0, 2], [1, 2, 3, 4, 5, 6, 7, 0, 4, 6]]))
data = Data(x=torch.randn(8, 4), edge_index=edge_index, y=torch.tensor([0, 1, 0, 1, 0, 1, 0, 1]))
data.train_mask = torch.tensor([True, True, True, True, True, False, False, False])


class GCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(4, 8), GCNConv(8, 2)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


model = GCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for epoch in range(5):
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
pred = model(data.x, data.edge_index).argmax(dim=1)
print("pred", pred.tolist(), "nodes", data.num_nodes, "edges", data.num_edges)
batch = Batch.from_data_list([data, data])
pooled = global_mean_pool(model(batch.x, batch.edge_index), batch.batch)
print("pooled", tuple(pooled.shape), f"{pooled.sum().item():.6f}")
