"""kornia, as its documentation shows: filters, color conversions, geometric warps, augmentation with a
fixed seed, a loss and a feature response on a small batch of images, with gradients through them."""

import math

import kornia
import kornia.augmentation as K
import torch

torch.manual_seed(0)
images = torch.rand(2, 3, 16, 16, requires_grad=True)
blurred = kornia.filters.gaussian_blur2d(images, (5, 5), (1.5, 1.5))
edges = kornia.filters.sobel(blurred)
gray = kornia.color.rgb_to_grayscale(images)
hsv = kornia.color.rgb_to_hsv(images)
center = torch.tensor([[8.0, 8.0], [8.0, 8.0]])
matrix = kornia.geometry.transform.get_rotation_matrix2d(center, torch.tensor([30.0, -45.0]), torch.ones(2, 2))
warped = kornia.geometry.transform.warp_affine(images, matrix, dsize=(16, 16))
ssim = kornia.losses.ssim_loss(images, warped, window_size=5)
harris = kornia.feature.harris_response(gray)
total = blurred.sum() + edges.sum() + hsv[:, 0].mean() + warped.sum() + ssim + harris.sum()
total.backward()
for name, t in [("blurred", blurred), ("edges", edges), ("gray", gray), ("hsv", hsv), ("warped", warped),
                ("harris", harris)]:
    print(f"{name} {tuple(t.shape)} sum {t.sum().item():.5f}")
print(f"ssim {ssim.item():.6f} grad {images.grad.abs().sum().item():.5f}")
augment = K.AugmentationSequential(K.RandomHorizontalFlip(p=1.0), K.RandomAffine(degrees=20.0, p=1.0),
                                   K.ColorJitter(0.1, 0.1, 0.1, 0.0, p=1.0))
torch.manual_seed(1)
out = augment(images.detach())
print(f"augmented {tuple(out.shape)} sum {out.sum().item():.5f} pi {math.pi:.3f}")
