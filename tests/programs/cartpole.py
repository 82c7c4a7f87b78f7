"""A small cart-pole environment for the reinforcement-learning programs (no gym): the classic
control dynamics, deterministic given its seed."""
import math

import numpy as np


class CartPole:
    """The classic cart-pole: push left (0) or right (1); reward 1 per step until the pole falls."""

    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.state = None
        self.steps = 0

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot,
                               theta_dot + 0.02 * theta_acc])
        self.steps += 1
        done = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360 or self.steps >= 100
        return self.state.astype(np.float32), 1.0, done
