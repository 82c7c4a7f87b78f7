"""Actor-critic on a small cart-pole, in the idiom of pytorch/examples' reinforcement_learning/actor_critic.py
(the environment, cartpole.py beside it, is the classic cart-pole dynamics, deterministic and seeded; no gym)."""
import argparse
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

from cartpole import CartPole

parser = argparse.ArgumentParser(description="PyTorch actor-critic example")
parser.add_argument("--gamma", type=float, default=0.99, metavar="G", help="discount factor (default: 0.99)")
parser.add_argument("--seed", type=int, default=543, metavar="N", help="random seed (default: 543)")
parser.add_argument("--episodes", type=int, default=6, metavar="N", help="episodes to run (default: 6)")
parser.add_argument("--log-interval", type=int, default=2, metavar="N", help="interval between training status logs")
args = parser.parse_args()


env = CartPole(args.seed)
torch.manual_seed(args.seed)

SavedAction = namedtuple("SavedAction", ["log_prob", "value"])


class Policy(nn.Module):
    """implements both actor and critic in one model"""

    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode():
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []
    for r in model.rewards[::-1]:
        R = r + args.gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def main():
    running_reward = 10
    loss = 0.0
    for i_episode in range(1, args.episodes + 1):
        state = env.reset()
        ep_reward = 0
        for t in range(1, 10000):
            action = select_action(state)
            state, reward, done = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        loss = finish_episode()
        if i_episode % args.log_interval == 0:
            print("Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}\tloss {:.6f}".format(
                i_episode, ep_reward, running_reward, loss))
    print("final loss {:.6f}".format(abs(loss)))
    print("final running reward {:.4f}".format(running_reward))


if __name__ == "__main__":
    main()
