"""diffusers, as its training example shows: a tiny UNet2DModel from a config learns to predict DDPM's noise on
local images, then a DDPMPipeline samples a few denoising steps."""

import torch
import torch.nn.functional as F
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel

torch.manual_seed(0)
model = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                    block_out_channels=(8, 16), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                    up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4)
scheduler = DDPMScheduler(num_train_timesteps=50)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
images = torch.rand(4, 1, 8, 8) * 2 - 1
for step in range(3):
    noise = torch.randn(images.shape, layout=torch.strided)
    timesteps = torch.randint(0, scheduler.config.num_train_timesteps, (images.shape[0],)).long()
    noisy = scheduler.add_noise(images, noise, timesteps)
    loss = F.mse_loss(model(noisy, timesteps, return_dict=False)[0], noise)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step} loss {loss.item():.6f}")
pipeline = DDPMPipeline(unet=model, scheduler=scheduler)
pipeline.set_progress_bar_config(disable=True)
out = pipeline(batch_size=2, generator=torch.manual_seed(1), num_inference_steps=5, output_type="np").images
print(f"sample shape {tuple(out.shape)} mean {float(out.mean()):.6f}")
