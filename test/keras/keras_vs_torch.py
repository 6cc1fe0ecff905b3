#!/usr/bin/env python3
"""Numerics of the Keras importer: graphc training vs a hand-built PyTorch model.

  keras_vs_torch.py --case NAME --workdir DIR --graphc PATH [--tol 1e-5]

For the fixture test/keras/Inputs/NAME.json (written as Keras serializes models, see
make_fixtures.py) this script

1. writes random weights in the exact Keras file layout the case names: Keras 3
   `model.weights.h5` (`layers/<class-derived path>/vars/<i>`) or tf.keras 2 `save_weights`
   `.h5` (`layer_names`, per-layer groups with `weight_names`, datasets `<layer>/<var>:0`);
2. compiles the model with graphc (--weights, --batch, and the training flags the case gives;
   the others come from the fixture's compile_config) and trains STEPS steps with
   --save-weights (rank-4 inputs are fed to the binary as NCHW, as docs/supported-ops.md says);
3. runs the same steps in PyTorch with a model written out by hand in Keras's own terms
   (NHWC tensors, HWIO kernels, TF "same" padding, Keras's Flatten order, the BatchNorm and
   dropout rules graphc documents), on the Keras-layout weights;
4. compares every step's loss and every saved weight (converted from Keras layout to graphc's
   by the documented rule: HWIO -> OIHW, depthwise (H, W, C, M) -> (C*M, 1, H, W), Dense rows
   after a Flatten of an image in (C, H, W) order).

relative error = max|a - b| / max|b| (scalars: |a - b| / |b|). Prints the errors, then PASS or
FAIL.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
STEP_RE = re.compile(r"^step (\d+)/(\d+) loss (\S+)\s*$")


# ---- Keras semantics in PyTorch (NHWC) ---------------------------------------------------------

def same_pad(n, k, s, d=1):
    eff = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


def conv(x, k, b, strides=(1, 1), padding="valid", dilation=(1, 1), groups=1):
    """Keras Conv2D: x NHWC, k HWIO."""
    xc = x.permute(0, 3, 1, 2)
    if padding == "same":
        t, bo = same_pad(xc.shape[2], k.shape[0], strides[0], dilation[0])
        l, r = same_pad(xc.shape[3], k.shape[1], strides[1], dilation[1])
        xc = F.pad(xc, (l, r, t, bo))
    y = F.conv2d(xc, k.permute(3, 2, 0, 1), b, stride=strides, dilation=dilation, groups=groups)
    return y.permute(0, 2, 3, 1)


def depthwise(x, k, b, padding="valid", strides=(1, 1)):
    """Keras DepthwiseConv2D: k (H, W, C, M); output channel c*M + m."""
    kh, kw, c, m = k.shape
    w = k.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)
    xc = x.permute(0, 3, 1, 2)
    if padding == "same":
        t, bo = same_pad(xc.shape[2], kh, strides[0])
        l, r = same_pad(xc.shape[3], kw, strides[1])
        xc = F.pad(xc, (l, r, t, bo))
    return F.conv2d(xc, w, b, stride=strides, groups=c).permute(0, 2, 3, 1)


def separable(x, dk, pk, b, strides=(1, 1), padding="valid"):
    """Keras SeparableConv2D: the depthwise conv, then the (1, 1, C*M, F) pointwise kernel as a
    matrix over the channels, then the bias."""
    h = depthwise(x, dk, None, padding, strides) @ pk[0, 0]
    return h if b is None else h + b


def conv1d(x, k, b, stride=1, padding="valid", dilation=1, groups=1):
    """Keras Conv1D: x (N, L, C), k (K, I, O); causal pads (K - 1) * dilation steps on the left."""
    xc = x.permute(0, 2, 1)
    if padding == "same":
        xc = F.pad(xc, same_pad(xc.shape[2], k.shape[0], stride, dilation))
    elif padding == "causal":
        xc = F.pad(xc, ((k.shape[0] - 1) * dilation, 0))
    y = F.conv1d(xc, k.permute(2, 1, 0), b, stride=stride, dilation=dilation, groups=groups)
    return y.permute(0, 2, 1)


def conv3d(x, k, b, strides=(1, 1, 1), padding="valid", dilation=(1, 1, 1), groups=1):
    """Keras Conv3D: x NDHWC, k (D, H, W, I, O)."""
    xc = x.permute(0, 4, 1, 2, 3)
    if padding == "same":
        p = [same_pad(xc.shape[2 + a], k.shape[a], strides[a], dilation[a]) for a in range(3)]
        xc = F.pad(xc, p[2] + p[1] + p[0])
    y = F.conv3d(xc, k.permute(4, 3, 0, 1, 2), b, stride=strides, dilation=dilation,
                 groups=groups)
    return y.permute(0, 2, 3, 4, 1)


def pool3d(x, size, strides, padding="valid", maximum=True):
    """Keras MaxPooling3D / AveragePooling3D on NDHWC: with "same", padded cells never win a
    maximum and the average's divisor counts only input cells (TF's rule)."""
    xc = x.permute(0, 4, 1, 2, 3)
    ones = torch.ones_like(xc[:, :1])
    if padding == "same":
        p = [same_pad(xc.shape[2 + a], size[a], strides[a]) for a in range(3)]
        pads = p[2] + p[1] + p[0]
        xc = F.pad(xc, pads, value=float("-inf") if maximum else 0.0)
        ones = F.pad(ones, pads)
    if maximum:
        return F.max_pool3d(xc, size, strides).permute(0, 2, 3, 4, 1)
    s = F.avg_pool3d(xc, size, strides, divisor_override=1)
    n = F.avg_pool3d(ones, size, strides, divisor_override=1)
    return (s / n).permute(0, 2, 3, 4, 1)


def pool1d(pool, x, size, stride, padding="valid"):
    """A 1-D Keras pooling layer on x (N, L, C): the 2-D one over a height-1 image."""
    return pool(x.unsqueeze(1), (1, size), (1, stride), padding).squeeze(1)


def deconv_length(n, k, s, d, padding, output_padding):
    """Keras's output length of a transposed convolution (compute_conv_transpose_output_shape)."""
    eff = (k - 1) * d + 1
    if padding == "same":
        return n * s if output_padding is None else (n - 1) * s + eff % 2 + output_padding
    return (n - 1) * s + (max(eff, s) if output_padding is None else eff + output_padding)


def conv_transpose(x, k, b, strides=(1, 1), padding="valid", dilation=(1, 1), output_padding=None):
    """Keras Conv2DTranspose as TensorFlow defines it: the gradient, with respect to its input,
    of Keras's Conv2D (TF's same/valid padding) whose HWIO kernel is k (H, W, filters, C), for an
    input of Keras's output size. create_graph keeps it differentiable in x and k."""
    n, h, w, _ = x.shape
    op = output_padding or (None, None)
    size = [deconv_length(n_, k_, s_, d_, padding, p_) for n_, k_, s_, d_, p_ in
            zip((h, w), k.shape[:2], strides, dilation, op)]
    z = torch.zeros(n, size[0], size[1], k.shape[2], requires_grad=True)
    y = conv(z, k, None, strides, padding, dilation)
    assert y.shape == x.shape, (y.shape, x.shape)
    (g,) = torch.autograd.grad(y, z, grad_outputs=x, create_graph=True)
    return g if b is None else g + b


def max_pool(x, size, strides, padding="valid"):
    xc = x.permute(0, 3, 1, 2)
    if padding == "same":
        t, bo = same_pad(xc.shape[2], size[0], strides[0])
        l, r = same_pad(xc.shape[3], size[1], strides[1])
        xc = F.pad(xc, (l, r, t, bo), value=float("-inf"))
    return F.max_pool2d(xc, size, strides).permute(0, 2, 3, 1)


def avg_pool(x, size, strides, padding="valid"):
    """TF pooling: with "same", the divisor counts only the input cells in the window."""
    xc = x.permute(0, 3, 1, 2)
    ones = torch.ones_like(xc[:, :1])
    if padding == "same":
        t, bo = same_pad(xc.shape[2], size[0], strides[0])
        l, r = same_pad(xc.shape[3], size[1], strides[1])
        xc = F.pad(xc, (l, r, t, bo))
        ones = F.pad(ones, (l, r, t, bo))
    s = F.avg_pool2d(xc, size, strides, divisor_override=1)
    n = F.avg_pool2d(ones, size, strides, divisor_override=1)
    return (s / n).permute(0, 2, 3, 1)


class BN:
    """Keras BatchNormalization over the last axis, with graphc's documented running-statistics
    rule (PyTorch's: unbiased batch variance), momentum m_graphc = 1 - m_keras."""

    def __init__(self, P, S, name, keras_momentum=0.99, eps=1e-3, training=True):
        self.P, self.S, self.name = P, S, name
        self.m, self.eps, self.training = 1.0 - keras_momentum, eps, training

    def __call__(self, x):
        g, b = self.P[self.name + "/gamma"], self.P[self.name + "/beta"]
        mm, mv = self.S[self.name + "/moving_mean"], self.S[self.name + "/moving_variance"]
        axes = tuple(range(x.dim() - 1))
        if not self.training:
            return g * (x - mm) / torch.sqrt(mv + self.eps) + b
        mean = x.mean(dim=axes)
        var = x.var(dim=axes, unbiased=False)
        cnt = x.numel() // x.shape[-1]
        with torch.no_grad():
            self.S[self.name + "/moving_mean"] = (1 - self.m) * mm + self.m * mean
            self.S[self.name + "/moving_variance"] = (1 - self.m) * mv + self.m * var * cnt / (cnt - 1)
        return g * (x - mean) / torch.sqrt(var + self.eps) + b


M64 = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def draw_hashes(count, op_id, step, seed=0):
    """splitmix64(key ^ i) for i < count, key graphc's (seed, op, step) key (dropout_mask.h),
    vectorised over numpy's wrapping uint64 arithmetic."""
    key = splitmix64(splitmix64(splitmix64(seed) ^ op_id) ^ step)
    z = np.arange(count, dtype=np.uint64) ^ np.uint64(key)
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def uniform_draws(count, op_id, step):
    """graphc's counter-based uniforms in [0, 1), draw i for i < count: the hash's top 24 bits."""
    return (draw_hashes(count, op_id, step) >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)


def keep_draws(count, ratio, op_id, step):
    """graphc's dropout mask bits, draw i for i < count (a broadcast mask has fewer draws than
    elements: one per sample and channel for a spatial dropout)."""
    return torch.from_numpy(uniform_draws(count, op_id, step) >= np.float32(ratio))


def dropout(x, ratio, op_id, step):
    """graphc's dropout (runtime/include/graphc/runtime/dropout_mask.h): element i of x draws
    mask bit i."""
    keep = keep_draws(x.numel(), ratio, op_id, step).reshape(x.shape)
    return torch.where(keep, x / (1 - ratio), torch.zeros_like(x))


def normal_draws(shape, op_id, step):
    """graphc's counter-based standard normal (graph.random_normal, Box-Muller in float32) over
    graphc's element order of `shape`."""
    h = draw_hashes(int(np.prod(shape)), op_id, step)
    u1 = ((h >> np.uint64(40)) + np.uint64(1)).astype(np.float32) * np.float32(2.0 ** -24)
    u2 = ((h >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0 ** -24)
    z = np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(np.float32(6.28318530717958647692) * u2)
    return torch.from_numpy(z.astype(np.float32).reshape(shape))


def random_affine(x, op_id, step, kind, low0=0.0, high0=0.0, low1=0.0, high1=0.0,
                  fill="reflect", fill_value=0.0, nearest=False):
    """graph.random_affine on an NHWC batch, by torch's grid_sample: each sample's output to
    input map from graphc's draws 2 s and 2 s + 1 (tf.keras's rotation, zoom and translation
    matrices about the centre; runtime/include/graphc/runtime/random_affine.h), sampled at pixel
    centres (align_corners=False), whose reflection and border padding are TensorFlow's reflect
    and nearest fill modes; constant is zeros padding around x - fill_value."""
    n, h, w, _ = x.shape
    u = uniform_draws(2 * n, op_id, step).reshape(n, 2)
    f32 = np.float32
    cx, cy = f32(0.5) * f32(w - 1), f32(0.5) * f32(h - 1)
    maps = np.zeros((n, 2, 3), np.float32)
    for s in range(n):
        u0, u1 = u[s]
        m = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
        if kind.startswith("flip"):
            if kind != "flip_vertical" and u0 < 0.5:
                m[0] = [-1, 0, w - 1]
            if (kind == "flip_vertical" and u0 < 0.5) or (kind == "flip_both" and u1 < 0.5):
                m[1] = [0, -1, h - 1]
        elif kind == "rotate":
            angle = f32(6.28318530717958647692) * (f32(low0) + (f32(high0) - f32(low0)) * u0)
            c, sn = np.cos(angle), np.sin(angle)
            m[0] = [c, -sn, cx - c * cx + sn * cy]
            m[1] = [sn, c, cy - sn * cx - c * cy]
        elif kind.startswith("zoom"):
            zy = f32(1) + f32(low0) + (f32(high0) - f32(low0)) * u0
            zx = zy if kind == "zoom_uniform" else f32(1) + f32(low1) + (f32(high1) - f32(low1)) * u1
            m[0] = [zx, 0, cx - zx * cx]
            m[1] = [0, zy, cy - zy * cy]
        else:  # translate
            m[1, 2] = -f32(h) * (f32(low0) + (f32(high0) - f32(low0)) * u0)
            m[0, 2] = -f32(w) * (f32(low1) + (f32(high1) - f32(low1)) * u1)
        maps[s] = m
    ys, xs = np.meshgrid(np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij")
    points = np.stack([xs, ys, np.ones_like(xs)], axis=-1)  # [h, w, 3]
    source = np.einsum("hwk,njk->nhwj", points, maps)  # [n, h, w, 2]: (x', y')
    grid = torch.from_numpy(np.stack([(2 * source[..., 0] + 1) / w - 1,
                                      (2 * source[..., 1] + 1) / h - 1], axis=-1))
    image = x.permute(0, 3, 1, 2) - (fill_value if fill == "constant" else 0.0)
    out = F.grid_sample(image, grid, mode="nearest" if nearest else "bilinear",
                        padding_mode={"reflect": "reflection", "nearest": "border",
                                      "constant": "zeros"}[fill], align_corners=False)
    out = out + (fill_value if fill == "constant" else 0.0)
    return out.permute(0, 2, 3, 1)


# ---- the cases ----------------------------------------------------------------------------------
# weights: (keras3 group, legacy top-level group, layer name, [(var, shape)]);
# graphc: how a Keras-layout weight maps to graphc's saved layout.

def hwio(a):
    return a.transpose(3, 2, 0, 1)


def dw(a):
    kh, kw, c, m = a.shape
    return a.transpose(2, 3, 0, 1).reshape(c * m, 1, kh, kw)


def flat_rows(c, h, w):
    def f(a):
        out = np.empty_like(a)
        for ci in range(c):
            for hi in range(h):
                for wi in range(w):
                    out[(ci * h + hi) * w + wi] = a[(hi * w + wi) * c + ci]
        return out
    return f


def k3_cnn_forward(x, P, S, step):
    h = F.pad(x, (0, 0, 1, 1, 1, 1))  # ZeroPadding2D(1) on NHWC
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"]))
    h = max_pool(h, (2, 2), (2, 2))
    h = conv(h, P["conv2d_1/kernel"], P["conv2d_1/bias"], strides=(2, 2), padding="same")
    h = BN(P, S, "batch_normalization")(h)
    h = torch.clamp(h, 0, 6)
    # graphc draws dropout's mask over its own (channels-first) element order: element i of
    # the flattened (C, H, W) vector, step t of the run.
    n, hh, ww, c = h.shape
    h = dropout(h.permute(0, 3, 1, 2).reshape(n, -1), 0.25, 0, step)
    h = h.reshape(n, c, hh, ww).permute(0, 2, 3, 1).reshape(n, -1)  # Keras's Flatten order
    return h @ P["dense/kernel"] + P["dense/bias"]  # logits; softmax is in the loss


def tf2_seq_forward(x, P, S, step):
    h = torch.tanh(conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same", dilation=(2, 2)))
    h = avg_pool(h, (2, 2), (2, 2), padding="same")
    h = depthwise(h, P["depthwise_conv2d/depthwise_kernel"], P["depthwise_conv2d/bias"], padding="same")
    h = h.mean(dim=(1, 2))
    return h @ P["dense/kernel"] + P["dense/bias"]


def k3_residual_forward(x, P, S, step):
    hidden = torch.relu(x @ P["hidden/kernel"] + P["hidden/bias"])
    frozen = torch.tanh(hidden @ P["frozen/kernel"] + P["frozen/bias"])
    gate = torch.sigmoid(hidden @ P["gate/kernel"] + P["gate/bias"])
    h = torch.cat([hidden + frozen, gate], dim=-1)
    return h @ P["logits/kernel"] + P["logits/bias"]


def tf2_shared_nested_forward(x, P, S, step):
    s = lambda t: torch.tanh(t @ P["shared/kernel"] + P["shared/bias"])  # noqa: E731
    h = s(s(x))
    h = torch.relu(h @ P["dense_a/kernel"] + P["dense_a/bias"])
    return h @ P["dense_b/kernel"] + P["dense_b/bias"]


def k3_seq_frozen_bn_forward(x, P, S, step):
    h = x.reshape(x.shape[0], 4, 4, 1)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    h = BN(P, S, "batch_normalization", training=False)(h)
    h = max_pool(h, (3, 3), (2, 2), padding="same")
    h = h.amax(dim=(1, 2))
    return h @ P["dense/kernel"] + P["dense/bias"]


# ---- recurrent layers: PyTorch's own cells (torch.lstm_cell / gru_cell / rnn_tanh_cell) where
# the Keras cell is PyTorch's, the textbook recurrence where it is not (hard_sigmoid gates,
# GRU with reset_after = False) -------------------------------------------------------------

def hard_sigmoid_k3(x):
    return F.hardsigmoid(x)  # relu6(x + 3) / 6, Keras 3's


def hard_sigmoid_tf2(x):
    return torch.clamp(0.2 * x + 0.5, 0.0, 1.0)


def run_steps(x, go_backwards, return_sequences, input_order, step, state, mask=None):
    """Keras's RNN loop over x (batch, steps, features); step(x_t, state) -> (h, state). With
    `mask` (batch, steps) of booleans, a masked step keeps the previous output and states
    (Keras's masked RNN, zero_output_for_mask false)."""
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outs = []
    h_prev = None
    for t in steps:
        h, new_state = step(x[:, t], state)
        if mask is not None:
            m = mask[:, t:t + 1]
            h_prev = torch.zeros_like(h) if h_prev is None else h_prev
            h = torch.where(m, h, h_prev)
            new_state = (tuple(torch.where(m, a, b) for a, b in zip(new_state, state))
                         if isinstance(new_state, tuple) else torch.where(m, new_state, state))
        state, h_prev = new_state, h
        outs.append(h)
    if not return_sequences:
        return outs[-1]
    if go_backwards and input_order:
        outs = outs[::-1]
    return torch.stack(outs, dim=1)


def lstm(x, P, name, units, gate=None, go_backwards=False, return_sequences=False, input_order=False,
         mask=None, state_keep=None):
    """Keras's LSTM; `state_keep` (batch, units): recurrent_dropout's mask (0 or 1 / (1 -
    rate)) on the state before the recurrent kernel, the same at every step."""
    k, rk, b = P[name + "/kernel"], P[name + "/recurrent_kernel"], P[name + "/bias"]
    zeros = torch.zeros(x.shape[0], units)

    def step(xt, state):
        h, c = state
        if state_keep is not None:
            h = h * state_keep
        if gate is None:  # Keras's LSTM is PyTorch's (gates i, f, c, o = i, f, g, o)
            h, c = torch.lstm_cell(xt, (h, c), k.t(), rk.t(), b, torch.zeros_like(b))
            return h, (h, c)
        z = xt @ k + h @ rk + b
        i, f, g, o = z.split(units, dim=1)
        c = gate(f) * c + gate(i) * torch.tanh(g)
        h = gate(o) * torch.tanh(c)
        return h, (h, c)
    return run_steps(x, go_backwards, return_sequences, input_order, step, (zeros, zeros), mask)


def gru_torch_order(a, units):
    """Keras's gate blocks (z, r, h) -> PyTorch's (r, z, n), along the last axis."""
    z, r, h = a.split(units, dim=-1)
    return torch.cat([r, z, h], dim=-1)


def gru(x, P, name, units, reset_after=True, gate=None, go_backwards=False, return_sequences=False,
        input_order=False, mask=None):
    k, rk, b = P[name + "/kernel"], P[name + "/recurrent_kernel"], P[name + "/bias"]

    def step(xt, h):
        if reset_after and gate is None:  # PyTorch's GRU
            h = torch.gru_cell(xt, h, gru_torch_order(k, units).t(), gru_torch_order(rk, units).t(),
                               gru_torch_order(b[0], units), gru_torch_order(b[1], units))
            return h, h
        g = gate or torch.sigmoid
        xz, xr, xh = (xt @ k + (b[0] if reset_after else b)).split(units, dim=1)
        uz, ur, uh = rk.split(units, dim=1)
        z = g(xz + h @ uz + (b[1][:units] if reset_after else 0))
        r = g(xr + h @ ur + (b[1][units:2 * units] if reset_after else 0))
        if reset_after:
            n = torch.tanh(xh + r * (h @ uh + b[1][2 * units:]))
        else:
            n = torch.tanh(xh + (r * h) @ uh)
        h = z * h + (1 - z) * n
        return h, h
    return run_steps(x, go_backwards, return_sequences, input_order, step,
                     torch.zeros(x.shape[0], units), mask)


def simple_rnn(x, P, name, units, go_backwards=False, return_sequences=False, input_order=False,
               state_keep=None):
    k, rk, b = P[name + "/kernel"], P[name + "/recurrent_kernel"], P[name + "/bias"]

    def step(xt, h):
        h = torch.rnn_tanh_cell(xt, h if state_keep is None else h * state_keep, k.t(), rk.t(), b,
                                torch.zeros_like(b))
        return h, h
    return run_steps(x, go_backwards, return_sequences, input_order, step, torch.zeros(x.shape[0], units))


def step_dropout(x, rate, op_id, step):
    """A recurrent layer's `dropout`: one keep per sample and feature for every step."""
    n, _, f = x.shape
    keep = keep_draws(n * f, rate, op_id, step).reshape(n, 1, f)
    return torch.where(keep, x / (1 - rate), torch.zeros_like(x))


def state_mask(n, units, rate, op_id, step):
    """A recurrent layer's `recurrent_dropout` mask: 0 or 1 / (1 - rate) per sample and unit."""
    keep = keep_draws(n * units, rate, op_id, step).reshape(n, units)
    return torch.where(keep, torch.full((n, units), 1 / (1 - rate)), torch.zeros(n, units))


def tf2_rnn_dropout_forward(x, P, S, step):
    n = x.shape[0]
    h = lstm(step_dropout(x, 0.2, 0, step), P, "lstm/lstm_cell", 5, return_sequences=True,
             state_keep=state_mask(n, 5, 0.3, 1, step))
    h = simple_rnn(step_dropout(h, 0.1, 2, step), P, "simple_rnn/simple_rnn_cell", 4,
                   state_keep=state_mask(n, 4, 0.2, 3, step))
    return h @ P["dense/kernel"] + P["dense/bias"]


def k3_rnn_dropout_forward(x, P, S, step):
    mask = x != 0
    e = F.embedding(x.long(), P["embedding/embeddings"])
    fw = gru(step_dropout(e, 0.25, 0, step), P, "fw", 4, mask=mask)
    bw = gru(step_dropout(e, 0.25, 1, step), P, "bw", 4, go_backwards=True, mask=mask)
    return torch.cat([fw, bw], dim=1) @ P["dense/kernel"] + P["dense/bias"]


def k3_lstm_forward(x, P, S, step):
    h = lstm(x, P, "lstm", 8, return_sequences=True)
    h = lstm(h, P, "lstm_1", 6, gate=hard_sigmoid_k3, go_backwards=True)
    return h @ P["dense/kernel"] + P["dense/bias"]


def tf2_gru_bidir_forward(x, P, S, step):
    fw = gru(x, P, "bidirectional/forward_gru/gru_cell", 5, return_sequences=True)
    bw = gru(x, P, "bidirectional/backward_gru/gru_cell", 5, return_sequences=True, go_backwards=True,
             input_order=True)
    h = torch.cat([fw, bw], dim=-1)
    h = F.gelu(h @ P["time_distributed/kernel"] + P["time_distributed/bias"])
    h = gru(h, P, "gru_1/gru_cell", 4, reset_after=False, gate=hard_sigmoid_tf2)
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


def k3_embedding_mix_forward(x, P, S, step):
    e = F.embedding(x.long(), P["embedding/embeddings"])
    a = F.gelu(e @ P["a/kernel"] + P["a/bias"])
    c = F.silu(e @ P["c/kernel"] + P["c/bias"])
    h = (a * c + (a - c) + a) / 3
    h = F.leaky_relu(F.softsign(h), 0.3)
    h = F.elu(h, 0.5)
    h = simple_rnn(h, P, "fw", 5) + simple_rnn(h, P, "bw", 5, go_backwards=True)
    h = F.softplus(F.selu(h @ P["d/kernel"] + P["d/bias"]))
    h = h * F.hardsigmoid(h)  # hard_silu
    h = F.leaky_relu(hard_sigmoid_k3(h @ P["e/kernel"] + P["e/bias"]), 0.2)
    return h @ P["logits/kernel"] + P["logits/bias"]


def k3_conv1d_forward(x, P, S, step):
    h = torch.relu(conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="causal", dilation=2))
    h = torch.tanh(conv1d(h, P["conv1d_1/kernel"], P["conv1d_1/bias"], stride=2, padding="same", groups=2))
    h = BN(P, S, "batch_normalization")(h)
    h = pool1d(max_pool, h, 2, 2)
    h = pool1d(avg_pool, h, 3, 1, padding="same")
    h = conv1d(h, P["conv1d_2/kernel"], None)
    d = torch.relu(h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"])
    h = torch.cat([h.mean(dim=1), h.amax(dim=1), d], dim=-1)
    return h @ P["logits/kernel"] + P["logits/bias"]


def k3_conv3d_forward(x, P, S, step):
    h = torch.relu(conv3d(x, P["conv3d/kernel"], P["conv3d/bias"], padding="same"))
    h = BN(P, S, "batch_normalization")(h)
    h = pool3d(h, (2, 2, 2), (2, 2, 2))
    c1 = torch.tanh(conv3d(h, P["conv3d_1/kernel"], P["conv3d_1/bias"], strides=(1, 2, 2),
                           padding="same", groups=2))
    a = pool3d(c1, (2, 2, 2), (1, 1, 1), padding="same", maximum=False)
    c2 = conv3d(c1 + a, P["conv3d_2/kernel"], None)
    d = torch.relu(c2.reshape(c2.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"])
    h = torch.cat([c2.mean(dim=(1, 2, 3)), a.amax(dim=(1, 2, 3)), d], dim=-1)
    return h @ P["logits/kernel"] + P["logits/bias"]


def conv_transpose3d(x, k, b, strides=(1, 1, 1), padding="valid"):
    """Keras Conv3DTranspose as TensorFlow defines it: the gradient, with respect to its input,
    of Keras's Conv3D whose kernel is k (D, H, W, filters, C), for an input of Keras's output
    size."""
    n = x.shape[0]
    size = [deconv_length(n_, k_, s_, 1, padding, None)
            for n_, k_, s_ in zip(x.shape[1:4], k.shape[:3], strides)]
    z = torch.zeros(n, *size, k.shape[3], requires_grad=True)
    y = conv3d(z, k, None, strides, padding)
    assert y.shape == x.shape, (y.shape, x.shape)
    (g,) = torch.autograd.grad(y, z, grad_outputs=x, create_graph=True)
    return g if b is None else g + b


def k3_unet3d_forward(x, P, S, step):
    skip = torch.relu(conv3d(x, P["conv3d/kernel"], P["conv3d/bias"], padding="same"))
    p = pool3d(skip, (2, 2, 2), (2, 2, 2))
    m = torch.relu(conv3d(p, P["conv3d_1/kernel"], P["conv3d_1/bias"], padding="same"))
    u = conv_transpose3d(m, P["conv3d_transpose/kernel"], P["conv3d_transpose/bias"], (2, 2, 2))
    v = p.repeat_interleave(2, 1).repeat_interleave(2, 2).repeat_interleave(2, 3)
    h = torch.cat([skip, u, v], dim=-1)
    h = F.pad(h, (0, 0, 0, 2, 1, 1, 1, 0))  # ZeroPadding3D(((1, 0), (1, 1), (0, 2))) on NDHWC
    h = torch.tanh(conv_transpose3d(h, P["conv3d_transpose_1/kernel"],
                                    P["conv3d_transpose_1/bias"], (2, 1, 1), "same"))
    h = h[:, 2:-3, 1:-1, 2:]  # Cropping3D(((2, 3), (1, 1), (2, 0)))
    return h.mean(dim=(1, 2, 3)) @ P["logits/kernel"] + P["logits/bias"]


def transposed3d_kernel(a):
    """Keras Conv3DTranspose kernel (D, H, W, filters, C) -> graphc's (C, filters, D, H, W)."""
    return a.transpose(4, 3, 0, 1, 2)


def conv3d_kernel(a):
    """Keras Conv3D kernel (D, H, W, I, O) -> graphc's (O, I, D, H, W)."""
    return a.transpose(4, 3, 0, 1, 2)


def tf2_seq1d_forward(x, P, S, step):
    h = torch.relu(conv1d(x, P["conv1d/kernel"], P["conv1d/bias"]))
    h = F.layer_norm(h, (6,), P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
    h = h.permute(0, 2, 1)
    h = conv1d(h, P["conv1d_1/kernel"], P["conv1d_1/bias"], stride=2)
    h = F.layer_norm(h.amax(dim=1), (4,), P["layer_normalization_1/gamma"], None, eps=1e-2)
    return h @ P["dense/kernel"] + P["dense/bias"]


def k3_transpose_forward(x, P, S, step):
    skip = torch.relu(conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    h = max_pool(skip, (2, 2), (2, 2))
    h = torch.relu(separable(h, P["separable_conv2d/depthwise_kernel"],
                             P["separable_conv2d/pointwise_kernel"], P["separable_conv2d/bias"],
                             padding="same"))
    h = torch.relu(conv_transpose(h, P["conv2d_transpose/kernel"], P["conv2d_transpose/bias"],
                                  strides=(2, 2), padding="same"))
    h = torch.cat([skip, h], dim=-1)
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
    h = h.permute(0, 2, 1, 3)
    h = conv_transpose(h, P["conv2d_transpose_1/kernel"], P["conv2d_transpose_1/bias"], strides=(2, 2))
    h = separable(h, P["separable_conv2d_1/depthwise_kernel"], P["separable_conv2d_1/pointwise_kernel"],
                  None, strides=(2, 2))
    h = torch.tanh(conv_transpose(h, P["conv2d_transpose_2/kernel"], P["conv2d_transpose_2/bias"],
                                  padding="same", dilation=(2, 2)))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def tf2_upsample_forward(x, P, S, step):
    h = torch.relu(conv_transpose(x, P["conv2d_transpose/kernel"], P["conv2d_transpose/bias"],
                                  strides=(2, 2), output_padding=(1, 1)))
    h = separable(h, P["separable_conv2d/depthwise_kernel"], P["separable_conv2d/pointwise_kernel"],
                  P["separable_conv2d/bias"], strides=(2, 2))
    h = conv_transpose(h, P["conv2d_transpose_1/kernel"], None, strides=(2, 2), padding="same",
                       output_padding=(1, 1))
    return h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"]


def conv1d_kernel(a):
    """Keras Conv1D kernel (K, I, O) -> graphc's (O, I, 1, K)."""
    return a.transpose(2, 1, 0)[:, :, None, :]


def k3_conv1d_lstm_forward(x, P, S, step):
    h = torch.relu(conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same"))
    h = pool1d(max_pool, h, 2, 2)
    h = lstm(h, P, "lstm", 5)
    return h @ P["dense/kernel"] + P["dense/bias"]


CASES = {
    "k3_cnn": dict(
        layout="keras3", input=(8, 8, 3), classes=5, loss="sparse", opt=("sgd", 0.05, 0.0),
        flags=["--loss=sparse_categorical_crossentropy"], forward=k3_cnn_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 4, 6)), ("bias", (6,))]),
                 ("layers/batch_normalization", None, "batch_normalization",
                  [("gamma", (6,)), ("beta", (6,)), ("moving_mean", (6,)), ("moving_variance", (6,))]),
                 ("layers/dense", None, "dense", [("kernel", (24, 5)), ("bias", (5,))])],
        empty=["layers/input_layer", "layers/zero_padding2d", "layers/max_pooling2d",
               "layers/activation", "layers/flatten", "layers/dropout", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio, "dense/kernel": flat_rows(6, 2, 2)}),
    "tf2_seq": dict(
        layout="legacy", input=(6, 6, 2), classes=4, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_seq_forward,
        layer_names=["conv2d", "average_pooling2d", "depthwise_conv2d", "global_average_pooling2d",
                     "dense", "activation"],
        weights=[(None, "conv2d", "conv2d", [("kernel", (2, 2, 2, 3)), ("bias", (3,))]),
                 (None, "depthwise_conv2d", "depthwise_conv2d",
                  [("depthwise_kernel", (3, 3, 3, 2)), ("bias", (6,))]),
                 (None, "dense", "dense", [("kernel", (6, 4)), ("bias", (4,))])],
        graphc={"conv2d/kernel": hwio, "depthwise_conv2d/depthwise_kernel": dw}),
    "k3_residual": dict(
        layout="keras3", input=(12,), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_residual_forward,
        # Keras 3 names the groups by class, not by layer name: hidden, frozen and gate are the
        # first three Dense layers, the nested Sequential "head" is "sequential".
        weights=[("layers/dense", None, "hidden", [("kernel", (12, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "frozen", [("kernel", (8, 8)), ("bias", (8,))]),
                 ("layers/dense_2", None, "gate", [("kernel", (8, 8)), ("bias", (8,))]),
                 ("layers/sequential/layers/dense", None, "logits", [("kernel", (16, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/add", "layers/concatenate", "layers/sequential"],
        frozen=["frozen/kernel", "frozen/bias"], graphc={}),
    "tf2_shared_nested": dict(
        layout="legacy", input=(10,), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
        forward=tf2_shared_nested_forward,
        layer_names=["input_1", "shared", "block", "probs"],
        # A nested model's group holds its layers' weights, named by their variable names.
        weights=[(None, "shared", "shared", [("kernel", (10, 10)), ("bias", (10,))]),
                 (None, "block", "dense_a", [("kernel", (10, 6)), ("bias", (6,))]),
                 (None, "block", "dense_b", [("kernel", (6, 3)), ("bias", (3,))])],
        graphc={}),
    "k3_seq_frozen_bn": dict(
        layout="keras3", input=(16,), classes=1, loss="binary", opt=("momentum", 0.1, 0.9),
        flags=[], forward=k3_seq_frozen_bn_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 1, 2)), ("bias", (2,))]),
                 ("layers/batch_normalization", None, "batch_normalization",
                  [("gamma", (2,)), ("beta", (2,)), ("moving_mean", (2,)), ("moving_variance", (2,))]),
                 ("layers/dense", None, "dense", [("kernel", (2, 1)), ("bias", (1,))])],
        frozen=["batch_normalization/gamma", "batch_normalization/beta"],
        graphc={"conv2d/kernel": hwio}),
    "k3_lstm": dict(
        layout="keras3", input=(6, 5), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_lstm_forward,
        # Keras 3 keeps a recurrent layer's variables in its cell.
        weights=[("layers/lstm/cell", None, "lstm", [("kernel", (5, 32)), ("recurrent_kernel", (8, 32)), ("bias", (32,))]),
                 ("layers/lstm_1/cell", None, "lstm_1", [("kernel", (8, 24)), ("recurrent_kernel", (6, 24)), ("bias", (24,))]),
                 ("layers/dense", None, "dense", [("kernel", (6, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/lstm", "layers/lstm_1", "optimizer"], graphc={}),
    "tf2_gru_bidir": dict(
        layout="legacy", input=(5, 4), classes=3, loss="sparse", opt=("momentum", 0.1, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.1", "--momentum=0.9"],
        forward=tf2_gru_bidir_forward,
        layer_names=["input_1", "bidirectional", "time_distributed", "gru_1", "dense_1"],
        # tf.keras 2 names a cell's variables <layer>/<cell>/<var>, a Bidirectional's halves
        # forward_<layer> and backward_<layer>; TimeDistributed's are the wrapper's own.
        weights=[(None, "bidirectional", "bidirectional/forward_gru/gru_cell",
                  [("kernel", (4, 15)), ("recurrent_kernel", (5, 15)), ("bias", (2, 15))]),
                 (None, "bidirectional", "bidirectional/backward_gru/gru_cell",
                  [("kernel", (4, 15)), ("recurrent_kernel", (5, 15)), ("bias", (2, 15))]),
                 (None, "time_distributed", "time_distributed", [("kernel", (10, 6)), ("bias", (6,))]),
                 (None, "gru_1", "gru_1/gru_cell", [("kernel", (6, 12)), ("recurrent_kernel", (4, 12)), ("bias", (12,))]),
                 (None, "dense_1", "dense_1", [("kernel", (4, 3)), ("bias", (3,))])],
        saved={"bidirectional/forward_gru/gru_cell/": "bidirectional/forward_gru/",
               "bidirectional/backward_gru/gru_cell/": "bidirectional/backward_gru/",
               "time_distributed/": "time_distributed/dense/", "gru_1/gru_cell/": "gru_1/"},
        graphc={}),
    "k3_embedding_mix": dict(
        layout="keras3", input=(7,), ids=11, classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=[], forward=k3_embedding_mix_forward,
        weights=[("layers/embedding", None, "embedding", [("embeddings", (11, 6))]),
                 ("layers/dense", None, "a", [("kernel", (6, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "c", [("kernel", (6, 8)), ("bias", (8,))]),
                 ("layers/bidirectional/forward_layer/cell", None, "fw",
                  [("kernel", (8, 5)), ("recurrent_kernel", (5, 5)), ("bias", (5,))]),
                 ("layers/bidirectional/backward_layer/cell", None, "bw",
                  [("kernel", (8, 5)), ("recurrent_kernel", (5, 5)), ("bias", (5,))]),
                 ("layers/dense_2", None, "d", [("kernel", (5, 8)), ("bias", (8,))]),
                 ("layers/dense_3", None, "e", [("kernel", (8, 6)), ("bias", (6,))]),
                 ("layers/dense_4", None, "logits", [("kernel", (6, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/bidirectional", "optimizer"],
        saved={"fw/": "bidirectional/forward_simple_rnn/", "bw/": "bidirectional/backward_simple_rnn/"},
        graphc={}),
}
CASES.update({
    "k3_unet3d": dict(
        layout="keras3", input=(4, 6, 6, 2), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_unet3d_forward, volume=True,
        weights=[("layers/conv3d", None, "conv3d", [("kernel", (3, 3, 3, 2, 4)), ("bias", (4,))]),
                 ("layers/conv3d_1", None, "conv3d_1", [("kernel", (1, 3, 3, 4, 8)), ("bias", (8,))]),
                 ("layers/conv3d_transpose", None, "conv3d_transpose",
                  [("kernel", (2, 2, 2, 4, 8)), ("bias", (4,))]),
                 ("layers/conv3d_transpose_1", None, "conv3d_transpose_1",
                  [("kernel", (3, 3, 3, 3, 12)), ("bias", (3,))]),
                 ("layers/dense", None, "logits", [("kernel", (3, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/max_pooling3d", "layers/up_sampling3d",
               "layers/concatenate", "layers/zero_padding3d", "layers/cropping3d",
               "layers/global_average_pooling3d", "optimizer"],
        graphc={"conv3d/kernel": conv3d_kernel, "conv3d_1/kernel": conv3d_kernel,
                "conv3d_transpose/kernel": transposed3d_kernel,
                "conv3d_transpose_1/kernel": transposed3d_kernel}),
    "k3_conv3d": dict(
        layout="keras3", input=(4, 6, 6, 2), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_conv3d_forward, volume=True,
        weights=[("layers/conv3d", None, "conv3d", [("kernel", (3, 3, 3, 2, 4)), ("bias", (4,))]),
                 ("layers/batch_normalization", None, "batch_normalization",
                  [("gamma", (4,)), ("beta", (4,)), ("moving_mean", (4,)), ("moving_variance", (4,))]),
                 ("layers/conv3d_1", None, "conv3d_1", [("kernel", (2, 3, 3, 2, 6)), ("bias", (6,))]),
                 ("layers/conv3d_2", None, "conv3d_2", [("kernel", (1, 2, 2, 6, 5))]),
                 ("layers/dense", None, "dense", [("kernel", (10, 4)), ("bias", (4,))]),
                 ("layers/dense_1", None, "logits", [("kernel", (15, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/max_pooling3d", "layers/average_pooling3d",
               "layers/add", "layers/global_average_pooling3d", "layers/global_max_pooling3d",
               "layers/flatten", "layers/concatenate", "optimizer"],
        # Flatten of a volume keeps Keras's (D, H, W, C) order: the Dense reads it as it is.
        graphc={"conv3d/kernel": conv3d_kernel, "conv3d_1/kernel": conv3d_kernel,
                "conv3d_2/kernel": conv3d_kernel}),
    "k3_conv1d": dict(
        layout="keras3", input=(16, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_conv1d_forward,
        weights=[("layers/conv1d", None, "conv1d", [("kernel", (3, 3, 4)), ("bias", (4,))]),
                 ("layers/conv1d_1", None, "conv1d_1", [("kernel", (3, 2, 6)), ("bias", (6,))]),
                 ("layers/batch_normalization", None, "batch_normalization",
                  [("gamma", (6,)), ("beta", (6,)), ("moving_mean", (6,)), ("moving_variance", (6,))]),
                 ("layers/conv1d_2", None, "conv1d_2", [("kernel", (2, 6, 5))]),
                 ("layers/dense", None, "dense", [("kernel", (15, 4)), ("bias", (4,))]),
                 ("layers/dense_1", None, "logits", [("kernel", (14, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/max_pooling1d", "layers/average_pooling1d",
               "layers/global_average_pooling1d", "layers/global_max_pooling1d", "layers/flatten",
               "layers/concatenate", "optimizer"],
        # The Dense after Flatten of the (3, 5) feature map reads graphc's (C, L) order.
        graphc={"conv1d/kernel": conv1d_kernel, "conv1d_1/kernel": conv1d_kernel,
                "conv1d_2/kernel": conv1d_kernel, "dense/kernel": flat_rows(5, 1, 3)}),
    "tf2_seq1d": dict(
        layout="legacy", input=(10, 4), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_seq1d_forward,
        layer_names=["conv1d", "layer_normalization", "permute", "conv1d_1", "global_max_pooling1d",
                     "layer_normalization_1", "dense", "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 4, 6)), ("bias", (6,))]),
                 (None, "layer_normalization", "layer_normalization", [("gamma", (6,)), ("beta", (6,))]),
                 (None, "conv1d_1", "conv1d_1", [("kernel", (2, 8, 4)), ("bias", (4,))]),
                 (None, "layer_normalization_1", "layer_normalization_1", [("gamma", (4,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        graphc={"conv1d/kernel": conv1d_kernel, "conv1d_1/kernel": conv1d_kernel}),
    "k3_transpose": dict(
        layout="keras3", input=(6, 6, 3), classes=4, loss="sparse", opt=("sgd", 0.05, 0.0),
        flags=["--loss=sparse_categorical_crossentropy"], forward=k3_transpose_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/separable_conv2d", None, "separable_conv2d",
                  [("depthwise_kernel", (3, 3, 4, 2)), ("pointwise_kernel", (1, 1, 8, 6)), ("bias", (6,))]),
                 ("layers/conv2d_transpose", None, "conv2d_transpose",
                  [("kernel", (3, 3, 4, 6)), ("bias", (4,))]),
                 ("layers/layer_normalization", None, "layer_normalization",
                  [("gamma", (8,)), ("beta", (8,))]),
                 ("layers/conv2d_transpose_1", None, "conv2d_transpose_1",
                  [("kernel", (2, 2, 3, 8)), ("bias", (3,))]),
                 ("layers/separable_conv2d_1", None, "separable_conv2d_1",
                  [("depthwise_kernel", (3, 3, 3, 1)), ("pointwise_kernel", (1, 1, 3, 5))]),
                 ("layers/conv2d_transpose_2", None, "conv2d_transpose_2",
                  [("kernel", (3, 3, 4, 5)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 4)), ("bias", (4,))])],
        empty=["layers/input_layer", "layers/max_pooling2d", "layers/concatenate", "layers/permute",
               "layers/global_average_pooling2d", "optimizer"],
        # Transposed-convolution kernels (H, W, filters, C) read as HWIO: graphc's [C, filters, H, W].
        graphc={"conv2d/kernel": hwio, "separable_conv2d/depthwise_kernel": dw,
                "separable_conv2d/pointwise_kernel": hwio, "conv2d_transpose/kernel": hwio,
                "conv2d_transpose_1/kernel": hwio, "separable_conv2d_1/depthwise_kernel": dw,
                "separable_conv2d_1/pointwise_kernel": hwio, "conv2d_transpose_2/kernel": hwio}),
    "tf2_upsample": dict(
        layout="legacy", input=(4, 4, 2), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=adam", "--lr=0.01"],
        forward=tf2_upsample_forward,
        layer_names=["conv2d_transpose", "separable_conv2d", "conv2d_transpose_1", "flatten",
                     "dense", "activation"],
        weights=[(None, "conv2d_transpose", "conv2d_transpose", [("kernel", (3, 3, 3, 2)), ("bias", (3,))]),
                 (None, "separable_conv2d", "separable_conv2d",
                  [("depthwise_kernel", (2, 2, 3, 1)), ("pointwise_kernel", (1, 1, 3, 4)), ("bias", (4,))]),
                 (None, "conv2d_transpose_1", "conv2d_transpose_1", [("kernel", (4, 4, 2, 4))]),
                 (None, "dense", "dense", [("kernel", (162, 3)), ("bias", (3,))])],
        graphc={"conv2d_transpose/kernel": hwio, "separable_conv2d/depthwise_kernel": dw,
                "separable_conv2d/pointwise_kernel": hwio, "conv2d_transpose_1/kernel": hwio,
                "dense/kernel": flat_rows(2, 9, 9)}),
})
CASES["k3_conv1d_lstm"] = dict(
    layout="keras3", input=(10, 3), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
    flags=[], forward=k3_conv1d_lstm_forward,
    weights=[("layers/conv1d", None, "conv1d", [("kernel", (3, 3, 4)), ("bias", (4,))]),
             ("layers/lstm/cell", None, "lstm", [("kernel", (4, 20)), ("recurrent_kernel", (5, 20)), ("bias", (20,))]),
             ("layers/dense", None, "dense", [("kernel", (5, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/max_pooling1d", "layers/lstm", "optimizer"],
    graphc={"conv1d/kernel": conv1d_kernel})


# ---- Cropping, ZeroPadding1D, UpSampling: PyTorch indexing, F.pad and repeat_interleave ------

def k3_crop2d_forward(x, P, S, step):
    h = x[:, 1:, 2:-1, :]  # Cropping2D(((1, 0), (2, 1))) on NHWC
    c = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    h = c[:, 1:-1, 1:-1, :] + torch.tanh(conv(c, P["conv2d_1/kernel"], P["conv2d_1/bias"]))
    return h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"]  # Keras's Flatten order


def tf2_crop1d_forward(x, P, S, step):
    h = torch.relu(conv1d(x[:, 1:-2], P["conv1d/kernel"], P["conv1d/bias"]))
    h = h[:, 2:-1]
    return h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"]


def pad1d(x, left, right):
    """ZeroPadding1D on (N, L, C)."""
    return F.pad(x, (0, 0, left, right))


def tf2_pad1d_forward(x, P, S, step):
    h = torch.relu(conv1d(pad1d(x, 2, 1), P["conv1d/kernel"], P["conv1d/bias"]))
    h = pool1d(max_pool, pad1d(h, 1, 0), 2, 2)
    h = pool1d(avg_pool, pad1d(h, 1, 1), 2, 2)
    h = torch.tanh(conv1d(pad1d(h, 1, 2), P["conv1d_1/kernel"], P["conv1d_1/bias"], padding="causal",
                          dilation=2))
    h = conv1d(pad1d(h, 1, 1), P["conv1d_2/kernel"], P["conv1d_2/bias"], stride=2, padding="same")
    return h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"]


def k3_upsample2d_forward(x, P, S, step):
    h = torch.relu(conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    h = h.repeat_interleave(2, dim=1).repeat_interleave(3, dim=2)  # UpSampling2D((2, 3)), nearest
    h = conv(h, P["conv2d_1/kernel"], P["conv2d_1/bias"], strides=(2, 2))
    h = h.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2)
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def group_norm(h, groups, gamma, beta, epsilon):
    """Keras 3's GroupNormalization over the channels of NHWC h: each sample's groups of
    C / groups channels normalised over their positions, then gamma and beta per channel."""
    n, c = h.shape[0], h.shape[-1]
    g = h.reshape(n, -1, groups, c // groups)
    mean = g.mean(dim=(1, 3), keepdim=True)
    var = ((g - mean) ** 2).mean(dim=(1, 3), keepdim=True)
    out = ((g - mean) / torch.sqrt(var + epsilon)).reshape(h.shape)
    out = out * gamma if gamma is not None else out
    return out + beta if beta is not None else out


def bilinear(h, size):
    """UpSampling2D(interpolation="bilinear"): tf.image.resize's half-pixel centres, which is
    PyTorch's align_corners=False."""
    up = F.interpolate(h.permute(0, 3, 1, 2), scale_factor=size, mode="bilinear",
                       align_corners=False)
    return up.permute(0, 2, 3, 1)


def k3_group_norm_bilinear_forward(x, P, S, step):
    h = conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same")
    h = group_norm(h, 4, P["group_normalization/gamma"], P["group_normalization/beta"], 1e-3)
    h = bilinear(h, (2, 3))
    h = torch.relu(conv(h, P["conv2d_1/kernel"], P["conv2d_1/bias"], strides=(2, 2)))
    h = group_norm(h, 2, P["group_normalization_1/gamma"], None, 1e-5)
    h = bilinear(h, (2, 2))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def k3_rescale_max_forward(x, P, S, step):
    r = 0.5 * x - 0.25
    a = torch.relu(conv(r, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    b = torch.tanh(conv(a, P["conv2d_1/kernel"], P["conv2d_1/bias"], padding="same"))
    c = conv(r, P["conv2d_2/kernel"], P["conv2d_2/bias"])
    h = torch.minimum(torch.maximum(b, c), a)
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def k3_normalization_forward(x, P, S, step):
    # Keras: (x - mean) / max(sqrt(variance), 1e-7); inverted, mean + x * max(sqrt(variance), 1e-7).
    def deviation(v):
        return torch.clamp(torch.sqrt(torch.as_tensor(v)), min=1e-7)
    h = (x - S["normalization/mean"]) / deviation(S["normalization/variance"])
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same")).mean(dim=(1, 2))
    h = (h - torch.tensor([0.1, 0.2, 0.3, 0.4])) / deviation([1.0, 2.0, 0.5, 4.0])
    h = 0.5 + h * deviation(4.0)
    return h @ P["dense/kernel"] + P["dense/bias"]


def tf2_upsample1d_forward(x, P, S, step):
    h = torch.relu(conv1d(x.repeat_interleave(2, dim=1), P["conv1d/kernel"], P["conv1d/bias"]))
    h = h.repeat_interleave(3, dim=1)
    return h.amax(dim=1) @ P["dense/kernel"] + P["dense/bias"]


CASES.update({
    "k3_crop2d": dict(
        layout="keras3", input=(9, 8, 3), classes=3, loss="sparse", opt=("sgd", 0.05, 0.0),
        flags=[], forward=k3_crop2d_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 4, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (72, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/cropping2d", "layers/cropping2d_1", "layers/add",
               "layers/flatten", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio, "dense/kernel": flat_rows(4, 6, 3)}),
    "tf2_crop1d": dict(
        layout="legacy", input=(12, 3), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_crop1d_forward,
        layer_names=["cropping1d", "conv1d", "cropping1d_1", "flatten", "dense", "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 3, 4)), ("bias", (4,))]),
                 (None, "dense", "dense", [("kernel", (16, 3)), ("bias", (3,))])],
        # The Dense after Flatten of the (4 steps, 4 channels) feature map reads graphc's (C, L).
        graphc={"conv1d/kernel": conv1d_kernel, "dense/kernel": flat_rows(4, 1, 4)}),
    "tf2_pad1d": dict(
        layout="legacy", input=(10, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=adam", "--lr=0.01"],
        forward=tf2_pad1d_forward,
        layer_names=["zero_padding1d", "conv1d", "zero_padding1d_1", "max_pooling1d",
                     "zero_padding1d_2", "average_pooling1d", "zero_padding1d_3", "conv1d_1",
                     "zero_padding1d_4", "conv1d_2", "flatten", "dense", "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 3, 4)), ("bias", (4,))]),
                 (None, "conv1d_1", "conv1d_1", [("kernel", (2, 4, 3)), ("bias", (3,))]),
                 (None, "conv1d_2", "conv1d_2", [("kernel", (3, 3, 2)), ("bias", (2,))]),
                 (None, "dense", "dense", [("kernel", (10, 3)), ("bias", (3,))])],
        graphc={"conv1d/kernel": conv1d_kernel, "conv1d_1/kernel": conv1d_kernel,
                "conv1d_2/kernel": conv1d_kernel, "dense/kernel": flat_rows(2, 1, 5)}),
    "k3_upsample2d": dict(
        layout="keras3", input=(3, 4, 2), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_upsample2d_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (2, 2, 2, 3)), ("bias", (3,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/up_sampling2d", "layers/up_sampling2d_1",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio}),
    "k3_rescale_max": dict(
        layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_rescale_max_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 4, 4)), ("bias", (4,))]),
                 ("layers/conv2d_2", None, "conv2d_2", [("kernel", (1, 1, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/rescaling", "layers/maximum", "layers/minimum",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio, "conv2d_2/kernel": hwio}),
    "k3_normalization": dict(
        layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_normalization_forward,
        weights=[("layers/normalization", None, "normalization",
                  [("mean", (3,)), ("variance", (3,)), ("count", ())]),
                 ("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/global_average_pooling2d", "layers/normalization_1",
               "layers/normalization_2", "optimizer"],
        # (The adapted layer's sample count is read, not used, and not saved.)
        unsaved=["normalization/count"],
        graphc={"conv2d/kernel": hwio}),
    "k3_group_norm_bilinear": dict(
        layout="keras3", input=(4, 5, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_group_norm_bilinear_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 8)), ("bias", (8,))]),
                 ("layers/group_normalization", None, "group_normalization",
                  [("gamma", (8,)), ("beta", (8,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 8, 4)), ("bias", (4,))]),
                 ("layers/group_normalization_1", None, "group_normalization_1",
                  [("gamma", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/up_sampling2d", "layers/up_sampling2d_1",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio}),
    "tf2_upsample1d": dict(
        layout="legacy", input=(5, 3), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_upsample1d_forward,
        layer_names=["up_sampling1d", "conv1d", "up_sampling1d_1", "global_max_pooling1d", "dense",
                     "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 3, 4)), ("bias", (4,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        graphc={"conv1d/kernel": conv1d_kernel}),
})
# Untrained state: BatchNormalization's moving statistics, an adapted Normalization's mean,
# variance and sample count.
def k3_noise_cnn_forward(x, P, S, step):
    # GaussianNoise(0.3): graphc's normal draws over its NCHW element order.
    n, hh, ww, c = x.shape
    h = x + 0.3 * normal_draws((n, c, hh, ww), 0, step).permute(0, 2, 3, 1)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    # SpatialDropout2D(0.25): one draw per sample and channel (draw n * C + c).
    keep = keep_draws(n * 4, 0.25, 1, step).reshape(n, 1, 1, 4)
    h = torch.where(keep, h / 0.75, torch.zeros_like(h))
    h = torch.tanh(conv(h, P["conv2d_1/kernel"], P["conv2d_1/bias"], padding="same"))
    # GaussianDropout(0.2): times 1 + sqrt(0.2 / 0.8) z.
    h = h * (1.0 + 0.5 * normal_draws((n, 4, hh, ww), 2, step).permute(0, 2, 3, 1))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def tf2_noise_seq_forward(x, P, S, step):
    n = x.shape[0]
    h = torch.relu(x @ P["dense/kernel"] + P["dense/bias"])  # (n, 5, 8)
    # SpatialDropout1D(0.3): one draw per sample and feature, shared by the 5 steps.
    keep = keep_draws(n * 8, 0.3, 0, step).reshape(n, 1, 8)
    h = torch.where(keep, h / 0.7, torch.zeros_like(h))
    h = F.selu(conv1d(h, P["conv1d/kernel"], P["conv1d/bias"]))  # (n, 3, 4)
    # Dropout(0.25, noise_shape=(None, 1, 4)) of the feature map: per sample and channel.
    keep = keep_draws(n * 4, 0.25, 1, step).reshape(n, 1, 4)
    h = torch.where(keep, h / 0.75, torch.zeros_like(h))
    # AlphaDropout(0.1), Keras's formula; graphc's mask over its [N, C, 1, L] element order.
    rate, alpha_p = 0.1, -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    keep = keep_draws(n * 12, rate, 2, step).reshape(n, 4, 3).permute(0, 2, 1)
    h = a * torch.where(keep, h, torch.full_like(h, alpha_p)) - a * alpha_p * rate
    return h.reshape(n, -1) @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES.update({
    "k3_noise_cnn": dict(
        layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_noise_cnn_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 4, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/gaussian_noise", "layers/spatial_dropout2d",
               "layers/gaussian_dropout", "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio}),
    "tf2_noise_seq": dict(
        layout="legacy", input=(5, 6), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_noise_seq_forward,
        layer_names=["dense", "spatial_dropout1d", "conv1d", "dropout", "alpha_dropout",
                     "flatten", "dense_1", "activation"],
        weights=[(None, "dense", "dense", [("kernel", (6, 8)), ("bias", (8,))]),
                 (None, "conv1d", "conv1d", [("kernel", (3, 8, 4)), ("bias", (4,))]),
                 (None, "dense_1", "dense_1", [("kernel", (12, 3)), ("bias", (3,))])],
        # The Dense after Flatten of the (3 steps, 4 channels) feature map reads graphc's (C, L).
        graphc={"conv1d/kernel": conv1d_kernel, "dense_1/kernel": flat_rows(4, 1, 3)}),
})


def k3_augment_forward(x, P, S, step):
    h = random_affine(x, 0, step, "flip_horizontal")
    h = random_affine(h, 1, step, "rotate", -0.1, 0.1)
    h = random_affine(h, 2, step, "zoom_uniform", -0.2, 0.2)
    h = random_affine(h, 3, step, "translate", -0.1, 0.1, -0.15, 0.15, fill="constant", fill_value=0.5)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def tf2_augment_forward(x, P, S, step):
    h = random_affine(x, 0, step, "flip_both")
    h = random_affine(h, 1, step, "zoom", -0.2, 0.1, 0.1, 0.3, fill="nearest", nearest=True)
    h = random_affine(h, 2, step, "rotate", -0.05, 0.1)
    h = torch.tanh(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def per_sample_uniform(n, low, high, op_id, step):
    """graph.random_uniform with one draw per sample: low + (high - low) u in float32."""
    u = uniform_draws(n, op_id, step)
    return torch.from_numpy(np.float32(low) + (np.float32(high) - np.float32(low)) * u).reshape(n, 1, 1, 1)


def crop_offsets(heights, widths, op_id, step):
    """graph.random_affine crop_offset's whole offsets below `heights` and `widths`: draws 0 and
    1 of the op's key, one pair for the whole batch (runtime/include/graphc/runtime/
    random_affine.h), floor(u * count) in float32."""
    u = uniform_draws(2, op_id, step)
    return (int(min(np.floor(u[0] * np.float32(heights)), heights - 1)),
            int(min(np.floor(u[1] * np.float32(widths)), widths - 1)))


def k3_random_crop_forward(x, P, S, step):
    top, left = crop_offsets(3, 4, 0, step)  # RandomCrop(7, 8) of 9x11
    h = x[:, top:top + 7, left:left + 8]
    h = h[:, :, 1:7]  # RandomCrop(7, 6) of 7x8: Keras 3's centre window
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def tf2_random_crop_forward(x, P, S, step):
    _, left = crop_offsets(1, 4, 0, step)  # RandomCrop(6, 5) of 6x8
    h = x[:, :, left:left + 5]
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def prelu(h, alpha):
    """Keras's PReLU: relu(h) - alpha relu(-h), alpha broadcast over the batch (and the shared
    axes, of size 1)."""
    return torch.relu(h) - alpha * torch.relu(-h)


def k3_prelu_forward(x, P, S, step):
    h = prelu(conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same"), P["p_re_lu/alpha"])
    h = prelu(conv(h, P["conv2d_1/kernel"], P["conv2d_1/bias"], padding="same"), P["p_re_lu_1/alpha"])
    h = prelu(h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"], P["p_re_lu_2/alpha"])
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


def tf2_prelu_forward(x, P, S, step):
    h = prelu(conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same"), P["p_re_lu/alpha"])
    h = prelu(h @ P["dense/kernel"] + P["dense/bias"], P["p_re_lu_1/alpha"])
    return h.mean(1) @ P["dense_1/kernel"] + P["dense_1/bias"]


def k3_video_forward(x, P, S, step):
    n, t = x.shape[:2]
    f = x.reshape(n * t, 8, 8, 3)  # TimeDistributed: every frame alike
    h = torch.relu(conv(f, P["time_distributed/conv2d/kernel"], P["time_distributed/conv2d/bias"],
                        padding="same"))
    h = F.max_pool2d(h.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1)
    h = lstm(h.reshape(n, t, 64), P, "lstm", 6)  # each frame flattened in (H, W, C) order
    return h @ P["dense/kernel"] + P["dense/bias"]


def tf2_video_forward(x, P, S, step):
    n, t = x.shape[:2]
    f = x.reshape(n * t, 6, 6, 2)
    h = BN(P, S, "time_distributed_1")(conv(f, P["time_distributed/kernel"], P["time_distributed/bias"]))
    h = gru(h.mean(dim=(1, 2)).reshape(n, t, 4), P, "gru/gru_cell", 5)
    return h @ P["dense/kernel"] + P["dense/bias"]


def depthwise1d(x, k, b, padding="valid"):
    """Keras's DepthwiseConv1D of (batch, steps, C) x by k (K, C, M): output channel c M + m."""
    kk, c, m = k.shape
    return conv1d(x, k.reshape(kk, 1, c * m), b, padding=padding, groups=c)


def k3_conv1d_sep_forward(x, P, S, step):
    h = depthwise1d(x, P["separable_conv1d/depthwise_kernel"], None, padding="same")
    h = torch.relu(conv1d(h, P["separable_conv1d/pointwise_kernel"], P["separable_conv1d/bias"]))
    h = depthwise1d(h, P["depthwise_conv1d/depthwise_kernel"], P["depthwise_conv1d/bias"])
    return h.mean(1) @ P["dense/kernel"] + P["dense/bias"]


def dw1d(a):
    """A (K, C, M) depthwise kernel as graphc's (C M, 1, 1, K)."""
    k, c, m = a.shape
    return a.transpose(1, 2, 0).reshape(c * m, 1, 1, k)


def k3_gray_invert_forward(x, P, S, step):
    n = x.shape[0]
    gray = (x * torch.tensor([0.2989, 0.5870, 0.1140])).sum(-1, keepdim=True).expand(-1, -1, -1, 3)
    h = torch.where(keep_draws(n, 0.5, 0, step).reshape(n, 1, 1, 1), gray, x)  # RandomGrayscale
    h = torch.where(keep_draws(n, 0.5, 1, step).reshape(n, 1, 1, 1), 2 - h, h)  # RandomInvert
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def k3_color_forward(x, P, S, step):
    n = x.shape[0]
    # RandomContrast(0.3) clipped to (-1.5, 1.5): (x - m) f + m, m each image's channel means.
    f = per_sample_uniform(n, 1 - 0.3, 1 + 0.3, 0, step)
    m = x.mean(dim=(1, 2), keepdim=True)
    h = torch.clamp((x - m) * f + m, -1.5, 1.5)
    # RandomBrightness((-0.1, 0.2)) of the range (-2, 2): x + d, clipped.
    d = per_sample_uniform(n, -0.1 * 4, 0.2 * 4, 1, step)
    h = torch.clamp(h + d, -2, 2)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def k3_seq2seq_forward(x, P, S, step):
    n = x.shape[0]
    code = lstm(x, P, "lstm", 8)
    decoded = lstm(code[:, None, :].expand(-1, 4, -1), P, "lstm_1", 8, return_sequences=True)
    rows = x @ P["dense/kernel"] + P["dense/bias"]
    scores = decoded @ rows.transpose(1, 2)  # Dot((2, 2)): (n, 4, 5)

    def l2(v):  # Keras's l2_normalize: v * rsqrt(max(sum v^2, 1e-12))
        return v * torch.rsqrt(torch.clamp((v * v).sum(1, keepdim=True), min=1e-12))
    cosine = (l2(decoded.mean(1)) * l2(rows.mean(1))).sum(1, keepdim=True)
    h = torch.cat([scores.reshape(n, -1), cosine], dim=1)
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


def conv1d_transpose(x, k, b, stride, padding, output_padding=None):
    """Keras Conv1DTranspose: Conv2DTranspose over a height-1 image, kernel (K, filters, C)."""
    y = conv_transpose(x[:, None], k[None], b, (1, stride), padding,
                       output_padding=None if output_padding is None else (0, output_padding))
    return y[:, 0]


def tf2_conv1d_transpose_forward(x, P, S, step):
    h = torch.relu(conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same"))
    h = conv1d_transpose(h, P["conv1d_transpose/kernel"], P["conv1d_transpose/bias"], 2, "same")
    h = torch.tanh(conv1d_transpose(h, P["conv1d_transpose_1/kernel"], P["conv1d_transpose_1/bias"],
                                    3, "valid", output_padding=1))
    return h.reshape(h.shape[0], -1) @ P["dense/kernel"] + P["dense/bias"]


def conv1d_transpose_kernel(a):
    """Keras Conv1DTranspose kernel (K, filters, C) -> graphc's (C, filters, 1, K)."""
    return a.transpose(2, 1, 0)[:, :, None, :]


def k3_dot_attention_forward(x, P, S, step):
    q = x @ P["dense/kernel"] + P["dense/bias"]
    v = conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same")
    scores = (q @ v.transpose(1, 2)) * P["attention/scale"]
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    p = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    h = p @ v
    k = x @ P["dense_1/kernel"]
    p = dropout(torch.softmax(h @ k.transpose(1, 2), dim=-1).contiguous(), 0.25, 0, step)
    h = p @ v
    return h.mean(1) @ P["dense_2/kernel"] + P["dense_2/bias"]


def additive_scores(q, k, weight=None, inner=None, outer=None):
    """Bahdanau's scores[n, t, s] = outer * sum_d weight[d] tanh(inner (q[n, t, d] + k[n, s, d]))
    (Keras's AdditiveAttention, and Attention with score_mode concat), by broadcasting."""
    pairs = q[:, :, None, :] + k[:, None, :, :]
    if inner is not None:
        pairs = pairs * inner
    th = torch.tanh(pairs)
    if weight is not None:
        th = th * weight
    scores = th.sum(-1)
    return scores * outer if outer is not None else scores


def k3_additive_attention_forward(x, P, S, step):
    q = x @ P["dense/kernel"] + P["dense/bias"]
    v = conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same")
    scores = additive_scores(q, v, weight=P["additive_attention/scale"])
    causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    h = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v
    k = x @ P["dense_1/kernel"]
    scores = additive_scores(h, k, inner=P["attention/scale"],
                             outer=P["attention/concat_score_weight"])
    p = dropout(torch.softmax(scores, dim=-1).contiguous(), 0.25, 0, step)
    return (p @ v).mean(1) @ P["dense_2/kernel"] + P["dense_2/bias"]


def tf2_additive_attention_forward(x, P, S, step):
    q = torch.tanh(x @ P["dense/kernel"] + P["dense/bias"])
    v = conv1d(x, P["conv1d/kernel"], P["conv1d/bias"], padding="same")
    p = dropout(torch.softmax(additive_scores(q, v), dim=-1).contiguous(), 0.1, 0, step)
    return (p @ v).mean(1) @ P["dense_1/kernel"] + P["dense_1/bias"]


def k3_se_block_forward(x, P, S, step):
    x = x * torch.tensor([2.0, 0.5, 1.5]) + torch.tensor([0.1, -0.2, 0.0])
    h = F.silu(conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    se = h.mean(dim=(1, 2), keepdim=True)
    se = F.silu(conv(se, P["conv2d_1/kernel"], P["conv2d_1/bias"]))
    se = torch.sigmoid(conv(se, P["conv2d_2/kernel"], P["conv2d_2/bias"]))
    h = h * se
    se = h.mean(dim=(1, 2)).reshape(-1, 1, 1, 8)
    se = hard_sigmoid_k3(conv(se, P["conv2d_3/kernel"], P["conv2d_3/bias"]))
    h = se * h
    keep = keep_draws(h.shape[0], 0.2, 0, step).reshape(-1, 1, 1, 1)  # a draw per sample
    h = torch.where(keep, h / 0.8, torch.zeros_like(h))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


CASES.update({
    "k3_se_block": dict(
        layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_se_block_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 8)), ("bias", (8,))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (1, 1, 8, 2)), ("bias", (2,))]),
                 ("layers/conv2d_2", None, "conv2d_2", [("kernel", (1, 1, 2, 8)), ("bias", (8,))]),
                 ("layers/conv2d_3", None, "conv2d_3", [("kernel", (1, 1, 8, 8)), ("bias", (8,))]),
                 ("layers/dense", None, "dense", [("kernel", (8, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/rescaling", "layers/global_average_pooling2d", "layers/multiply",
               "layers/global_average_pooling2d_1", "layers/reshape", "layers/multiply_1",
               "layers/dropout", "layers/global_average_pooling2d_2", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio, "conv2d_2/kernel": hwio,
                "conv2d_3/kernel": hwio}),
    "k3_dot_attention": dict(
        layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_dot_attention_forward,
        weights=[("layers/dense", None, "dense", [("kernel", (6, 8)), ("bias", (8,))]),
                 ("layers/conv1d", None, "conv1d", [("kernel", (3, 6, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (6, 8))]),
                 ("layers/attention", None, "attention", [("scale", ())]),
                 ("layers/dense_2", None, "dense_2", [("kernel", (8, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/attention_1", "layers/global_average_pooling1d",
               "optimizer"],
        graphc={"conv1d/kernel": conv1d_kernel, "attention/scale": lambda a: np.reshape(a, (1, 1))}),
    "k3_additive_attention": dict(
        layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_additive_attention_forward,
        weights=[("layers/dense", None, "dense", [("kernel", (6, 8)), ("bias", (8,))]),
                 ("layers/conv1d", None, "conv1d", [("kernel", (3, 6, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (6, 8))]),
                 ("layers/additive_attention", None, "additive_attention", [("scale", (8,))]),
                 ("layers/attention", None, "attention",
                  [("scale", ()), ("concat_score_weight", ())]),
                 ("layers/dense_2", None, "dense_2", [("kernel", (8, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/global_average_pooling1d", "optimizer"],
        graphc={"conv1d/kernel": conv1d_kernel,
                "additive_attention/scale": lambda a: np.reshape(a, (8, 1)),
                "attention/scale": lambda a: np.reshape(a, (1, 1)),
                "attention/concat_score_weight": lambda a: np.reshape(a, (1, 1))}),
    "tf2_additive_attention": dict(
        layout="legacy", input=(5, 6), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_additive_attention_forward,
        layer_names=["input_1", "dense", "conv1d", "additive_attention",
                     "global_average_pooling1d", "dense_1", "activation"],
        weights=[(None, "dense", "dense", [("kernel", (6, 8)), ("bias", (8,))]),
                 (None, "conv1d", "conv1d", [("kernel", (3, 6, 8)), ("bias", (8,))]),
                 (None, "dense_1", "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
        graphc={"conv1d/kernel": conv1d_kernel}),
    "tf2_conv1d_transpose": dict(
        layout="legacy", input=(6, 4), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_conv1d_transpose_forward,
        layer_names=["conv1d", "conv1d_transpose", "conv1d_transpose_1", "flatten", "dense",
                     "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 4, 5)), ("bias", (5,))]),
                 (None, "conv1d_transpose", "conv1d_transpose", [("kernel", (3, 3, 5)), ("bias", (3,))]),
                 (None, "conv1d_transpose_1", "conv1d_transpose_1", [("kernel", (2, 2, 3)), ("bias", (2,))]),
                 (None, "dense", "dense", [("kernel", (72, 3)), ("bias", (3,))])],
        # The Dense after Flatten of the (36 steps, 2 channels) feature map reads graphc's (C, L).
        graphc={"conv1d/kernel": conv1d_kernel, "conv1d_transpose/kernel": conv1d_transpose_kernel,
                "conv1d_transpose_1/kernel": conv1d_transpose_kernel,
                "dense/kernel": flat_rows(2, 1, 36)}),
    "k3_volume_dense": dict(
        layout="keras3", input=(2, 3, 3, 2), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=[], volume=True,
        # Dense over the channels of every voxel, LayerNormalization over them, the global
        # mean, the classifier.
        forward=lambda x, P, S, step: (F.layer_norm(
            torch.relu(x @ P["dense/kernel"] + P["dense/bias"]), (4,),
            P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
            .mean(dim=(1, 2, 3)) @ P["dense_1/kernel"] + P["dense_1/bias"]),
        weights=[("layers/dense", None, "dense", [("kernel", (2, 4)), ("bias", (4,))]),
                 ("layers/layer_normalization", None, "layer_normalization",
                  [("gamma", (4,)), ("beta", (4,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/global_average_pooling3d", "optimizer"],
        graphc={}),
    "k3_ignore_class": dict(
        layout="keras3", input=(12,), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        ignore_class=0, flags=[],
        forward=lambda x, P, S, step: (torch.relu(x @ P["dense/kernel"] + P["dense/bias"])
                                       @ P["dense_1/kernel"] + P["dense_1/bias"]),
        weights=[("layers/dense", None, "dense", [("kernel", (12, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "optimizer"], graphc={}),
    "k3_label_smoothing": dict(
        layout="keras3", input=(12,), classes=1, loss="binary", opt=("sgd", 0.1, 0.0),
        label_smoothing=0.2, flags=[],
        forward=lambda x, P, S, step: (torch.relu(x @ P["dense/kernel"] + P["dense/bias"])
                                       @ P["dense_1/kernel"] + P["dense_1/bias"]),
        weights=[("layers/dense", None, "dense", [("kernel", (12, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (8, 1)), ("bias", (1,))])],
        empty=["layers/input_layer", "optimizer"], graphc={}),
    "k3_seq2seq": dict(
        layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_seq2seq_forward,
        weights=[("layers/lstm/cell", None, "lstm", [("kernel", (6, 32)), ("recurrent_kernel", (8, 32)), ("bias", (32,))]),
                 ("layers/lstm_1/cell", None, "lstm_1", [("kernel", (8, 32)), ("recurrent_kernel", (8, 32)), ("bias", (32,))]),
                 ("layers/dense", None, "dense", [("kernel", (6, 8)), ("bias", (8,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (21, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/lstm", "layers/lstm_1", "layers/repeat_vector",
               "layers/dot", "layers/flatten", "layers/global_average_pooling1d",
               "layers/global_average_pooling1d_1", "layers/dot_1", "layers/concatenate",
               "layers/identity", "optimizer"],
        graphc={}),
    "k3_color": dict(
        layout="keras3", input=(6, 5, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_color_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/random_contrast", "layers/random_brightness",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio}),
    "k3_random_crop": dict(
        layout="keras3", input=(9, 11, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_random_crop_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/random_crop", "layers/random_crop_1",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio}),
    "tf2_random_crop": dict(
        layout="legacy", input=(6, 8, 3), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
        forward=tf2_random_crop_forward,
        layer_names=["random_crop", "conv2d", "global_average_pooling2d", "dense", "activation"],
        weights=[(None, "conv2d", "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        graphc={"conv2d/kernel": hwio}),
    "k3_prelu": dict(
        layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_prelu_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/p_re_lu", None, "p_re_lu", [("alpha", (1, 1, 4))]),
                 ("layers/conv2d_1", None, "conv2d_1", [("kernel", (3, 3, 4, 4)), ("bias", (4,))]),
                 ("layers/p_re_lu_1", None, "p_re_lu_1", [("alpha", (6, 6, 4))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 6)), ("bias", (6,))]),
                 ("layers/p_re_lu_2", None, "p_re_lu_2", [("alpha", (6,))]),
                 ("layers/dense_1", None, "dense_1", [("kernel", (6, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio, "conv2d_1/kernel": hwio,
                "p_re_lu/alpha": lambda a: a.reshape(4),
                "p_re_lu_1/alpha": lambda a: a.transpose(2, 0, 1)}),
    "tf2_prelu": dict(
        layout="legacy", input=(5, 4), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_prelu_forward,
        layer_names=["conv1d", "p_re_lu", "dense", "p_re_lu_1", "global_average_pooling1d",
                     "dense_1", "activation"],
        weights=[(None, "conv1d", "conv1d", [("kernel", (3, 4, 6)), ("bias", (6,))]),
                 (None, "p_re_lu", "p_re_lu", [("alpha", (1, 6))]),
                 (None, "dense", "dense", [("kernel", (6, 5)), ("bias", (5,))]),
                 (None, "p_re_lu_1", "p_re_lu_1", [("alpha", (1, 1))]),
                 (None, "dense_1", "dense_1", [("kernel", (5, 3)), ("bias", (3,))])],
        graphc={"conv1d/kernel": conv1d_kernel, "p_re_lu/alpha": lambda a: a.reshape(6)}),
    "k3_video": dict(
        layout="keras3", input=(4, 8, 8, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_video_forward,
        weights=[("layers/time_distributed/layer", None, "time_distributed/conv2d",
                  [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/lstm/cell", None, "lstm", [("kernel", (64, 24)), ("recurrent_kernel", (6, 24)), ("bias", (24,))]),
                 ("layers/dense", None, "dense", [("kernel", (6, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/time_distributed", "layers/time_distributed_1",
               "layers/time_distributed_1/layer", "layers/time_distributed_2",
               "layers/time_distributed_2/layer", "layers/lstm", "optimizer"],
        graphc={"time_distributed/conv2d/kernel": hwio}),
    "tf2_video": dict(
        layout="legacy", input=(3, 6, 6, 2), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_video_forward,
        layer_names=["time_distributed", "time_distributed_1", "time_distributed_2", "gru",
                     "dense", "activation"],
        weights=[(None, "time_distributed", "time_distributed", [("kernel", (3, 3, 2, 4)), ("bias", (4,))]),
                 (None, "time_distributed_1", "time_distributed_1",
                  [("gamma", (4,)), ("beta", (4,)), ("moving_mean", (4,)), ("moving_variance", (4,))]),
                 (None, "gru", "gru/gru_cell", [("kernel", (4, 15)), ("recurrent_kernel", (5, 15)), ("bias", (2, 15))]),
                 (None, "dense", "dense", [("kernel", (5, 3)), ("bias", (3,))])],
        saved={"time_distributed/": "time_distributed/conv2d/",
               "time_distributed_1/": "time_distributed_1/batch_normalization/",
               "gru/gru_cell/": "gru/"},
        graphc={"time_distributed/kernel": hwio}),
    "k3_conv1d_sep": dict(
        layout="keras3", input=(8, 4), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_conv1d_sep_forward,
        weights=[("layers/separable_conv1d", None, "separable_conv1d",
                  [("depthwise_kernel", (3, 4, 2)), ("pointwise_kernel", (1, 8, 6)), ("bias", (6,))]),
                 ("layers/depthwise_conv1d", None, "depthwise_conv1d",
                  [("depthwise_kernel", (3, 6, 2)), ("bias", (12,))]),
                 ("layers/dense", None, "dense", [("kernel", (12, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/global_average_pooling1d", "optimizer"],
        graphc={"separable_conv1d/depthwise_kernel": dw1d,
                "separable_conv1d/pointwise_kernel": lambda a: a[0].T.reshape(6, 8, 1, 1),
                "depthwise_conv1d/depthwise_kernel": dw1d}),
    "k3_gray_invert": dict(
        layout="keras3", input=(6, 5, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_gray_invert_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/random_grayscale", "layers/random_invert",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio}),
    "k3_augment": dict(
        layout="keras3", input=(8, 8, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        flags=[], forward=k3_augment_forward,
        weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/random_flip", "layers/random_rotation",
               "layers/random_zoom", "layers/random_translation",
               "layers/global_average_pooling2d", "optimizer"],
        graphc={"conv2d/kernel": hwio}),
    "tf2_augment": dict(
        layout="legacy", input=(7, 9, 3), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_augment_forward,
        layer_names=["random_flip", "random_zoom", "random_rotation", "conv2d",
                     "global_average_pooling2d", "dense", "activation"],
        weights=[(None, "conv2d", "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        graphc={"conv2d/kernel": hwio}),
})


def k3_efficientnet_forward(x, P, S, step):
    n = x.shape[0]

    def deviation(v):
        return torch.clamp(torch.sqrt(torch.as_tensor(v)), min=1e-7)

    def squeeze_excite(h, prefix):
        s = h.mean(dim=(1, 2), keepdim=True)
        s = F.silu(conv(s, P[prefix + "se_reduce/kernel"], P[prefix + "se_reduce/bias"]))
        s = torch.sigmoid(conv(s, P[prefix + "se_expand/kernel"], P[prefix + "se_expand/bias"]))
        return h * s

    h = (0.5 * x - S["normalization/mean"]) / deviation(S["normalization/variance"])
    h = h * torch.tensor([1.2, 0.9, 1.1])
    h = F.pad(h, (0, 0, 0, 1, 0, 1))  # correct_pad: ((0, 1), (0, 1)) of the NHWC image
    h = F.silu(BN(P, S, "stem_bn")(conv(h, P["stem_conv/kernel"], None, strides=(2, 2))))
    stem = h
    h = depthwise(h, P["block1a_dwconv/depthwise_kernel"], None, padding="same")
    h = squeeze_excite(F.silu(BN(P, S, "block1a_bn")(h)), "block1a_")
    h = BN(P, S, "block1a_project_bn")(conv(h, P["block1a_project_conv/kernel"], None))
    keep = keep_draws(n, 0.2, 0, step).reshape(n, 1, 1, 1)  # drop connect: a draw per sample
    h = torch.where(keep, h / 0.8, torch.zeros_like(h)) + stem
    h = F.silu(BN(P, S, "block2a_expand_bn")(conv(h, P["block2a_expand_conv/kernel"], None)))
    h = depthwise(F.pad(h, (0, 0, 0, 1, 0, 1)), P["block2a_dwconv/depthwise_kernel"], None,
                  strides=(2, 2))
    h = squeeze_excite(F.silu(BN(P, S, "block2a_bn")(h)), "block2a_")
    h = BN(P, S, "block2a_project_bn")(conv(h, P["block2a_project_conv/kernel"], None))
    h = F.silu(BN(P, S, "top_bn")(conv(h, P["top_conv/kernel"], None)))
    h = dropout(h.mean(dim=(1, 2)).contiguous(), 0.2, 1, step)
    return h @ P["predictions/kernel"] + P["predictions/bias"]


def k3_convnext_forward(x, P, S, step):
    h = conv(x, P["conv2d/kernel"], P["conv2d/bias"], padding="same")
    y = depthwise(h, P["depthwise_conv2d/depthwise_kernel"], P["depthwise_conv2d/bias"], padding="same")
    y = F.layer_norm(y, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], 1e-6)
    y = F.gelu(y @ P["dense/kernel"] + P["dense/bias"])  # over the channels of the NHWC image
    y = y @ P["dense_1/kernel"] + P["dense_1/bias"]
    return (h + y).mean(dim=(1, 2)) @ P["dense_2/kernel"] + P["dense_2/bias"]


CASES["k3_convnext"] = dict(
    layout="keras3", input=(6, 6, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_convnext_forward,
    weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 8)), ("bias", (8,))]),
             ("layers/depthwise_conv2d", None, "depthwise_conv2d",
              [("depthwise_kernel", (3, 3, 8, 1)), ("bias", (8,))]),
             ("layers/layer_normalization", None, "layer_normalization",
              [("gamma", (8,)), ("beta", (8,))]),
             ("layers/dense", None, "dense", [("kernel", (8, 16)), ("bias", (16,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (16, 8)), ("bias", (8,))]),
             ("layers/dense_2", None, "dense_2", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/add", "layers/global_average_pooling2d", "optimizer"],
    graphc={"conv2d/kernel": hwio, "depthwise_conv2d/depthwise_kernel": dw})


def tf2_masked_rnn_forward(x, P, S, step):
    mask = x != 0  # Embedding(mask_zero=True): token id 0 is padding
    e = F.embedding(x.long(), P["embedding/embeddings"])
    h = lstm(e, P, "lstm/lstm_cell", 6, return_sequences=True, mask=mask)
    h = gru(h, P, "gru/gru_cell", 4, mask=mask)
    return h @ P["dense/kernel"] + P["dense/bias"]


def k3_masked_rnn_forward(x, P, S, step):
    mask = x != 0
    e = F.embedding(x.long(), P["embedding/embeddings"])
    n = e.shape[0]
    keep = keep_draws(n * 5, 0.2, 0, step).reshape(n, 1, 5)  # SpatialDropout1D: per feature
    e = torch.where(keep, e / 0.8, torch.zeros_like(e))
    h = lstm(e, P, "lstm", 4, go_backwards=True, mask=mask)
    return h @ P["dense/kernel"] + P["dense/bias"]


CASES.update({
    "tf2_masked_rnn": dict(
        layout="legacy", input=(7,), ids=6, classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
        forward=tf2_masked_rnn_forward,
        layer_names=["embedding", "lstm", "gru", "dense", "activation"],
        weights=[(None, "embedding", "embedding", [("embeddings", (6, 5))]),
                 (None, "lstm", "lstm/lstm_cell", [("kernel", (5, 24)), ("recurrent_kernel", (6, 24)), ("bias", (24,))]),
                 (None, "gru", "gru/gru_cell", [("kernel", (6, 12)), ("recurrent_kernel", (4, 12)), ("bias", (2, 12))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        saved={"lstm/lstm_cell/": "lstm/", "gru/gru_cell/": "gru/"},
        graphc={}),
    "tf2_rnn_dropout": dict(
        layout="legacy", input=(6, 4), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_rnn_dropout_forward,
        layer_names=["lstm", "simple_rnn", "dense", "activation"],
        weights=[(None, "lstm", "lstm/lstm_cell", [("kernel", (4, 20)), ("recurrent_kernel", (5, 20)), ("bias", (20,))]),
                 (None, "simple_rnn", "simple_rnn/simple_rnn_cell", [("kernel", (5, 4)), ("recurrent_kernel", (4, 4)), ("bias", (4,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        saved={"lstm/lstm_cell/": "lstm/", "simple_rnn/simple_rnn_cell/": "simple_rnn/"},
        graphc={}),
    "k3_rnn_dropout": dict(
        layout="keras3", input=(7,), ids=6, classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=[], forward=k3_rnn_dropout_forward,
        weights=[("layers/embedding", None, "embedding", [("embeddings", (6, 5))]),
                 ("layers/bidirectional/forward_layer/cell", None, "fw",
                  [("kernel", (5, 12)), ("recurrent_kernel", (4, 12)), ("bias", (2, 12))]),
                 ("layers/bidirectional/backward_layer/cell", None, "bw",
                  [("kernel", (5, 12)), ("recurrent_kernel", (4, 12)), ("bias", (2, 12))]),
                 ("layers/dense", None, "dense", [("kernel", (8, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/bidirectional", "optimizer"],
        saved={"fw/": "bidirectional/forward_gru/", "bw/": "bidirectional/backward_gru/"},
        graphc={}),
    "k3_masked_rnn": dict(
        layout="keras3", input=(7,), ids=6, classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
        flags=[], forward=k3_masked_rnn_forward,
        weights=[("layers/embedding", None, "embedding", [("embeddings", (6, 5))]),
                 ("layers/lstm/cell", None, "lstm", [("kernel", (5, 16)), ("recurrent_kernel", (4, 16)), ("bias", (16,))]),
                 ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/spatial_dropout1d", "layers/lstm", "optimizer"],
        graphc={}),
})


def masked_mean(h, real):
    """GlobalAveragePooling1D of a masked (batch, steps, features) h: the mean of the real
    steps, sum(h m) / sum(m)."""
    m = real.float()[:, :, None]
    return (h * m).sum(1) / m.sum(1)


def masking_steps(xs, value):
    """Padding steps for the Masking cases: each sample keeps its first 2..6 of 6 steps and
    sets the rest to the mask value (a fixed pattern, so that every length occurs)."""
    x = xs[0]
    for i in range(x.shape[0]):
        x[i, 2 + i % 5:, :] = value


def tf2_masking_forward(x, P, S, step):
    mask = (x != 0).any(-1)  # Masking(0.0)
    h = torch.tanh(x @ P["dense/kernel"] + P["dense/bias"])  # per step; the mask passes on
    h = lstm(h, P, "lstm/lstm_cell", 6, mask=mask)
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


def k3_masking_forward(x, P, S, step):
    mask = (x != -1).any(-1)  # Masking(-1.0): padding steps zeroed
    h = x * mask[:, :, None]
    h = gru(h, P, "gru", 5, return_sequences=True, mask=mask)
    h = F.layer_norm(h, (5,), P["layer_normalization/gamma"], P["layer_normalization/beta"], 1e-3)
    return masked_mean(h, mask) @ P["dense/kernel"] + P["dense/bias"]


CASES.update({
    "tf2_masking": dict(
        layout="legacy", input=(6, 4), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
        prepare=lambda xs: masking_steps(xs, 0.0),
        flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
               "--momentum=0.9"], forward=tf2_masking_forward,
        layer_names=["masking", "dense", "lstm", "dense_1", "activation"],
        weights=[(None, "dense", "dense", [("kernel", (4, 5)), ("bias", (5,))]),
                 (None, "lstm", "lstm/lstm_cell", [("kernel", (5, 24)), ("recurrent_kernel", (6, 24)), ("bias", (24,))]),
                 (None, "dense_1", "dense_1", [("kernel", (6, 3)), ("bias", (3,))])],
        saved={"lstm/lstm_cell/": "lstm/"},
        graphc={}),
    "k3_masking": dict(
        layout="keras3", input=(6, 4), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
        prepare=lambda xs: masking_steps(xs, -1.0),
        flags=[], forward=k3_masking_forward,
        weights=[("layers/gru/cell", None, "gru", [("kernel", (4, 15)), ("recurrent_kernel", (5, 15)), ("bias", (2, 15))]),
                 ("layers/layer_normalization", None, "layer_normalization", [("gamma", (5,)), ("beta", (5,))]),
                 ("layers/dense", None, "dense", [("kernel", (5, 3)), ("bias", (3,))])],
        empty=["layers/input_layer", "layers/masking", "layers/gru",
               "layers/global_average_pooling1d", "optimizer"],
        graphc={}),
})


def k3_masked_tagger_forward(x, P, S, step):
    mask = x != 0
    e = F.embedding(x.long(), P["embedding/embeddings"])
    h = lstm(e, P, "lstm", 5, return_sequences=True, mask=mask)
    return h @ P["dense/kernel"] + P["dense/bias"]


def tf2_masked_seq_mse_forward(x, P, S, step):
    mask = (x != 0).any(-1)  # Masking(0.0)
    h = lstm(x * mask[:, :, None], P, "lstm/lstm_cell", 4, return_sequences=True, mask=mask)
    return h @ P["dense/kernel"] + P["dense/bias"]


CASES.update({
    # A class per step, the loss over the steps whose token id is not 0.
    "k3_masked_tagger": dict(
        layout="keras3", input=(7,), ids=12, classes=4, labels=(7,), loss="sparse",
        opt=("adam", 0.01, 0.0), flags=[], forward=k3_masked_tagger_forward,
        loss_mask=lambda x: x != 0,
        weights=[("layers/embedding", None, "embedding", [("embeddings", (12, 6))]),
                 ("layers/lstm/cell", None, "lstm", [("kernel", (6, 20)), ("recurrent_kernel", (5, 20)), ("bias", (20,))]),
                 ("layers/dense", None, "dense", [("kernel", (5, 4)), ("bias", (4,))])],
        empty=["layers/input_layer", "layers/lstm", "optimizer"],
        graphc={}),
    # mse per step, over the real (not all-zero) steps.
    "tf2_masked_seq_mse": dict(
        layout="legacy", input=(6, 3), labels=(6, 3), loss="mse", opt=("sgd", 0.1, 0.0),
        prepare=lambda xs: masking_steps(xs, 0.0),
        flags=["--loss=mse", "--optimizer=sgd", "--lr=0.1"], forward=tf2_masked_seq_mse_forward,
        loss_mask=lambda x: (x != 0).any(-1),
        layer_names=["masking", "lstm", "dense"],
        weights=[(None, "lstm", "lstm/lstm_cell", [("kernel", (3, 16)), ("recurrent_kernel", (4, 16)), ("bias", (16,))]),
                 (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
        saved={"lstm/lstm_cell/": "lstm/"},
        graphc={}),
})


def k3_masked_mean_forward(x, P, S, step):
    m = (x != 0).float()  # Embedding(mask_zero=True)
    e = F.embedding(x.long(), P["embedding/embeddings"])
    h = (e * m[:, :, None]).sum(1) / m.sum(1, keepdim=True)  # Keras's masked mean
    return h @ P["dense/kernel"] + P["dense/bias"]


CASES["k3_masked_mean"] = dict(
    layout="keras3", input=(7,), ids=10, classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_masked_mean_forward,
    weights=[("layers/embedding", None, "embedding", [("embeddings", (10, 6))]),
             ("layers/dense", None, "dense", [("kernel", (6, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/global_average_pooling1d", "optimizer"],
    graphc={})


def tf2_center_crop_forward(x, P, S, step):
    h = x[:, 1:5, 1:6]  # CenterCrop(4, 5) of 7x8: (7 - 4) // 2 = 1, (8 - 5) // 2 = 1
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


CASES["tf2_center_crop"] = dict(
    layout="legacy", input=(7, 8, 3), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
    flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
    forward=tf2_center_crop_forward,
    layer_names=["center_crop", "conv2d", "global_average_pooling2d", "dense", "activation"],
    weights=[(None, "conv2d", "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
             (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
    graphc={"conv2d/kernel": hwio})


def resize(h, height, width, mode="bilinear"):
    """tf.image.resize of an NHWC batch to height x width without antialiasing: PyTorch's
    bilinear with align_corners=False, or nearest-exact (half-pixel centres, rounded down)."""
    mode = "nearest-exact" if mode == "nearest" else mode
    out = F.interpolate(h.permute(0, 3, 1, 2), size=(height, width), mode=mode,
                        **({"align_corners": False} if mode == "bilinear" else {}))
    return out.permute(0, 2, 3, 1)


def k3_resize_forward(x, P, S, step):
    h = resize(x, 6, 8)  # Resizing(6, 8) of 9x12
    h = resize(h, 7, 10, "nearest")  # Resizing(7, 10, nearest)
    h = resize(h[:, :, 1:8], 5, 5)  # Resizing(5, 5, crop_to_aspect_ratio): the centred 7x7
    h = resize(h, 6, 6)  # CenterCrop(6, 6) of 5x5: smart_resize
    h = resize(h[:, 0:8, 1:6], 8, 5)  # RandomCrop(8, 5) of 6x6: Keras 3's slice, resized
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


def tf2_resize_forward(x, P, S, step):
    h = resize(x[:, :, 1:7], 8, 8)  # RandomCrop(8, 8) of 6x8: smart_resize
    h = resize(h, 5, 7)  # Resizing(5, 7)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


CASES["k3_resize"] = dict(
    layout="keras3", input=(9, 12, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_resize_forward,
    weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
             ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/resizing", "layers/resizing_1", "layers/resizing_2",
           "layers/center_crop", "layers/random_crop", "layers/global_average_pooling2d",
           "optimizer"],
    graphc={"conv2d/kernel": hwio})
CASES["tf2_resize"] = dict(
    layout="legacy", input=(6, 8, 3), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
    flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
    forward=tf2_resize_forward,
    layer_names=["random_crop", "resizing", "conv2d", "global_average_pooling2d", "dense",
                 "activation"],
    weights=[(None, "conv2d", "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
             (None, "dense", "dense", [("kernel", (4, 3)), ("bias", (3,))])],
    graphc={"conv2d/kernel": hwio})


def k3_resizing_forward(x, P, S, step):
    h = bilinear(x, (2, 3))  # Resizing(6, 12) of 3x4; Resizing(6, 12) again is nothing
    h = h.repeat_interleave(2, dim=1)  # Resizing(12, 12, nearest)
    h = torch.relu(conv(h, P["conv2d/kernel"], P["conv2d/bias"], padding="same"))
    return h.mean(dim=(1, 2)) @ P["dense/kernel"] + P["dense/bias"]


CASES["k3_resizing"] = dict(
    layout="keras3", input=(3, 4, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_resizing_forward,
    weights=[("layers/conv2d", None, "conv2d", [("kernel", (3, 3, 3, 4)), ("bias", (4,))]),
             ("layers/dense", None, "dense", [("kernel", (4, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/resizing", "layers/resizing_1", "layers/resizing_2",
           "layers/global_average_pooling2d", "optimizer"],
    graphc={"conv2d/kernel": hwio})


def bn_vars(c):
    return [("gamma", (c,)), ("beta", (c,)), ("moving_mean", (c,)), ("moving_variance", (c,))]


def layer(name, variables):
    return ("layers/" + name, None, name, variables)


CASES["k3_efficientnet"] = dict(
    layout="keras3", input=(12, 12, 3), classes=3, loss="sparse", opt=("sgd", 0.05, 0.0),
    flags=[], forward=k3_efficientnet_forward,
    weights=[layer("normalization", [("mean", (3,)), ("variance", (3,)), ("count", ())]),
             layer("stem_conv", [("kernel", (3, 3, 3, 8))]),
             layer("stem_bn", bn_vars(8)),
             layer("block1a_dwconv", [("depthwise_kernel", (3, 3, 8, 1))]),
             layer("block1a_bn", bn_vars(8)),
             layer("block1a_se_reduce", [("kernel", (1, 1, 8, 2)), ("bias", (2,))]),
             layer("block1a_se_expand", [("kernel", (1, 1, 2, 8)), ("bias", (8,))]),
             layer("block1a_project_conv", [("kernel", (1, 1, 8, 8))]),
             layer("block1a_project_bn", bn_vars(8)),
             layer("block2a_expand_conv", [("kernel", (1, 1, 8, 16))]),
             layer("block2a_expand_bn", bn_vars(16)),
             layer("block2a_dwconv", [("depthwise_kernel", (3, 3, 16, 1))]),
             layer("block2a_bn", bn_vars(16)),
             layer("block2a_se_reduce", [("kernel", (1, 1, 16, 2)), ("bias", (2,))]),
             layer("block2a_se_expand", [("kernel", (1, 1, 2, 16)), ("bias", (16,))]),
             layer("block2a_project_conv", [("kernel", (1, 1, 16, 12))]),
             layer("block2a_project_bn", bn_vars(12)),
             layer("top_conv", [("kernel", (1, 1, 12, 16))]),
             layer("top_bn", bn_vars(16)),
             layer("predictions", [("kernel", (16, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/rescaling", "layers/rescaling_1", "layers/stem_conv_pad",
           "layers/stem_activation", "layers/block1a_activation", "layers/block1a_se_squeeze",
           "layers/block1a_se_reshape", "layers/block1a_se_excite", "layers/block1a_drop",
           "layers/block1a_add", "layers/block2a_expand_activation", "layers/block2a_dwconv_pad",
           "layers/block2a_activation", "layers/block2a_se_squeeze", "layers/block2a_se_reshape",
           "layers/block2a_se_excite", "layers/top_activation", "layers/avg_pool",
           "layers/top_dropout", "optimizer"],
    unsaved=["normalization/count"],
    graphc={name + "/kernel": hwio for name in (
        "stem_conv", "block1a_se_reduce", "block1a_se_expand", "block1a_project_conv",
        "block2a_expand_conv", "block2a_se_reduce", "block2a_se_expand", "block2a_project_conv",
        "top_conv")} | {name + "/depthwise_kernel": dw for name in ("block1a_dwconv", "block2a_dwconv")})


IMAGENET_MEAN = torch.tensor([0.485 * 255, 0.456 * 255, 0.406 * 255])
IMAGENET_STD = torch.tensor([0.229 * 255, 0.224 * 255, 0.225 * 255])


def convnext_block(h, P, prefix, c, drop, op_id, step):
    """keras.applications' ConvNeXtBlock: grouped 3x3 conv, LayerNorm, Dense 4c, gelu, Dense
    c, LayerScale, StochasticDepth (one keep per sample, graphc's draws), the residual."""
    y = conv(h, P[prefix + "_depthwise_conv/kernel"], P[prefix + "_depthwise_conv/bias"],
             padding="same", groups=c)
    y = F.layer_norm(y, (c,), P[prefix + "_layernorm/gamma"], P[prefix + "_layernorm/beta"], 1e-6)
    y = F.gelu(y @ P[prefix + "_pointwise_conv_1/kernel"] + P[prefix + "_pointwise_conv_1/bias"])
    y = y @ P[prefix + "_pointwise_conv_2/kernel"] + P[prefix + "_pointwise_conv_2/bias"]
    y = y * P[prefix + "_layer_scale/gamma"]
    if drop:
        keep = keep_draws(h.shape[0], drop, op_id, step).reshape(-1, 1, 1, 1)
        y = torch.where(keep, y / (1 - drop), torch.zeros_like(y))
    return h + y


def k3_convnext_app_forward(x, P, S, step):
    h = (x - IMAGENET_MEAN) / IMAGENET_STD  # PreStem's Normalization
    h = conv(h, P["convnext_stem_conv/kernel"], P["convnext_stem_conv/bias"], strides=(4, 4))
    h = F.layer_norm(h, (8,), P["convnext_stem_layernorm/gamma"], P["convnext_stem_layernorm/beta"], 1e-6)
    h = convnext_block(h, P, "convnext_stage_0_block_0", 8, 0.4, 0, step)
    h = F.layer_norm(h, (8,), P["convnext_downsampling_layernorm_0/gamma"],
                     P["convnext_downsampling_layernorm_0/beta"], 1e-6)
    h = conv(h, P["convnext_downsampling_conv_0/kernel"], P["convnext_downsampling_conv_0/bias"],
             strides=(2, 2))
    h = convnext_block(h, P, "convnext_stage_1_block_0", 16, 0.0, 1, step)
    h = F.layer_norm(h.mean(dim=(1, 2)), (16,), P["convnext_head_layernorm/gamma"],
                     P["convnext_head_layernorm/beta"], 1e-6)
    return h @ P["convnext_head_dense/kernel"] + P["convnext_head_dense/bias"]


def convnext_block_weights(prefix, c):
    return [layer(prefix + "_depthwise_conv", [("kernel", (3, 3, 1, c)), ("bias", (c,))]),
            layer(prefix + "_layernorm", [("gamma", (c,)), ("beta", (c,))]),
            layer(prefix + "_pointwise_conv_1", [("kernel", (c, 4 * c)), ("bias", (4 * c,))]),
            layer(prefix + "_pointwise_conv_2", [("kernel", (4 * c, c)), ("bias", (c,))]),
            layer(prefix + "_layer_scale", [("gamma", (c,))])]


def nested(model, name, variables):
    return ("layers/%s/layers/%s" % (model, name), None, name, variables)


CASES["k3_convnext_app"] = dict(
    layout="keras3", input=(16, 16, 3), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_convnext_app_forward,
    weights=[nested("convnext_stem", "convnext_stem_conv", [("kernel", (4, 4, 3, 8)), ("bias", (8,))]),
             nested("convnext_stem", "convnext_stem_layernorm", [("gamma", (8,)), ("beta", (8,))]),
             nested("convnext_downsampling_block_0", "convnext_downsampling_layernorm_0",
                    [("gamma", (8,)), ("beta", (8,))]),
             nested("convnext_downsampling_block_0", "convnext_downsampling_conv_0",
                    [("kernel", (2, 2, 8, 16)), ("bias", (16,))]),
             layer("convnext_head_layernorm", [("gamma", (16,)), ("beta", (16,))]),
             layer("convnext_head_dense", [("kernel", (16, 3)), ("bias", (3,))])]
            + convnext_block_weights("convnext_stage_0_block_0", 8)
            + convnext_block_weights("convnext_stage_1_block_0", 16),
    empty=["layers/input_layer", "layers/convnext_prestem_normalization", "layers/convnext_stem",
           "layers/convnext_downsampling_block_0", "layers/convnext_stage_0_block_0_gelu",
           "layers/convnext_stage_0_block_0_stochastic_depth", "layers/convnext_stage_1_block_0_gelu",
           "layers/convnext_stage_1_block_0_identity", "layers/add", "layers/add_1",
           "layers/convnext_head_gap", "optimizer"],
    graphc={name + "/kernel": hwio for name in (
        "convnext_stem_conv", "convnext_downsampling_conv_0", "convnext_stage_0_block_0_depthwise_conv",
        "convnext_stage_1_block_0_depthwise_conv")})


def tf2_layer_scale_forward(x, P, S, step):
    h = x @ P["dense/kernel"] + P["dense/bias"]
    y = h * P["layer_scale/Variable"]
    keep = keep_draws(x.shape[0], 0.3, 0, step).reshape(-1, 1, 1)  # StochasticDepth
    y = torch.where(keep, y / 0.7, torch.zeros_like(y))
    return (h + y).mean(1) @ P["dense_1/kernel"] + P["dense_1/bias"]


# tf.keras 2's LayerScale holds an unnamed tf.Variable: its weight is "layer_scale/Variable:0",
# which graphc takes as the layer's one weight.
CASES["tf2_layer_scale"] = dict(
    layout="legacy", input=(5, 6), classes=3, loss="sparse", opt=("momentum", 0.05, 0.9),
    flags=["--loss=sparse_categorical_crossentropy", "--optimizer=momentum", "--lr=0.05",
           "--momentum=0.9"], forward=tf2_layer_scale_forward,
    layer_names=["input_1", "dense", "layer_scale", "stochastic_depth", "add",
                 "global_average_pooling1d", "dense_1", "activation"],
    weights=[(None, "dense", "dense", [("kernel", (6, 8)), ("bias", (8,))]),
             (None, "layer_scale", "layer_scale", [("Variable", (8,))]),
             (None, "dense_1", "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    saved={"layer_scale/Variable": "layer_scale/gamma"},
    graphc={})


def k3_einsum_forward(x, P, S, step):
    h = torch.relu(torch.einsum("abc,cd->abd", x, P["einsum_dense/kernel"]) + P["einsum_dense/bias"])
    h = torch.einsum("...c,cd->...d", h, P["einsum_dense_1/kernel"]).mean(1)
    h = torch.einsum("ab,bcd->acd", h, P["einsum_dense_2/kernel"]) + P["einsum_dense_2/bias"]
    return h.mean(1)


CASES["k3_einsum"] = dict(
    layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_einsum_forward,
    weights=[layer("einsum_dense", [("kernel", (6, 8)), ("bias", (8,))]),
             layer("einsum_dense_1", [("kernel", (8, 4))]),
             layer("einsum_dense_2", [("kernel", (4, 2, 3)), ("bias", (2, 3))])],
    empty=["layers/input_layer", "layers/global_average_pooling1d",
           "layers/global_average_pooling1d_1", "optimizer"],
    graphc={"einsum_dense_2/kernel": lambda a: a.reshape(4, 6),
            "einsum_dense_2/bias": lambda a: a.reshape(6)})


def k3_ops_forward(x, P, S, step):
    h = torch.tanh(x @ P["dense/kernel"] + P["dense/bias"])
    y = (1.0 - h * 0.5) / 4 + h
    return torch.maximum(y, h) @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_ops"] = dict(
    layout="keras3", input=(6,), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
    flags=[], forward=k3_ops_forward,
    weights=[layer("dense", [("kernel", (6, 8)), ("bias", (8,))]),
             layer("dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/multiply", "layers/subtract", "layers/true_divide",
           "layers/add", "layers/maximum", "optimizer"],
    graphc={})


STATS = ("moving_mean", "moving_variance", "mean", "variance", "count")


def self_attention(x, P, name, dk, rate, op_id, step, value=None, causal=False, mask=None):
    """Keras MultiHeadAttention(x, value or x): EinsumDense projections with kernels (D, heads, e) and
    biases (heads, e), the query scaled by 1/sqrt(key_dim), softmax over the keys, dropout of
    the probabilities (graphc's mask over their (batch, head, query, key) order), the output
    EinsumDense with kernel (heads, value_dim, D). `mask` (batch, queries, keys): Keras's
    Softmax adds (1 - bool(mask)) * -1e9 to every head's scores."""
    def proj(part, t):
        return torch.einsum("bsd,dhe->bshe", t, P[name + "/" + part + "/kernel"]) + P[name + "/" + part + "/bias"]
    value = x if value is None else value
    q = proj("query", x) * (1.0 / np.sqrt(dk))
    k, v = proj("key", value), proj("value", value)
    scores = torch.einsum("bshe,bthe->bhst", q, k)
    if causal:  # Keras's use_causal_mask: query i sees keys 0..i
        t, u = scores.shape[-2:]
        scores = scores.masked_fill(torch.arange(u)[None, :] > torch.arange(t)[:, None], float("-inf"))
    if mask is not None:
        scores = scores + (1.0 - (mask != 0).to(scores.dtype))[:, None] * -1e9
    p = torch.softmax(scores, dim=-1)
    if rate > 0:
        p = dropout(p.contiguous(), rate, op_id, step)
    context = torch.einsum("bhst,bthv->bshv", p, v)
    return (torch.einsum("bshv,hvd->bsd", context, P[name + "/attention_output/kernel"])
            + P[name + "/attention_output/bias"])


def mha_cross_forward(x, P, S, step):
    memory = torch.tanh(x[:, 1:-1, :] @ P["memory/kernel"] + P["memory/bias"])  # Cropping1D, Dense
    h = x + self_attention(x, P, "multi_head_attention", 3, 0.1, 0, step, value=memory)
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
    return h.mean(dim=1) @ P["dense/kernel"] + P["dense/bias"]


def mha_causal_forward(x, P, S, step):
    h = x + self_attention(x, P, "multi_head_attention", 3, 0.1, 0, step, causal=True)
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
    return h.mean(dim=1) @ P["dense/kernel"] + P["dense/bias"]


def mha_forward(x, P, S, step):
    h = x + self_attention(x, P, "multi_head_attention", 3, 0.1, 0, step)
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], eps=1e-3)
    return h.mean(dim=1) @ P["dense/kernel"] + P["dense/bias"]


def mha_case(layout, cross=False, causal=False):
    """k3_mha / tf2_mha (make_fixtures.py G): Keras 3 keeps each projection's variables under
    the attention layer's query_dense/key_dense/value_dense/output_dense; tf.keras 2 names them
    multi_head_attention/query/kernel:0 ... in the layer's group. graphc saves each kernel as
    the [in, out] matrix of its dense on the rows and each bias flattened."""
    k3 = layout == "keras3"
    memory = 6 if cross else 8  # the key/value features
    parts = [("query", "query_dense", (8, 2, 3), (2, 3)),
             ("key", "key_dense", (memory, 2, 3), (2, 3)),
             ("value", "value_dense", (memory, 2, 4), (2, 4)),
             ("attention_output", "output_dense", (2, 4, 8), (8,))]
    weights = [("layers/multi_head_attention/" + sub if k3 else None,
                None if k3 else "multi_head_attention", "multi_head_attention/" + part,
                [("kernel", kernel), ("bias", bias)]) for part, sub, kernel, bias in parts]
    weights += [("layers/layer_normalization" if k3 else None, None if k3 else "layer_normalization",
                 "layer_normalization", [("gamma", (8,)), ("beta", (8,))]),
                ("layers/dense_1" if cross else "layers/dense" if k3 else None,
                 None if k3 else "dense", "dense", [("kernel", (8, 3)), ("bias", (3,))])]
    if cross:  # the memory Dense comes first in the model: Keras 3 calls it layers/dense
        weights.append(("layers/dense", None, "memory", [("kernel", (8, 6)), ("bias", (6,))]))
    graphc = {}
    for part, _, kernel, bias in parts:
        rows = kernel[0] * kernel[1] if part == "attention_output" else kernel[0]
        graphc["multi_head_attention/%s/kernel" % part] = (lambda r: lambda a: a.reshape(r, -1))(rows)
        graphc["multi_head_attention/%s/bias" % part] = lambda a: a.reshape(-1)
    case = dict(layout=layout, input=(5, 8), classes=3, loss="sparse",
                forward=mha_cross_forward if cross else mha_causal_forward if causal else mha_forward,
                weights=weights, graphc=graphc)
    # SGD, not the fixture's Adam: the key bias's true gradient is zero (a shift of every key
    # adds a constant to each row of scores, which softmax ignores), so both runs hold only
    # rounding noise there, which Adam would turn into lr-sized steps of either sign.
    sgd = ["--optimizer=sgd", "--lr=0.05"]
    if k3:
        case.update(opt=("sgd", 0.05, 0.0), flags=sgd,
                    empty=["layers/input_layer", "layers/multi_head_attention", "layers/add",
                           "layers/global_average_pooling1d"] + (["layers/cropping1d"] if cross else []))
    else:
        case.update(opt=("sgd", 0.05, 0.0), flags=["--loss=sparse_categorical_crossentropy"] + sgd,
                    layer_names=["input_1", "multi_head_attention", "add", "layer_normalization",
                                 "global_average_pooling1d", "dense", "activation"])
    return case


CASES.update({"k3_mha": mha_case("keras3"), "tf2_mha": mha_case("legacy"),
              "k3_mha_cross": mha_case("keras3", cross=True),
              "k3_mha_causal": mha_case("keras3", causal=True)})


def k3_mha_mask_forward(x, P, S, step):
    x, mask = x
    h = self_attention(x, P, "multi_head_attention", 4, 0.0, 0, step, mask=mask)
    return h.mean(dim=1) @ P["dense/kernel"] + P["dense/bias"]


def k3_mha_mask_inputs(xs):
    """Every query may attend to key 0: a row of zeros would have Keras's explicit softmax
    (scores - 1e9) and its fused dot_product_attention (scores replaced) disagree."""
    xs[1][:, :, 0] = 1.0


# MultiHeadAttention(x, x, attention_mask=mask) with the mask a second data input: random 0/1
# over (query, key) pairs. Weights as mha_case's, key_dim = value_dim = 4; SGD for the same
# reason as there.
CASES["k3_mha_mask"] = dict(
    layout="keras3", inputs=[((5, 8), None), ((5, 5), 2)], prepare=k3_mha_mask_inputs, classes=3,
    loss="sparse", opt=("sgd", 0.1, 0.0), flags=[], forward=k3_mha_mask_forward,
    weights=[("layers/multi_head_attention/" + sub, None, "multi_head_attention/" + part,
              [("kernel", kernel), ("bias", bias)])
             for part, sub, kernel, bias in [("query", "query_dense", (8, 2, 4), (2, 4)),
                                             ("key", "key_dense", (8, 2, 4), (2, 4)),
                                             ("value", "value_dense", (8, 2, 4), (2, 4)),
                                             ("attention_output", "output_dense", (2, 4, 8), (8,))]]
    + [("layers/dense", None, "dense", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/input_layer_1", "layers/multi_head_attention",
           "layers/global_average_pooling1d", "optimizer"],
    graphc={"multi_head_attention/%s/%s" % (part, var): fn
            for part, rows in [("query", 8), ("key", 8), ("value", 8), ("attention_output", 8)]
            for var, fn in [("kernel", (lambda r: lambda a: a.reshape(r, -1))(rows)),
                            ("bias", lambda a: a.reshape(-1))]})


def padded_ids(xs):
    """Token ids with padding: sample i keeps its first 2 + i % 5 of 7 ids, the rest 0 (ids of
    0 may also occur inside, masked as Keras masks them)."""
    for i in range(xs[0].shape[0]):
        xs[0][i, 2 + i % 5:] = 0


def k3_mha_padding_forward(x, P, S, step):
    real = x != 0  # Embedding(mask_zero=True)
    e = F.embedding(x.long(), P["embedding/embeddings"])
    both = real[:, :, None] & real[:, None, :]  # Keras's automatic attention mask
    h = e + self_attention(e, P, "multi_head_attention", 4, 0.0, 0, step, mask=both)
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], 1e-3)
    h = torch.relu(h @ P["dense/kernel"] + P["dense/bias"])
    return masked_mean(h, real) @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_mha_padding"] = dict(
    layout="keras3", input=(7,), ids=12, prepare=padded_ids, classes=3, loss="sparse",
    opt=("sgd", 0.1, 0.0), flags=[], forward=k3_mha_padding_forward,
    weights=[("layers/embedding", None, "embedding", [("embeddings", (12, 8))])]
    + [("layers/multi_head_attention/" + sub, None, "multi_head_attention/" + part,
        [("kernel", kernel), ("bias", bias)])
       for part, sub, kernel, bias in [("query", "query_dense", (8, 2, 4), (2, 4)),
                                       ("key", "key_dense", (8, 2, 4), (2, 4)),
                                       ("value", "value_dense", (8, 2, 4), (2, 4)),
                                       ("attention_output", "output_dense", (2, 4, 8), (8,))]]
    + [("layers/layer_normalization", None, "layer_normalization", [("gamma", (8,)), ("beta", (8,))]),
       ("layers/dense", None, "dense", [("kernel", (8, 8)), ("bias", (8,))]),
       ("layers/dense_1", None, "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/multi_head_attention", "layers/add",
           "layers/global_average_pooling1d", "optimizer"],
    graphc=CASES["k3_mha_mask"]["graphc"])


def k3_attention_padding_forward(x, P, S, step):
    real = x != 0  # Embedding(mask_zero=True)
    e = F.embedding(x.long(), P["embedding/embeddings"])
    q = e @ P["dense/kernel"] + P["dense/bias"]
    pad = (~real).float()[:, None, :] * 1e9  # Keras subtracts 1e9 from padding keys' scores
    scores = (q @ e.transpose(1, 2)) * P["attention/scale"] - pad
    h = (torch.softmax(scores, dim=-1) @ e) * real.float()[:, :, None]
    scores = additive_scores(h, e, weight=P["additive_attention/scale"]) - pad
    h = (torch.softmax(scores, dim=-1) @ e) * real.float()[:, :, None]
    return masked_mean(h, real) @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_attention_padding"] = dict(
    layout="keras3", input=(7,), ids=12, prepare=padded_ids, classes=3, loss="sparse",
    opt=("adam", 0.01, 0.0), flags=[], forward=k3_attention_padding_forward,
    weights=[("layers/embedding", None, "embedding", [("embeddings", (12, 8))]),
             ("layers/dense", None, "dense", [("kernel", (8, 8)), ("bias", (8,))]),
             ("layers/attention", None, "attention", [("scale", ())]),
             ("layers/additive_attention", None, "additive_attention", [("scale", (8,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/global_average_pooling1d", "optimizer"],
    graphc={"attention/scale": lambda a: np.reshape(a, (1, 1)),
            "additive_attention/scale": lambda a: np.reshape(a, (8, 1))})


def k3_gqa_forward(x, P, S, step):
    """GroupedQueryAttention(head_dim 3, 4 query heads, 2 key/value heads): each key/value head
    repeated for 2 consecutive query heads (ops.repeat), causal, dropout 0.1 of the
    probabilities over their (batch, head, query, key) order."""
    name = "grouped_query_attention"

    def proj(part, t):
        return torch.einsum("bsd,dhe->bshe", t, P[name + "/" + part + "/kernel"]) + P[name + "/" + part + "/bias"]
    q = proj("query", x) * (1.0 / np.sqrt(3))
    k = proj("key", x).repeat_interleave(2, dim=2)
    v = proj("value", x).repeat_interleave(2, dim=2)
    scores = torch.einsum("bshe,bthe->bhst", q, k)
    scores = scores.masked_fill(torch.arange(5)[None, :] > torch.arange(5)[:, None], float("-inf"))
    p = dropout(torch.softmax(scores, dim=-1).contiguous(), 0.1, 0, step)
    context = torch.einsum("bhst,bthv->bshv", p, v)
    h = x + torch.einsum("bshv,hvd->bsd", context, P[name + "/attention_output/kernel"]) + P[name + "/attention_output/bias"]
    h = F.layer_norm(h, (8,), P["layer_normalization/gamma"], P["layer_normalization/beta"], 1e-3)
    return h.mean(1) @ P["dense/kernel"] + P["dense/bias"]


CASES["k3_gqa"] = dict(
    layout="keras3", input=(5, 8), classes=3, loss="sparse", opt=("sgd", 0.05, 0.0), flags=[],
    forward=k3_gqa_forward,
    weights=[("layers/grouped_query_attention/" + sub, None, "grouped_query_attention/" + part,
              [("kernel", kernel), ("bias", bias)])
             for part, sub, kernel, bias in [("query", "query_dense", (8, 4, 3), (4, 3)),
                                             ("key", "key_dense", (8, 2, 3), (2, 3)),
                                             ("value", "value_dense", (8, 2, 3), (2, 3)),
                                             ("attention_output", "output_dense", (4, 3, 8), (8,))]]
    + [("layers/layer_normalization", None, "layer_normalization", [("gamma", (8,)), ("beta", (8,))]),
       ("layers/dense", None, "dense", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/grouped_query_attention", "layers/add",
           "layers/global_average_pooling1d", "optimizer"],
    graphc={"grouped_query_attention/%s/%s" % (part, var): fn
            for part, rows in [("query", 8), ("key", 8), ("value", 8), ("attention_output", 12)]
            for var, fn in [("kernel", (lambda r: lambda a: a.reshape(r, -1))(rows)),
                            ("bias", lambda a: a.reshape(-1))]})


# The tf.keras 2 form with one mask row per sequence ([batch, 1, keys], a key-padding mask):
# graphc fuses it into graph.attention's bias. Legacy weights: the attention layer's group
# holds multi_head_attention/{query,key,value,attention_output}/{kernel,bias}:0.
CASES["tf2_mha_mask"] = dict(
    CASES["k3_mha_mask"], layout="legacy", inputs=[((5, 8), None), ((1, 5), 2)],
    flags=["--loss=sparse_categorical_crossentropy", "--optimizer=sgd", "--lr=0.1"],
    layer_names=["input_1", "input_2", "multi_head_attention", "global_average_pooling1d",
                 "dense", "activation"],
    weights=[(None, "multi_head_attention", "multi_head_attention/" + part,
              [("kernel", kernel), ("bias", bias)])
             for part, kernel, bias in [("query", (8, 2, 4), (2, 4)), ("key", (8, 2, 4), (2, 4)),
                                        ("value", (8, 2, 4), (2, 4)),
                                        ("attention_output", (2, 4, 8), (8,))]]
    + [(None, "dense", "dense", [("kernel", (8, 3)), ("bias", (3,))])])
del CASES["tf2_mha_mask"]["empty"]


def rms_norm(h, scale, eps):
    """Keras 3.9's RMSNormalization over the last axis: x / sqrt(mean(x^2) + eps) * scale."""
    return h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps) * scale


def k3_rms_norm_forward(x, P, S, step):
    h = torch.relu(x @ P["dense/kernel"] + P["dense/bias"])
    h = rms_norm(h, P["rms_normalization/scale"], 1e-6).mean(dim=1)
    h = rms_norm(h, P["rms_normalization_1/scale"], 0.01)
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_rms_norm"] = dict(
    layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("adam", 0.01, 0.0),
    flags=[], forward=k3_rms_norm_forward,
    weights=[("layers/dense", None, "dense", [("kernel", (6, 8)), ("bias", (8,))]),
             ("layers/rms_normalization", None, "rms_normalization", [("scale", (8,))]),
             ("layers/rms_normalization_1", None, "rms_normalization_1", [("scale", (8,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/global_average_pooling1d", "optimizer"], graphc={})


def unit_norm(h):
    """Keras 3's UnitNormalization (ops.normalize, order 2): x * rsqrt(max(sum(x^2), 1e-12))."""
    return h * torch.rsqrt(torch.clamp(h.pow(2).sum(-1, keepdim=True), min=1e-12))


def k3_unit_norm_forward(x, P, S, step):
    h = torch.relu(x @ P["dense/kernel"] + P["dense/bias"])
    h = unit_norm(unit_norm(h).mean(dim=1))
    return h @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_unit_norm"] = dict(
    layout="keras3", input=(5, 6), classes=3, loss="sparse", opt=("sgd", 0.1, 0.0),
    flags=[], forward=k3_unit_norm_forward,
    weights=[("layers/dense", None, "dense", [("kernel", (6, 8)), ("bias", (8,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (8, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/unit_normalization", "layers/global_average_pooling1d",
           "layers/unit_normalization_1", "optimizer"], graphc={})


def k3_two_inputs_forward(x, P, S, step):
    text, meta = x
    h = F.embedding(text.long(), P["embedding/embeddings"]).mean(dim=1)
    m = torch.relu(meta @ P["dense/kernel"] + P["dense/bias"])
    return torch.cat([h, m], dim=1) @ P["dense_1/kernel"] + P["dense_1/bias"]


CASES["k3_two_inputs"] = dict(
    layout="keras3", inputs=[((6,), 20), ((5,), None)], classes=3, loss="sparse",
    opt=("sgd", 0.1, 0.0), flags=[], forward=k3_two_inputs_forward,
    weights=[("layers/embedding", None, "embedding", [("embeddings", (20, 8))]),
             ("layers/dense", None, "dense", [("kernel", (5, 8)), ("bias", (8,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (16, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "layers/input_layer_1", "layers/global_average_pooling1d",
           "layers/concatenate", "optimizer"], graphc={})


def k3_seq_mish_exp_forward(x, P, S, step):
    h = F.mish(x @ P["dense/kernel"] + P["dense/bias"])
    h = torch.exp(h @ P["dense_1/kernel"] + P["dense_1/bias"])
    return h @ P["dense_2/kernel"] + P["dense_2/bias"]


CASES["k3_seq_mish_exp"] = dict(
    layout="keras3", input=(5,), classes=3, loss="sparse", opt=("sgd", 0.05, 0.0),
    flags=[], forward=k3_seq_mish_exp_forward,
    weights=[("layers/dense", None, "dense", [("kernel", (5, 8)), ("bias", (8,))]),
             ("layers/dense_1", None, "dense_1", [("kernel", (8, 6)), ("bias", (6,))]),
             ("layers/dense_2", None, "dense_2", [("kernel", (6, 3)), ("bias", (3,))])],
    empty=["layers/input_layer", "optimizer"], graphc={})


def initial_weights(case, rng):
    w = {}
    for _, _, layer, variables in case["weights"]:
        for var, shape in variables:
            if var in ("gamma", "scale"):
                a = 1 + 0.2 * rng.standard_normal(shape)
            elif var in ("moving_variance", "variance"):
                a = 1 + 0.5 * rng.random(shape)
            elif var == "count":  # a Normalization layer's sample count (int64)
                w[layer + "/" + var] = np.array(1000, np.int64)
                continue
            elif var in ("beta", "moving_mean", "bias", "mean"):
                a = 0.2 * rng.standard_normal(shape)
            else:
                a = 0.5 * rng.standard_normal(shape)
            w[layer + "/" + var] = a.astype(np.float32)
    return w


def write_weights(case, w, path):
    with h5py.File(path, "w") as f:
        if case["layout"] == "keras3":
            f.create_group("vars")
            for group in case.get("empty", []):
                f.require_group(group).require_group("vars")
            for group, _, layer, variables in case["weights"]:
                g = f.require_group(group).require_group("vars")
                for i, (var, _) in enumerate(variables):
                    g.create_dataset(str(i), data=w[layer + "/" + var])
            return
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.15.0"
        f.attrs["layer_names"] = np.array([n.encode() for n in case["layer_names"]])
        groups = {}
        for _, top, layer, variables in case["weights"]:
            for var, _ in variables:
                groups.setdefault(top, []).append((layer + "/" + var + ":0", w[layer + "/" + var]))
        for name in case["layer_names"]:
            g = f.create_group(name)
            items = groups.get(name, [])
            g.attrs["weight_names"] = np.array([n.encode() for n, _ in items])
            for n, a in items:
                g.create_dataset(n, data=a)


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        print("FAIL: %s exited with %d: %s\n%s%s" % (what, p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
        print("FAIL")
        sys.exit(1)
    return p.stdout


def rel(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-12))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--graphc", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    case = CASES[args.case]
    wd = args.workdir
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    rng = np.random.default_rng(sum(map(ord, args.case)))

    w0 = initial_weights(case, rng)
    wpath = os.path.join(wd, "model.weights.h5" if case["layout"] == "keras3" else "weights.h5")
    write_weights(case, w0, wpath)
    B, T = args.batch, args.steps
    # One array per model input ("inputs": [(shape, token-id vocabulary or None), ...]).
    xs = []
    for shape, ids in case.get("inputs", [(case.get("input"), case.get("ids"))]):
        if ids:  # token ids, whole numbers in float32
            xs.append(rng.integers(0, ids, size=(B * T,) + shape).astype(np.float32))
        else:
            xs.append(rng.standard_normal((B * T,) + shape).astype(np.float32))
    if case["loss"] == "sparse":
        # A class per sample, or per step ("labels": the per-sample label shape).
        y = rng.integers(0, case["classes"], size=(B * T,) + case.get("labels", ())).astype(np.int64)
        if "ignore_class" in case:  # each batch keeps a label that counts: its first
            y[::B] = np.where(y[::B] == case["ignore_class"], case["classes"] - 1, y[::B])
    elif case["loss"] == "mse":
        y = rng.standard_normal((B * T,) + case["labels"]).astype(np.float32)
    else:
        y = rng.integers(0, 2, size=(B * T, 1)).astype(np.float32)
    if "prepare" in case:
        case["prepare"](xs)
    data_args = []  # one --data per input, in the model's input order
    for i, x in enumerate(xs):
        path = os.path.join(wd, "x%s.npy" % (i or ""))
        # graphc declares images NCHW, frames (batch, time, C, H, W) and volumes NCDHW.
        layouts = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3) if case.get("volume") else (0, 1, 4, 2, 3)}
        np.save(path, x.transpose(layouts[x.ndim]).copy() if x.ndim in layouts else x)
        data_args += ["--data", path]
    np.save(os.path.join(wd, "y.npy"), y)

    exe = os.path.join(wd, "train")
    fixture = os.path.join(HERE, "Inputs", args.case + ".json")
    run([args.graphc, fixture, "--weights=" + wpath, "--batch=%d" % B, "-o", exe, "--quiet"] + case["flags"],
        "graphc")
    out = run([exe] + data_args + ["--labels", os.path.join(wd, "y.npy"),
               "--steps", str(T), "--save-weights", os.path.join(wd, "w")], "training binary")
    losses = [float(m.group(3)) for m in map(STEP_RE.match, out.splitlines()) if m]
    if len(losses) != T:
        print("FAIL: expected %d loss lines, got:\n%s" % (T, out))
        print("FAIL")
        return 1

    # PyTorch, in Keras layout.
    P = {k: torch.tensor(v, requires_grad=not any(k.endswith("/" + s) for s in STATS) and k not in case.get("frozen", []))
         for k, v in w0.items()}
    S = {k: P.pop(k).detach() for k in list(P) if any(k.endswith("/" + s) for s in STATS)}
    train = [p for p in P.values() if p.requires_grad]
    kind, lr, mom = case["opt"]
    if kind == "adam":
        opt = torch.optim.Adam(train, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    else:
        opt = torch.optim.SGD(train, lr=lr, momentum=mom)
    ref = []
    for t in range(1, T + 1):
        xb = [torch.from_numpy(x[(t - 1) * B:t * B]) for x in xs]
        xb = xb[0] if len(xb) == 1 else tuple(xb)
        yb = torch.from_numpy(y[(t - 1) * B:t * B])
        logits = case["forward"](xb, P, S, t)
        if "loss_mask" in case:
            # A masked output: each step's loss weighted by the mask, over the mask's sum
            # (Keras's masked sum_over_batch_size), the steps' losses per step: the
            # crossentropy of its logits, or mse's mean over its features.
            w = case["loss_mask"](xb).to(torch.float32)
            if case["loss"] == "sparse":
                per = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1),
                                      reduction="none").reshape(w.shape)
            else:
                per = ((logits - yb) ** 2).mean(-1)
            loss = (per * w).sum() / w.sum()
        elif case["loss"] == "sparse":
            loss = F.cross_entropy(logits, yb, ignore_index=case.get("ignore_class", -100))
        else:  # (Keras's binary label smoothing: targets (1 - e) y + e / 2)
            e = case.get("label_smoothing", 0.0)
            loss = F.binary_cross_entropy_with_logits(logits, yb * (1 - e) + e / 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ref.append(float(loss))

    failures = 0
    errs = [abs(a - b) / abs(b) for a, b in zip(losses, ref)]
    print("losses graphc %s" % " ".join("%.7g" % l for l in losses))
    print("losses torch  %s" % " ".join("%.7g" % l for l in ref))
    print("loss max rel err %.3g" % max(errs))
    if max(errs) > args.tol:
        print("FAIL: loss error above %g" % args.tol)
        failures += 1
    final = {k: v.detach().numpy() for k, v in P.items()}
    final.update({k: v.numpy() for k, v in S.items()})
    worst = 0.0
    for name, value in sorted(final.items()):
        if name in case.get("unsaved", []):
            continue
        expect = case["graphc"].get(name, lambda a: a)(value)
        saved = name
        for prefix, graphc_prefix in case.get("saved", {}).items():
            if saved.startswith(prefix):
                saved = graphc_prefix + saved[len(prefix):]
        path = os.path.join(wd, "w", saved.replace("/", "_") + ".npy")
        if not os.path.exists(path):
            print("FAIL: %s not saved (%s)" % (name, path))
            failures += 1
            continue
        got = np.load(path)
        if got.shape != expect.shape:
            print("FAIL: %s shape %s, expected %s" % (name, got.shape, expect.shape))
            failures += 1
            continue
        e = rel(got, expect)
        moved = rel(value, w0[name])
        worst = max(worst, e)
        print("weight %-40s rel err %.3g (moved %.3g from init)" % (name, e, moved))
        if e > args.tol:
            print("FAIL: %s error above %g" % (name, args.tol))
            failures += 1
        if name in case.get("frozen", []) and not np.array_equal(got, case["graphc"].get(name, lambda a: a)(w0[name])):
            print("FAIL: frozen %s changed" % name)
            failures += 1
    print("weights max rel err %.3g" % worst)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
