"""PyTorch definitions of the three end-to-end models of issue #2, and their ONNX export.

Models (all NCHW float32, fixed seeds so every export is bit-identical):
  mlp     : input 10 -> Linear(10,100) -> ReLU -> Linear(100,10) -> Softmax   (sparse categorical CE)
  cnn     : input 3x28x28 -> Conv2d(3,32,3) -> ReLU -> MaxPool2d(2) -> Flatten
            -> Linear(5408,10) -> Softmax                                     (sparse categorical CE)
  cnn_bce : the same CNN with a Linear(5408,1) -> Sigmoid head                (binary CE)
  resmlp  : input 10 -> Linear(10,32) -> ReLU -> h + ReLU(Linear(32,32)(h))
            -> Linear(32,10) -> Softmax: a residual connection            (sparse categorical CE)

The exported ONNX graph keeps the final Softmax/Sigmoid (graphc folds it into the loss).
The PyTorch reference training works on the logits instead (``model.head = False``):
F.cross_entropy / F.binary_cross_entropy_with_logits, which is what graphc's folding computes.

Each model's ONNX initializer names are its PyTorch state_dict keys (export_params=True,
do_constant_folding=False); ``initializer_map`` checks that and falls back to matching values.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
OPSET = 13

# One seed per model, so the initial weights of each model do not depend on what else was built.
SEEDS = {"mlp": 1, "cnn": 2, "cnn_bce": 3, "resmlp": 4,
         "resnet18": 5, "mobilenet_v2": 6, "squeezenet1_1": 7, "vgg11": 8,
         "transformer": 9, "transformer_ln17": 9, "unet": 10, "tconv": 11, "lstm": 12,
         "gru": 13, "cnn_bn": 14, "transformer_dropout": 15, "emb_lstm": 16, "split_mlp": 17,
         "act_mlp": 22,
         "shufflenet_v2_x0_5": 18, "mnasnet0_5": 19, "mobilenet_v3_small": 20,
         "efficientnet_b0": 21, "densenet121": 23, "transformer_wide": 24, "pad_cnn": 25,
         "arith_mlp": 26, "googlenet": 27, "vit": 28, "bcast_mlp": 29,
         "causal_cls": 30, "causal_lm": 31, "nano_gpt": 32, "nano_gpt_tied": 32,
         "nano_gpt_trilu": 32, "llama": 33, "llama_gqa": 34, "row_mlp": 35,
         "llama_hf": 36, "math_mlp": 37, "pad_cls": 38, "mask_cls": 39, "mask_cls_hf": 39,
         "kpm_cls": 40, "norm_unet": 41, "shuffle_sr": 42, "ops20": 43, "ops24": 44, "attn23": 45, "attn23_pad": 46, "rope23": 47, "ops28": 48, "local_fn": 49, "sdpa18": 50, "pad_modes": 51, "einsum_attn": 52, "space_depth": 53, "prelu_cnn": 54, "merge_ops": 55, "shrink": 56, "noise_mlp": 57, "resample": 58, "tile": 59, "compare": 60, "cumsum": 61, "conv1d": 62, "conv3d": 63, "unet3d": 64, "resize3d": 65}

# torchvision models (issue #6), small so that a test takes seconds: 10 classes, 32x32 images,
# batch 4, exported in training mode (BatchNormalization with batch statistics and running-stat
# outputs). Dropout is set to 0 so that PyTorch's RNG does not enter the comparison.
TORCHVISION = ("resnet18", "mobilenet_v2", "squeezenet1_1", "vgg11", "shufflenet_v2_x0_5",
               "mnasnet0_5", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "googlenet",
               "vit")
BATCHES = {name: 4 for name in TORCHVISION}
# (ShuffleNet and MnasNet at 64x64 end on 2x2 maps, so that their global mean, ReduceMean over
# axes [2, 3], averages more than one value.)
IMAGE = {"resnet18": 64, "mobilenet_v2": 32, "squeezenet1_1": 32, "vgg11": 32,
         "shufflenet_v2_x0_5": 64, "mnasnet0_5": 64, "mobilenet_v3_small": 64,
         "efficientnet_b0": 64, "densenet121": 64, "googlenet": 64, "vit": 32}
if os.environ.get("GRAPHC_E2E_IMAGE"):  # exploration: e.g. GRAPHC_E2E_IMAGE=64 GRAPHC_E2E_BATCH=8
    IMAGE = {name: int(os.environ["GRAPHC_E2E_IMAGE"]) for name in TORCHVISION}
if os.environ.get("GRAPHC_E2E_BATCH"):
    BATCHES = {name: int(os.environ["GRAPHC_E2E_BATCH"]) for name in TORCHVISION}

# A small torch.nn.TransformerEncoder classifier (issue #6): post-norm layers with ReLU
# feed-forward, dropout 0, batch_first; the encoder output is averaged over the sequence and a
# Linear maps it to 10 classes. "transformer" is exported at opset 13, where torch 1.13 writes
# LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div/Mul/Add; "transformer_ln17" is the same model at
# opset 17, where it writes LayerNormalization. Training mode, like the torchvision models.
TRANSFORMERS = ("transformer", "transformer_ln17")
TRANSFORMER = dict(d_model=32, nhead=4, dim_feedforward=64, num_layers=2, seq=16)
BATCHES.update({name: 4 for name in TRANSFORMERS})
if os.environ.get("GRAPHC_E2E_TRANSFORMER"):  # exploration: d_model,nhead,ff,layers,seq[,batch]
    _t = [int(v) for v in os.environ["GRAPHC_E2E_TRANSFORMER"].split(",")]
    TRANSFORMER = dict(zip(("d_model", "nhead", "dim_feedforward", "num_layers", "seq"), _t[:5]))
    if len(_t) > 5:
        BATCHES.update({name: _t[5] for name in TRANSFORMERS})
OPSETS = {"transformer_ln17": 17, "nano_gpt_trilu": 14}

# Models in ops that torch 1.13 cannot export (opsets 18 to 24): their ONNX graphs are written
# by hand (write_ops20_onnx, write_ops24_onnx below) from the module's parameters, each
# initializer named by its state_dict key, in the form those opsets define; PyTorch trains the
# module itself.
HANDWRITTEN = ("ops20", "ops24", "attn23", "attn23_pad", "rope23", "ops28", "local_fn",
               "sdpa18", "space_depth", "merge_ops", "noise_mlp")

# Recurrent classifiers (issue #6), exported like the transformers (training mode, no constant
# folding: the exporter slices PyTorch's weights into ONNX's gate order in the graph, so the
# initializers keep their state_dict names): a 2-layer LSTM read at its last step, and a
# bidirectional GRU averaged over the sequence.
RECURRENT = ("lstm", "gru")
RECURRENT_SHAPE = dict(seq=12, features=8)
BATCHES.update({name: 8 for name in RECURRENT})

# Token-id models (issue #6): "emb_lstm" is nn.Embedding(50, 8) -> nn.LSTM(8, 16) -> the last
# hidden state -> Linear, the planner benchmark's LSTM classifier in small. Its input is int64
# token ids, which PyTorch exports as Gather(weight, input).
TOKEN_MODELS = {"emb_lstm": dict(vocabulary=50, seq=12), "causal_cls": dict(vocabulary=50, seq=12),
                "causal_lm": dict(vocabulary=50, seq=12), "nano_gpt": dict(vocabulary=50, seq=12),
                "nano_gpt_tied": dict(vocabulary=50, seq=12),
                "nano_gpt_trilu": dict(vocabulary=50, seq=12),
                "llama": dict(vocabulary=50, seq=12), "llama_gqa": dict(vocabulary=50, seq=12),
                "llama_hf": dict(vocabulary=50, seq=12), "pad_cls": dict(vocabulary=6, seq=12),
                "mask_cls": dict(vocabulary=50, seq=12), "mask_cls_hf": dict(vocabulary=50, seq=12),
                "kpm_cls": dict(vocabulary=6, seq=12), "attn23_pad": dict(vocabulary=6, seq=12)}
# Models with a second data input after the token ids, as Hugging Face models take them:
# attention_mask [batch, seq], int64, 1 for a real token and 0 for padding (make_data in
# train_vs_torch.py pads each sequence after a random length).
MASK_INPUT_MODELS = ("mask_cls", "mask_cls_hf")
# Models trained on a class per position (a language model's next tokens: labels [N, seq]).
LANGUAGE_MODELS = ("causal_lm", "nano_gpt", "nano_gpt_tied", "nano_gpt_trilu", "llama",
                   "llama_gqa", "llama_hf")
BATCHES.update({name: 8 for name in TOKEN_MODELS})

# Transposed convolutions (issue #6): "unet" is bench/training_graphs.py's U-Net at two levels,
# 8..32 channels, for per-pixel binary segmentation (Conv/BatchNorm/ReLU and MaxPool down,
# ConvTranspose2d(k=2, s=2) up, Concat skip connections, a 1x1 head and a per-pixel Sigmoid),
# exported in training mode;
# "tconv" runs ConvTranspose2d with pads, output_padding, dilation and no bias. Both train with
# per-pixel binary crossentropy: the labels have the prediction's shape.
UNET = dict(base=8, image=16)
BATCHES.update({"unet": 4, "tconv": 4})
# "norm_unet" (NormUNet below): the normalizations and upsampling of diffusion and segmentation
# U-Nets: nn.GroupNorm, nn.InstanceNorm2d(affine=True), F.interpolate nearest (by scale and
# by size) and bilinear (align_corners=False, uneven factors), an input normalised by
# constant per-channel mean and std; per-pixel binary crossentropy like the U-Net.
NORM_UNET = dict(image=12)
BATCHES.update({"norm_unet": 4})
# "shuffle_sr" (ShuffleSR below): an ESPCN-style super-resolution net, F.pixel_shuffle (ONNX
# DepthToSpace, mode CRD) and F.pixel_unshuffle (a 6-D Reshape and Transpose); per-pixel binary
# crossentropy.
BATCHES.update({"shuffle_sr": 4})
# Models with active dropout (issue #3, the CUDA target against the CPU target; PyTorch's
# dropout RNG cannot be matched, so they are not compared with PyTorch): "cnn_bn" is
# Conv/BatchNorm/ReLU, average pooling with padding (count_include_pad=False) and without,
# Dropout(0.25) and a GlobalAveragePool; "transformer_dropout" is one
# tiny post-norm TransformerEncoderLayer with dropout 0.1 (attention weights, feed-forward and
# residual branches); "transformer_wide" is the same layer with rows wider than a warp (37
# keys per attention row, 40 features per layer-norm row: the CUDA target's warp-per-row
# kernels then give each lane one or two elements, and some lanes none).
DROPOUT = ("cnn_bn", "transformer_dropout", "transformer_wide")
CNN_BN = dict(image=12)
TINY_TRANSFORMER = dict(d_model=16, nhead=2, dim_feedforward=32, num_layers=1, seq=8, dropout=0.1)
DROPOUT_TRANSFORMERS = {
    "transformer_dropout": TINY_TRANSFORMER,
    "transformer_wide": dict(d_model=40, nhead=2, dim_feedforward=48, num_layers=1, seq=37,
                             dropout=0.1),
}
BATCHES.update({name: 4 for name in DROPOUT})
TRAINING_EXPORT = (TORCHVISION + TRANSFORMERS + ("unet", "causal_cls", "causal_lm", "nano_gpt",
                                                 "nano_gpt_tied", "nano_gpt_trilu", "llama",
                   "llama_gqa", "llama_hf", "kpm_cls", "conv1d", "conv3d", "unet3d")
                   + RECURRENT + DROPOUT)

# Which loss graphc is asked to use for each model.
LOSSES = {
    "mlp": "sparse_categorical_crossentropy",
    "cnn": "sparse_categorical_crossentropy",
    "cnn_bce": "binary_crossentropy",
    "resmlp": "sparse_categorical_crossentropy",
    "split_mlp": "sparse_categorical_crossentropy",
    "act_mlp": "sparse_categorical_crossentropy",
    "pad_cnn": "sparse_categorical_crossentropy",
    "pad_modes": "sparse_categorical_crossentropy",
    "einsum_attn": "sparse_categorical_crossentropy",
    "prelu_cnn": "sparse_categorical_crossentropy",
    "shrink": "sparse_categorical_crossentropy",
    "resample": "sparse_categorical_crossentropy",
    "tile": "sparse_categorical_crossentropy",
    "compare": "sparse_categorical_crossentropy",
    "cumsum": "sparse_categorical_crossentropy",
    "conv1d": "sparse_categorical_crossentropy",
    "conv3d": "sparse_categorical_crossentropy",
    "resize3d": "sparse_categorical_crossentropy",
    "arith_mlp": "sparse_categorical_crossentropy",
    "bcast_mlp": "sparse_categorical_crossentropy",
    "row_mlp": "sparse_categorical_crossentropy",
    "math_mlp": "sparse_categorical_crossentropy",
}
LOSSES.update({name: "sparse_categorical_crossentropy"
               for name in TORCHVISION + TRANSFORMERS + RECURRENT + tuple(TOKEN_MODELS)})
LOSSES.update({"unet3d": "binary_crossentropy"})
LOSSES.update({"unet": "binary_crossentropy", "tconv": "binary_crossentropy",
               "norm_unet": "binary_crossentropy", "shuffle_sr": "binary_crossentropy"})
LOSSES.update({name: "sparse_categorical_crossentropy" for name in DROPOUT})
LOSSES.update({name: "sparse_categorical_crossentropy" for name in HANDWRITTEN})


def batch_of(name):
    return BATCHES.get(name, BATCH)


class Classifier(nn.Module):
    """A torchvision network with an optional Softmax head (as the models above)."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.head = True

    def forward(self, x):
        x = self.net(x)
        return torch.softmax(x, dim=1) if self.head else x


def torchvision_net(name):
    import torchvision
    if name == "resnet18":
        return torchvision.models.resnet18(weights=None, num_classes=10)
    if name == "mobilenet_v2":
        import functools
        eps = float(os.environ.get("GRAPHC_E2E_BN_EPS", "1e-5"))
        return torchvision.models.mobilenet_v2(weights=None, num_classes=10, dropout=0.0,
                                               norm_layer=functools.partial(nn.BatchNorm2d, eps=eps))
    if name == "squeezenet1_1":
        return torchvision.models.squeezenet1_1(weights=None, num_classes=10, dropout=0.0)
    if name == "vgg11":
        net = torchvision.models.vgg11(weights=None, num_classes=10, dropout=0.0)
        # 32x32 inputs reach the classifier as 1x1: pool to 1x1 (a GlobalAveragePool) and
        # shrink the classifier accordingly.
        net.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        net.classifier = nn.Sequential(nn.Linear(512, 64), nn.ReLU(True), nn.Dropout(0.0),
                                       nn.Linear(64, 10))
        return net
    if name == "shufflenet_v2_x0_5":  # channel shuffle (Reshape/Transpose), mean over [2, 3]
        return torchvision.models.shufflenet_v2_x0_5(weights=None, num_classes=10)
    if name == "mnasnet0_5":  # inverted residuals, mean over [2, 3]
        return torchvision.models.mnasnet0_5(weights=None, num_classes=10, dropout=0.0)
    if name == "mobilenet_v3_small":  # hardswish, squeeze-and-excitation with hardsigmoid
        return torchvision.models.mobilenet_v3_small(weights=None, num_classes=10, dropout=0.0)
    if name == "efficientnet_b0":  # SiLU (x * sigmoid(x)), squeeze-and-excitation
        # (Stochastic depth 0: torch 1.13 cannot export its Bernoulli, and PyTorch's RNG could
        # not be matched anyway.)
        net = torchvision.models.efficientnet_b0(weights=None, num_classes=10,
                                                 stochastic_depth_prob=0.0)
        net.classifier[0].p = 0.0  # (its dropout rate is fixed by the constructor)
        return net
    if name == "densenet121":  # concatenated dense blocks; Pad (zero) + AveragePool
        return torchvision.models.densenet121(weights=None, num_classes=10)
    if name == "googlenet":  # Inception blocks: 4 concatenated branches, ceil-mode max pools
        # (The auxiliary classifiers off: their outputs are for a weighted extra loss, which
        # graphc's one trained output (--train-output) would leave out anyway.)
        return torchvision.models.googlenet(weights=None, num_classes=10, aux_logits=False,
                                            transform_input=False, init_weights=True,
                                            dropout=0.0)
    if name == "vit":  # a VisionTransformer in small: 8x8 patches (a strided Conv), the class
        # token expanded to the batch and concatenated, a learned position embedding added
        # (broadcast over the batch), 2 pre-norm encoder blocks (nn.MultiheadAttention, exact
        # GELU), the class token's row (Gather) into the head
        return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                    num_heads=2, hidden_dim=32, mlp_dim=64,
                                                    num_classes=10)
    raise ValueError(name)


class TransformerClassifier(nn.Module):
    """TransformerEncoder -> mean over the sequence -> Linear (-> Softmax when head)."""

    def __init__(self, d_model, nhead, dim_feedforward, num_layers, classes=10, dropout=0.0):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=dropout,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, classes)
        self.head = True

    def forward(self, x):
        x = self.fc(self.enc(x).mean(dim=1))
        return torch.softmax(x, dim=1) if self.head else x


class RecurrentClassifier(nn.Module):
    """nn.LSTM(8, 16, 2 layers) -> last step -> Linear, or bidirectional nn.GRU(8, 12) -> mean
    over the sequence -> Linear (-> Softmax when head)."""

    def __init__(self, kind, classes=10):
        super().__init__()
        f = RECURRENT_SHAPE["features"]
        self.kind = kind
        if kind == "lstm":
            self.rnn = nn.LSTM(f, 16, num_layers=2, batch_first=True)
            self.fc = nn.Linear(16, classes)
        else:
            self.rnn = nn.GRU(f, 12, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(24, classes)
        self.head = True

    def forward(self, x):
        out, _ = self.rnn(x)
        x = self.fc(out[:, -1] if self.kind == "lstm" else out.mean(dim=1))
        return torch.softmax(x, dim=1) if self.head else x


class EmbeddingLSTM(nn.Module):
    """nn.Embedding(vocabulary, 8) -> nn.LSTM(8, 16) -> h_n -> Linear(16, classes)."""

    def __init__(self, vocabulary, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocabulary, 8)
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.fc = nn.Linear(16, classes)
        self.head = True

    def forward(self, tokens):
        _, (h, _) = self.rnn(self.emb(tokens))
        x = self.fc(h[-1])
        return torch.softmax(x, dim=1) if self.head else x


class CausalClassifier(nn.Module):
    """A decoder-only (GPT-style) sequence classifier: nn.Embedding(vocabulary, 32) plus a
    learned position table [1, seq, 32] (a broadcast Add), 2 pre-norm TransformerEncoderLayers
    (2 heads, FFN 64, GELU) under a causal mask (nn.Transformer.generate_square_subsequent_mask,
    a registered buffer: torch exports it as a [seq, seq] initializer of 0 and -inf added to
    the scores), the last token's state -> Linear(32, classes). With per_token (causal_lm),
    a language model: every position's state -> Linear(32, vocabulary), trained on the next
    token (labels [N, seq], the per-token crossentropy)."""

    def __init__(self, vocabulary, seq, classes=10, per_token=False):
        super().__init__()
        self.per_token = per_token
        self.emb = nn.Embedding(vocabulary, 32)
        self.pos = nn.Parameter(0.1 * torch.randn(1, seq, 32))
        layer = nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))
        self.fc = nn.Linear(32, classes)
        self.head = True

    def forward(self, tokens):
        h = self.enc(self.emb(tokens) + self.pos, mask=self.mask)
        if self.per_token:  # a language model: every position's next-token distribution
            x = self.fc(h)
            return torch.softmax(x, dim=-1) if self.head else x
        x = self.fc(h[:, -1])
        return torch.softmax(x, dim=1) if self.head else x


class PaddedClassifier(nn.Module):
    """A sequence classifier over padded token ids, its padding mask computed in the forward
    pass as research code writes it: pad = tokens == 0 (Equal); each attention's scores
    masked_fill(pad[:, None, None, :], -inf) (Unsqueeze, Where of a computed mask), so no
    query attends to a padding key; then a mean over the real tokens, (h * keep).sum(1) /
    keep.sum(1) with keep = ~pad (Not, Cast, ReduceSum, Div), and Linear(32, 10).
    nn.Embedding(vocabulary, 32, padding_idx=0) and a learned position table; 2 heads."""

    def __init__(self, vocabulary, seq):
        super().__init__()
        self.emb = nn.Embedding(vocabulary, 32)
        self.pos = nn.Parameter(0.1 * torch.randn(1, seq, 32))
        self.qkv, self.proj = nn.Linear(32, 96), nn.Linear(32, 32)
        self.norm = nn.LayerNorm(32)
        self.fc = nn.Linear(32, 10)
        self.head = True

    def forward(self, tokens):
        pad = tokens == 0
        h = self.emb(tokens) + self.pos
        B, T, C = h.shape
        q, k, v = self.qkv(self.norm(h)).split(C, dim=2)
        q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (C // 2) ** -0.5
        scores = scores.masked_fill(pad[:, None, None, :], float("-inf"))
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + self.proj(y)
        keep = (~pad).float().unsqueeze(-1)
        pooled = (h * keep).sum(1) / keep.sum(1)
        x = self.fc(pooled)
        return torch.softmax(x, dim=1) if self.head else x


class KeyPaddingClassifier(PaddedClassifier):
    """PaddedClassifier's model with its attention an nn.MultiheadAttention(32, 2,
    batch_first=True) given key_padding_mask = tokens == 0: torch 1.13 exports the mask
    expanded to the heads ([batch x heads, 1, keys]), filled into zeros (Where(pad, -inf, 0),
    an additive float mask) and added to the scores by baddbmm; the rest as PaddedClassifier
    (pre-norm, a residual, the mean over the real tokens, Linear(32, 10))."""

    def __init__(self, vocabulary, seq):
        super().__init__(vocabulary, seq)
        del self.qkv, self.proj
        self.attn = nn.MultiheadAttention(32, 2, batch_first=True)

    def forward(self, tokens):
        pad = tokens == 0
        h = self.emb(tokens) + self.pos
        x = self.norm(h)
        y, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        h = h + y
        keep = (~pad).float().unsqueeze(-1)
        pooled = (h * keep).sum(1) / keep.sum(1)
        x = self.fc(pooled)
        return torch.softmax(x, dim=1) if self.head else x


class MaskedClassifier(PaddedClassifier):
    """A sequence classifier fed as Hugging Face encoders are: forward(input_ids,
    attention_mask), the int64 mask 1 for real tokens and 0 for padding. The mask becomes an
    additive bias as BertModel's get_extended_attention_mask builds it, (1.0 -
    mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min (Unsqueeze, Cast, Sub, Mul),
    added to every head's scores; the output is the mean over the real tokens, (h *
    mask).sum(1) / mask.sum(1) (a Cast of the mask before the division). Embedding(50, 32), a
    learned position table, one pre-norm attention block with 2 heads, Linear(32, 10): the
    layers of PaddedClassifier. With `expand_mask` the bias is built as transformers' newer
    AttentionMaskConverter._expand_mask does: the mask expanded to [B, 1, T, T], inverted,
    and masked_fill(inverted.bool(), finfo.min) (Expand, Cast, Sub, Cast to bool, Where)."""

    expand_mask = False

    def forward(self, input_ids, attention_mask):
        h = self.emb(input_ids) + self.pos
        B, T, C = h.shape
        if self.expand_mask:
            expanded = attention_mask[:, None, None, :].expand(B, 1, T, T).to(h.dtype)
            inverted = 1.0 - expanded
            extended = inverted.masked_fill(inverted.to(torch.bool), torch.finfo(h.dtype).min)
        else:
            extended = attention_mask[:, None, None, :].to(h.dtype)
            extended = (1.0 - extended) * torch.finfo(h.dtype).min
        q, k, v = self.qkv(self.norm(h)).split(C, dim=2)
        q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (C // 2) ** -0.5 + extended
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + self.proj(y)
        keep = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        x = self.fc(pooled)
        return torch.softmax(x, dim=1) if self.head else x


class NanoCausalSelfAttention(nn.Module):
    """nanoGPT's CausalSelfAttention (Karpathy's model.py, its non-flash path): one Linear for
    Q, K and V, split; the causal mask a tril(ones) buffer applied with masked_fill(-inf)."""

    def __init__(self, width, heads, seq, mask_in_forward=False):
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.heads, self.width, self.mask_in_forward = heads, width, mask_in_forward
        if not mask_in_forward:
            self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.width, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / float(k.size(-1)) ** 0.5)
        # (mask_in_forward: built in the forward pass, which torch exports as Trilu at opset 14.)
        mask = (torch.tril(torch.ones(T, T)) if self.mask_in_forward
                else self.bias[:, :, :T, :T])
        att = att.masked_fill(mask == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class NanoGPT(nn.Module):
    """nanoGPT in small: token embeddings plus a learned position table, 2 pre-norm blocks
    (LayerNorm, NanoCausalSelfAttention, LayerNorm, Linear-GELU-Linear, residuals), a final
    LayerNorm and an untied Linear head over the vocabulary at every position (trained on the
    next token)."""

    def __init__(self, vocabulary, seq, width=32, heads=2, layers=2, mask_in_forward=False):
        super().__init__()
        self.wte = nn.Embedding(vocabulary, width)
        self.wpe = nn.Parameter(0.02 * torch.randn(1, seq, width))
        self.ln1 = nn.ModuleList([nn.LayerNorm(width) for _ in range(layers)])
        self.attn = nn.ModuleList([NanoCausalSelfAttention(width, heads, seq, mask_in_forward)
                                   for _ in range(layers)])
        self.ln2 = nn.ModuleList([nn.LayerNorm(width) for _ in range(layers)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                                nn.Linear(4 * width, width))
                                  for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocabulary, bias=False)
        self.head = True

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe
        for ln1, attn, ln2, mlp in zip(self.ln1, self.attn, self.ln2, self.mlp):
            x = x + attn(ln1(x))
            x = x + mlp(ln2(x))
        x = self.lm_head(self.ln_f(x))
        return torch.softmax(x, dim=-1) if self.head else x


class LlamaRMSNorm(nn.Module):
    """RMSNorm as LLaMA writes it (PyTorch 1.13 has no nn.RMSNorm): x * rsqrt(mean(x^2) + eps)
    * weight; with divide, T5-style x / sqrt(mean(x^2) + eps) * weight (ONNX Div(x, Sqrt))."""

    def __init__(self, width, eps=1e-6, divide=False):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(width))
        self.eps, self.divide = eps, divide

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True) + self.eps
        return (x / torch.sqrt(ms) if self.divide else x * torch.rsqrt(ms)) * self.weight


class LlamaAttention(nn.Module):
    """LLaMA's attention in small: bias-free Q/K/V/O projections, rotary position embeddings
    (rotate_half form; cos/sin computed in the forward pass from a non-persistent inv_freq
    buffer and torch.arange, which torch exports as Constant/Einsum/Concat/Cos/Sin), a causal
    mask (a non-persistent tril buffer, masked_fill with -inf)."""

    def __init__(self, width, heads, seq, base=10000.0, kv_heads=None):
        super().__init__()
        self.heads, self.width, self.head_dim = heads, width, width // heads
        self.kv_heads = kv_heads or heads
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(width, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(width, width, bias=False)
        self.rotary = True  # (bench/llama_memory.py's baseline turns it off)
        self.hf_rotary = False
        inv = 1.0 / (base ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)), persistent=False)

    @staticmethod
    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    @staticmethod
    def repeat_kv(x, n_rep):
        """Hugging Face's repeat_kv: [B, Hkv, T, d] -> [B, Hkv * n_rep, T, d] (ONNX Unsqueeze,
        Expand over the new inner axis, Reshape)."""
        B, H, T, D = x.shape
        if n_rep == 1:
            return x
        return x[:, :, None, :, :].expand(B, H, n_rep, T, D).reshape(B, H * n_rep, T, D)

    def forward(self, x):
        B, T, C = x.size()
        q = self.q_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.hf_rotary:  # Hugging Face's LlamaRotaryEmbedding: per-batch position ids
            position_ids = torch.arange(T).unsqueeze(0).expand(B, -1)
            inv = self.inv_freq[None, :, None].float().expand(B, -1, 1)
            freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)  # [B, 1, T, d]
        else:
            freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        if self.rotary:
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
        k = self.repeat_kv(k, self.heads // self.kv_heads)
        v = self.repeat_kv(v, self.heads // self.kv_heads)
        att = (q @ k.transpose(-2, -1)) * (1.0 / float(self.head_dim) ** 0.5)
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.o_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Llama(nn.Module):
    """A LLaMA-style language model in small: token embeddings (no position table), 2 pre-norm
    blocks (RMSNorm, rotary causal attention, RMSNorm, SwiGLU feed-forward w2(silu(w1 x) *
    w3 x)), a final T5-style RMSNorm and a bias-free head over the vocabulary. With kv_heads
    (llama_gqa), grouped-query attention: fewer key/value heads, repeated for the queries."""

    def __init__(self, vocabulary, seq, width=32, heads=2, layers=2, hidden=48, kv_heads=None):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.attn_norm = nn.ModuleList([LlamaRMSNorm(width) for _ in range(layers)])
        self.attn = nn.ModuleList([LlamaAttention(width, heads, seq, kv_heads=kv_heads)
                                   for _ in range(layers)])
        self.mlp_norm = nn.ModuleList([LlamaRMSNorm(width) for _ in range(layers)])
        self.w1 = nn.ModuleList([nn.Linear(width, hidden, bias=False) for _ in range(layers)])
        self.w3 = nn.ModuleList([nn.Linear(width, hidden, bias=False) for _ in range(layers)])
        self.w2 = nn.ModuleList([nn.Linear(hidden, width, bias=False) for _ in range(layers)])
        self.norm = LlamaRMSNorm(width, eps=1e-5, divide=True)
        self.lm_head = nn.Linear(width, vocabulary, bias=False)
        self.head = True

    def forward(self, tokens):
        x = self.embed(tokens)
        for i in range(len(self.attn)):
            x = x + self.attn[i](self.attn_norm[i](x))
            h = self.mlp_norm[i](x)
            x = x + self.w2[i](F.silu(self.w1[i](h)) * self.w3[i](h))
        x = self.lm_head(self.norm(x))
        return torch.softmax(x, dim=-1) if self.head else x


class RowMLP(nn.Module):
    """Broadcasts along trailing and inner axes: Linear(10, 24) viewed [B, 4, 6]; a per-row
    gate h * mean(h, -1) ([B, 4, 1], Mul of a trailing broadcast); centring h - mean(h, -1)
    (Sub, copied along the last axis); a trained per-row shift [4, 1] (Add: copied along the
    last axis, then the batch); a per-column gate sigmoid(mean(h, 1)) ([B, 1, 6], Mul along
    an inner axis); the row means expanded to [B, 4, 6] (Expand); flatten -> Linear(24, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 24)
        self.shift = nn.Parameter(0.1 * torch.randn(4, 1))
        self.fc2 = nn.Linear(24, 10)
        self.head = True

    def forward(self, x):
        h = torch.tanh(self.fc1(x)).view(-1, 4, 6)
        rows = h.mean(-1, keepdim=True)
        gated = h * rows + (h - rows) + self.shift
        columns = torch.sigmoid(h.mean(1, keepdim=True))
        y = gated * columns + rows.expand(-1, -1, 6)
        y = self.fc2(y.reshape(-1, 24))
        return torch.softmax(y, dim=1) if self.head else y


class MathMLP(nn.Module):
    """Elementwise math written by hand, as research code does: the input divided by a
    graph-computed table (torch.arange: Range, Mul, Div by a constant table); F.normalize
    (ReduceL2, Clip, Expand, Div by a computed tensor); a hand-written SiLU x / (1 + exp(-x))
    (Neg, Exp, Div); log(1 + h^2) (Mul of a tensor by itself, Log); a fractional power
    (1 + h^2)^0.75 (Pow); an L2 scaling h / sqrt(sum(h^2) + eps) (Pow 2, ReduceSum over the
    last axis, Sqrt, Div of a trailing broadcast); torch.rsqrt, torch.reciprocal and
    0.5 / (1 + h^2) (Div of a scalar constant); h - logsumexp(h) + (amax(h) - amin(h)) / 2
    (ReduceLogSumExp, ReduceMax, ReduceMin); |h - 0.5|, torch.maximum and torch.minimum of
    tensors and of scalars (Abs, Max, Min); a trained per-feature divisor (Div by an
    initializer); then Linear(24, 10) and log_softmax (LogSoftmax: NLLLoss's input, which the
    reference's crossentropy of the logits equals)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 24)
        self.divisor = nn.Parameter(torch.full((24,), 2.0) + 0.1 * torch.randn(24))
        self.fc2 = nn.Linear(24, 10)
        self.head = True

    def forward(self, x):
        spread = torch.arange(1, 11, dtype=torch.float32) * 0.5
        h = self.fc1(x / spread)
        h = 3.0 * F.normalize(h, dim=-1)
        h = h / (1 + torch.exp(-h))
        h = torch.log(1 + h * h) + torch.pow(1 + h * h, 0.75)
        h = h / torch.sqrt(h.pow(2).sum(-1, keepdim=True) + 1e-6)
        h = h * torch.rsqrt(1 + h.pow(2)) + torch.reciprocal(2 + h) + 0.5 / (1 + h * h)
        h = h - torch.logsumexp(h, -1, keepdim=True) + 0.5 * (h.amax(-1, keepdim=True) -
                                                              h.amin(-1, keepdim=True))
        h = h + 0.1 * torch.abs(h - 0.5) + torch.maximum(h, 0.3 * h) - torch.minimum(h, 1 - h)
        h = torch.maximum(h, torch.tensor(-0.5)) + torch.minimum(h, torch.tensor(0.8))
        y = self.fc2(h / self.divisor)
        return F.log_softmax(y, dim=1) if self.head else y


class SplitMLP(nn.Module):
    """Linear(10, 24) -> torch.split into 10/6/8 features (ONNX Split) -> relu, sigmoid, tanh
    -> cat -> Linear(24, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 24)
        self.fc2 = nn.Linear(24, 10)
        self.head = True

    def forward(self, x):
        a, b, c = torch.split(self.fc1(x), [10, 6, 8], dim=1)
        x = self.fc2(torch.cat([torch.relu(a), torch.sigmoid(b), torch.tanh(c)], dim=1))
        return torch.softmax(x, dim=1) if self.head else x


class ActivationMLP(nn.Module):
    """Linear(10, 16) -> LeakyReLU(0.1) -> ELU(0.5) -> SELU -> Softplus -> Softsign ->
    Hardswish -> Hardsigmoid -> SiLU -> GELU, a Linear(16, 16) between each, -> Linear(16, 10):
    the ONNX activation nodes LeakyRelu, Elu, Selu, Softplus, HardSigmoid (hardswish and
    hardsigmoid at opset 13), Sigmoid times its input (SiLU), and the chains torch writes for
    softsign (Abs, Add, Div) and GELU (Div, Erf, Add, Mul, Mul)."""

    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleList([nn.LeakyReLU(0.1), nn.ELU(0.5), nn.SELU(), nn.Softplus(),
                                   nn.Softsign(), nn.Hardswish(), nn.Hardsigmoid(), nn.SiLU(),
                                   nn.GELU()])
        self.fcs = nn.ModuleList([nn.Linear(10, 16)] +
                                 [nn.Linear(16, 16) for _ in range(len(self.acts) - 1)])
        self.out = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        for fc, act in zip(self.fcs, self.acts):
            x = act(fc(x) * 2.0)  # (spread, so that each activation's bends are crossed)
        x = self.out(x)
        return torch.softmax(x, dim=1) if self.head else x


class ArithmeticMLP(nn.Module):
    """Elementwise arithmetic ONNX writes as plain Add/Sub/Mul nodes: GELU's tanh approximation
    (x * x * x, 0.044715 *, +, * sqrt(2 / pi), Tanh, 1 + t, x *, 0.5 *), a shift by a scalar
    (h - 0.25), a reflection (1 - h) and the difference of two computed tensors (a - b):
    Linear(10, 16) -> GELU(tanh) -> Linear(16, 16) -> h - 0.25 -> Linear(16, 16) -> 1 - h,
    minus Linear(16, 16) of the first GELU's output -> Linear(16, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(10, 16), nn.Linear(16, 16)
        self.fc3, self.side = nn.Linear(16, 16), nn.Linear(16, 16)
        self.out = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        g = F.gelu(self.fc1(x) * 2.0, approximate="tanh")
        h = self.fc2(g) - 0.25
        h = 1.0 - self.fc3(h)
        x = self.out(h - self.side(g))
        return torch.softmax(x, dim=1) if self.head else x


class BroadcastMLP(nn.Module):
    """Broadcasts over leading axes (ONNX Add, Sub, Mul and Expand of operands of different
    shapes): a learned per-feature shift and scale (h + shift, * gamma: [B, 16] with [16]), the
    batch mean [1, 16] subtracted from every row and, expanded to [B, 16], added back at half
    weight, and a learned [1, 4, 4] table added to each sample's [4, 4] view:
    Linear(10, 16) -> Tanh -> those -> Linear(16, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.out = nn.Linear(10, 16), nn.Linear(16, 10)
        self.shift = nn.Parameter(0.1 * torch.randn(16))
        self.gamma = nn.Parameter(0.5 + torch.rand(16))
        self.table = nn.Parameter(0.1 * torch.randn(1, 4, 4))
        self.head = True

    def forward(self, x):
        h = (torch.tanh(self.fc1(x)) + self.shift) * self.gamma
        m = h.mean(0, keepdim=True)
        h = h - m + 0.5 * m.expand(x.shape[0], -1)
        h = (h.view(-1, 4, 4) + self.table).flatten(1)
        x = self.out(h)
        return torch.softmax(x, dim=1) if self.head else x


class PadCNN(nn.Module):
    """Explicit padding as ONNX Pad nodes (F.pad: what TensorFlow's SAME padding and hand-written
    PyTorch models export): Conv(3, 8, 3) -> ReLU -> F.pad (1, 2, 0, 1), zeros, uneven on every
    side -> Conv(8, 8, 3, stride 2) -> F.pad (1, 1, 1, 1) with the value 0.5 -> MaxPool(2) ->
    Linear(8 * 7 * 7, 10); 12x12 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.fc = nn.Linear(8 * 3 * 3, 10)
        self.head = True

    def forward(self, x):
        x = torch.relu(self.conv1(x))                  # [B, 8, 10, 10]
        x = F.pad(x, (1, 2, 0, 1))                     # [B, 8, 11, 13]
        x = self.conv2(x)                              # [B, 8, 5, 6]
        x = F.pad(x, (1, 1, 1, 1), value=0.5)          # [B, 8, 7, 8]
        x = F.max_pool2d(x, 2)                         # [B, 8, 3, 4]
        x = self.fc(x[:, :, :, :3].flatten(1))
        return torch.softmax(x, dim=1) if self.head else x


class TConv(nn.Module):
    """ConvTranspose2d's attributes: pads with output_padding, an uneven stride with dilation,
    no bias, groups (2 groups of 1 input and 2 output channels), then a strided Conv2d down
    to a 14x7 map."""

    def __init__(self):
        super().__init__()
        self.t1 = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
        self.t2 = nn.ConvTranspose2d(4, 2, 3, stride=(1, 2), padding=(2, 0), dilation=(2, 1),
                                     output_padding=(0, 1), bias=False)
        self.t3 = nn.ConvTranspose2d(2, 4, 2, stride=2, groups=2)
        self.down = nn.Conv2d(4, 1, (5, 3), stride=(2, 10))
        self.head = True

    def forward(self, x):
        x = self.down(self.t3(torch.tanh(self.t2(torch.relu(self.t1(x))))))
        return torch.sigmoid(x) if self.head else x


def _onnx_model(model, nodes, batch, input_shape, output_dims, opset, extra=(),
                input_type=None):
    """An ONNX model of `nodes` reading "input" [batch, *input_shape] and writing "output"
    [batch, *output_dims]; the initializers are `model`'s state_dict (named by its keys), and
    `extra` (name, array) become Constant nodes (shape arguments, which train nothing)."""
    from onnx import helper, numpy_helper, TensorProto
    inits = [numpy_helper.from_array(v.detach().numpy(), k) for k, v in
             model.state_dict().items()]
    constants = [helper.make_node("Constant", [], [k], value=numpy_helper.from_array(
        np.asarray(v), k)) for k, v in extra]
    source = helper.make_tensor_value_info("input", input_type or TensorProto.FLOAT,
                                           [batch] + list(input_shape))
    graph = helper.make_graph(
        constants + nodes, "handwritten", [source],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch] + list(output_dims))],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9 if opset < 21 else 11)


def _onnx_linear(x, name, bias):
    """The ONNX nodes of nn.Linear `name` (its state_dict's name.weight, name.bias) on x, as
    torch exports it on a sequence: MatMul by the transposed weight, then Add the bias; the
    result is named `name`."""
    from onnx import helper
    out = [helper.make_node("Transpose", [name + ".weight"], [name + "_wt"], perm=[1, 0]),
           helper.make_node("MatMul", [x, name + "_wt"], [name + ("_mm" if bias else "")])]
    if bias:
        out.append(helper.make_node("Add", [name + "_mm", name + ".bias"], [name]))
    return out


def _onnx_heads(x):
    """The ONNX nodes viewing x [B, S, H * D] as heads [B, H, S, D] (Reshape by the
    "heads_shape" constant, Transpose), named x + "_heads"."""
    from onnx import helper
    return [helper.make_node("Reshape", [x, "heads_shape"], [x + "_split"]),
            helper.make_node("Transpose", [x + "_split"], [x + "_heads"], perm=[0, 2, 1, 3])]


class Ops20(nn.Module):
    """What opsets 18 to 20 added, on a [B, 4, 6, 6] image (ONNX written by hand at opset 20):
    Conv(4, 8, 3, pad 1) -> GroupNormalization-18 (4 groups; its scale and bias have one
    element per group, as before opset 21) -> Mish-18 -> Pad-18 with an axes input [-1, 2]
    (W by (1, 0), H by (2, 1)) -> Pad-19 mode wrap of W by (2, 1) (circular padding) ->
    Conv(8, 10, 3, stride 2) -> Split-18 by num_outputs 3 into
    4, 4 and 2 channels (torch.split(h, 4)) -> Gelu-20 tanh, Gelu-20 exact, Sigmoid -> Concat
    -> LayerNormalization over the last two axes (axis -2, a [4, 3] scale, no bias) ->
    ReduceMean-18 of axis 3 (axes input, keepdims 0) -> Flatten -> Gemm(40, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.gn_scale = nn.Parameter(1.0 + 0.2 * torch.randn(4))
        self.gn_bias = nn.Parameter(0.2 * torch.randn(4))
        self.conv2 = nn.Conv2d(8, 10, 3, stride=2)
        self.ln_scale = nn.Parameter(1.0 + 0.2 * torch.randn(4, 4))
        self.fc = nn.Linear(40, 10)
        self.head = True

    def forward(self, x):
        h = self.conv1(x)
        groups = F.group_norm(h, 4, eps=1e-5).view(h.shape[0], 4, -1)
        h = (groups * self.gn_scale[:, None] + self.gn_bias[:, None]).view(h.shape)
        h = F.pad(F.pad(F.mish(h), (1, 0, 2, 1)), (2, 1, 0, 0), mode="circular")
        a, b, c = torch.split(self.conv2(h), 4, dim=1)
        # (Each part nonlinear: a shift of a channel that reached the layer norm directly
        # would change nothing, and Adam would turn both runs' float32 noise in the true zero
        # gradient of its bias into lr-sized steps.)
        h = torch.cat([F.gelu(a, approximate="tanh"), F.gelu(b), torch.sigmoid(c)], dim=1)
        h = F.layer_norm(h, (4, 4), weight=self.ln_scale, eps=1e-5).mean(3)
        x = self.fc(h.flatten(1))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [
            n("Conv", ["input", "conv1.weight", "conv1.bias"], ["c1"], pads=[1, 1, 1, 1]),
            n("GroupNormalization", ["c1", "gn_scale", "gn_bias"], ["gn"], num_groups=4),
            n("Mish", ["gn"], ["mish"]),
            n("Pad", ["mish", "pads", "", "pad_axes"], ["padded"]),
            n("Pad", ["padded", "wrap_pads", "", "wrap_axes"], ["wrapped"], mode="wrap"),
            n("Conv", ["wrapped", "conv2.weight", "conv2.bias"], ["c2"], strides=[2, 2]),
            n("Split", ["c2"], ["a", "b", "c"], axis=1, num_outputs=3),
            n("Gelu", ["a"], ["ga"], approximate="tanh"),
            n("Gelu", ["b"], ["gb"]),
            n("Sigmoid", ["c"], ["gc"]),
            n("Concat", ["ga", "gb", "gc"], ["cat"], axis=1),
            n("LayerNormalization", ["cat", "ln_scale"], ["ln"], axis=-2),
            n("ReduceMean", ["ln", "mean_axes"], ["mean"], keepdims=0),
            n("Flatten", ["mean"], ["flat"]),
            n("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
            n("Softmax", ["logits"], ["output"], axis=1),
        ]
        extra = [("pads", np.array([1, 2, 0, 1], np.int64)),
                 ("pad_axes", np.array([-1, 2], np.int64)),
                 ("wrap_pads", np.array([2, 1], np.int64)),
                 ("wrap_axes", np.array([3], np.int64)),
                 ("mean_axes", np.array([3], np.int64))]
        onnx.save(_onnx_model(self, nodes, batch, (4, 6, 6), (10,), 20, extra), path)


class Ops24(nn.Module):
    """What opsets 21 to 24 added, on a [B, 6, 8] sequence (ONNX written by hand at opset 24):
    Linear(8, 12) (MatMul of the transposed weight, Add) -> Swish-24 with alpha 0.5 ->
    RMSNormalization-23 over the last two axes (axis -2, a [6, 12] scale) -> Gelu ->
    GroupNormalization-21 (3 groups of 2 of the 6 channels, a scale and bias per channel) ->
    Flatten -> Gemm(72, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 12)
        self.rms_scale = nn.Parameter(1.0 + 0.2 * torch.randn(6, 12))
        self.gn = nn.GroupNorm(3, 6, eps=1e-4)
        with torch.no_grad():
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-0.5, 0.5)
        self.fc = nn.Linear(72, 10)
        self.head = True

    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(0.5 * h)
        h = h * torch.rsqrt(h.pow(2).mean((-2, -1), keepdim=True) + 1e-6) * self.rms_scale
        h = self.gn(F.gelu(h))
        x = self.fc(h.flatten(1))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [
            n("Transpose", ["fc1.weight"], ["w1t"], perm=[1, 0]),
            n("MatMul", ["input", "w1t"], ["mm"]),
            n("Add", ["mm", "fc1.bias"], ["h1"]),
            n("Swish", ["h1"], ["swish"], alpha=0.5),
            n("RMSNormalization", ["swish", "rms_scale"], ["rms"], axis=-2, epsilon=1e-6),
            n("Gelu", ["rms"], ["gelu"]),
            n("GroupNormalization", ["gelu", "gn.weight", "gn.bias"], ["gn"], num_groups=3,
              epsilon=1e-4),
            n("Flatten", ["gn"], ["flat"]),
            n("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
            n("Softmax", ["logits"], ["output"], axis=1),
        ]
        onnx.save(_onnx_model(self, nodes, batch, (6, 8), (10,), 24), path)


class Attention23(nn.Module):
    """ONNX's Attention (opset 23) in both its forms, on a [B, 8, 16] sequence (ONNX written by
    hand at opset 23): Q, K, V projections (bias-free; 2 query heads of 8, 1 key/value head:
    multi-query attention) into a causal Attention of 3-D [B, S, H * D] inputs with q_num_heads
    2 and kv_num_heads 1, then an output projection and a residual; then Q, K, V of the result
    viewed as [B, 2, 8, 8] heads (Reshape, Transpose) into a non-causal Attention of 4-D inputs
    with scale 0.3 and a constant bool attn_mask [8, 8], a band (query i sees keys i - 2 to
    i + 2), transposed and viewed back; the mean over the sequence (ReduceMean-18) ->
    Gemm(16, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.q1 = nn.Linear(16, 16, bias=False)
        self.k1 = nn.Linear(16, 8, bias=False)
        self.v1 = nn.Linear(16, 8, bias=False)
        self.o1 = nn.Linear(16, 16, bias=False)
        self.q2 = nn.Linear(16, 16)
        # (No key bias: softmax ignores a constant per query row, so its true gradient is 0,
        # and Adam would turn both runs' float32 noise there into lr-sized steps.)
        self.k2 = nn.Linear(16, 16, bias=False)
        self.v2 = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        B, S, _ = x.shape
        heads = lambda t, h: t.view(B, S, h, -1).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q1(x), 2), heads(self.k1(x), 1), heads(self.v1(x), 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(8)  # K, V broadcast over the 2 query heads
        causal = torch.ones(S, S, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        h = x + self.o1((torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, S, 16))
        q, k, v = heads(self.q2(h), 2), heads(self.k2(h), 2), heads(self.v2(h), 2)
        band = (torch.arange(S)[:, None] - torch.arange(S)[None, :]).abs() <= 2
        scores = (0.3 * q @ k.transpose(-1, -2)).masked_fill(~band, float("-inf"))
        h = (torch.softmax(scores, -1) @ v).transpose(1, 2)
        x = self.fc(h.reshape(B, S, 16).mean(1))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = _onnx_linear("input", "q1", False) + _onnx_linear("input", "k1", False) + \
            _onnx_linear("input", "v1", False) + [
                n("Attention", ["q1", "k1", "v1"], ["a1"], is_causal=1, q_num_heads=2,
                  kv_num_heads=1)] + _onnx_linear("a1", "o1", False) + [
                n("Add", ["input", "o1"], ["h"])] + \
            _onnx_linear("h", "q2", True) + _onnx_linear("h", "k2", False) + \
            _onnx_linear("h", "v2", True) + \
            _onnx_heads("q2") + _onnx_heads("k2") + _onnx_heads("v2") + [
                n("Attention", ["q2_heads", "k2_heads", "v2_heads", "band"], ["a2"], scale=0.3),
                n("Transpose", ["a2"], ["a2_seq"], perm=[0, 2, 1, 3]),
                n("Reshape", ["a2_seq", "merge_shape"], ["a2_merged"]),
                n("ReduceMean", ["a2_merged", "mean_axes"], ["mean"], keepdims=0),
                n("Gemm", ["mean", "fc.weight", "fc.bias"], ["logits"], transB=1),
                n("Softmax", ["logits"], ["output"], axis=1)]
        extra = [("heads_shape", np.array([batch, 8, 2, 8], np.int64)),
                 ("merge_shape", np.array([batch, 8, 16], np.int64)),
                 ("mean_axes", np.array([1], np.int64)),
                 ("band", np.abs(np.arange(8)[:, None] - np.arange(8)[None, :]) <= 2)]
        onnx.save(_onnx_model(self, nodes, batch, (8, 16), (10,), 23, extra), path)


class Attention23Pad(nn.Module):
    """ONNX's Attention (opset 23) with a padding mask computed from the token ids, as
    Hugging Face's models mask padded batches (ONNX written by hand): Embedding(6, 16) of the
    ids (id 0 is padding, about 1 in 6) -> Q, K, V projections -> a 3-D Attention of 2 heads
    whose bool attn_mask is Unsqueeze(Not(Equal(ids, 0))), [B, 1, 1, 12]: the padded keys are
    not attended -> the mean over the sequence -> Gemm(16, 10) -> Softmax."""

    def __init__(self, vocabulary, seq):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, 16)
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16, bias=False)  # (no key bias: see Attention23)
        self.v = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)
        self.head = True

    def forward(self, ids):
        x = self.embed(ids)
        B, S, _ = x.shape
        heads = lambda t: t.view(B, S, 2, 8).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        keep = (ids != 0)[:, None, None, :]
        scores = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(~keep, float("-inf"))
        h = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, S, 16)
        x = self.fc(h.mean(1))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper, TensorProto
        n = helper.make_node

        nodes = [n("Gather", ["embed.weight", "input"], ["x"])] + _onnx_linear("x", "q", True) + \
            _onnx_linear("x", "k", False) + _onnx_linear("x", "v", True) + [
                n("Equal", ["input", "zero"], ["is_pad"]),
                n("Not", ["is_pad"], ["keep"]),
                n("Unsqueeze", ["keep", "mask_axes"], ["mask"]),
                n("Attention", ["q", "k", "v", "mask"], ["a"], q_num_heads=2, kv_num_heads=2),
                n("ReduceMean", ["a", "mean_axes"], ["mean"], keepdims=0),
                n("Gemm", ["mean", "fc.weight", "fc.bias"], ["logits"], transB=1),
                n("Softmax", ["logits"], ["output"], axis=1)]
        extra = [("zero", np.array(0, np.int64)), ("mask_axes", np.array([1, 2], np.int64)),
                 ("mean_axes", np.array([1], np.int64))]
        onnx.save(_onnx_model(self, nodes, batch, (12,), (10,), 23, extra,
                              input_type=TensorProto.INT64), path)



def _causal_attention_classifier(model, q, k, v):
    """softmax(q k^T / sqrt(8), causal) v of [B, 2, S, 8] heads, merged to [B, S, 16], the mean
    over the sequence, model.fc, and the softmax head unless model.head is off."""
    B, _, S, _ = q.shape
    scores = q @ k.transpose(-1, -2) / math.sqrt(8)
    scores = scores.masked_fill(~torch.ones(S, S, dtype=torch.bool).tril(), float("-inf"))
    h = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(B, S, 16)
    x = model.fc(h.mean(1))
    return torch.softmax(x, dim=1) if model.head else x


def _rope_reference(x, cos, sin, interleaved, rot):
    """ONNX RotaryEmbedding's definition (docs/Changelog.md, RotaryEmbedding-23) on x
    [B, S, H, D] with cos, sin [S, rot / 2]."""
    part, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = part[..., 0::2], part[..., 1::2]
    else:
        x1, x2 = part[..., : rot // 2], part[..., rot // 2:]
    cos, sin = cos[:, None, :], sin[:, None, :]
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if interleaved:
        rotated = torch.stack([real, imag], -1).reshape(part.shape)
    else:
        rotated = torch.cat([real, imag], -1)
    return torch.cat([rotated, rest], -1)


class Rope23(nn.Module):
    """ONNX's RotaryEmbedding (opset 23), on a [B, 8, 16] sequence (ONNX written by hand at
    opset 23): the queries' projection rotated in its 3-D form (num_heads 2 of 8 features,
    halves, caches [12, 4] read at constant position_ids 2..9), the keys' in the 4-D form
    after Reshape and Transpose (interleaved pairs, only the first 4 of each head's 8
    features: rotary_embedding_dim 4, caches [B, 8, 2] without position_ids); a causal
    Attention of the 4-D heads; the mean over the sequence -> Gemm(16, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16, bias=False)
        self.k = nn.Linear(16, 16, bias=False)
        self.v = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)
        self.head = True

    @staticmethod
    def caches(positions, half):
        angles = positions[:, None] * 10000.0 ** (-np.arange(half) / half)
        return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)

    def forward(self, x):
        B, S, _ = x.shape
        qc, qs = (torch.from_numpy(t[2:10]) for t in self.caches(np.arange(12.0), 4))
        kc, ks = (torch.from_numpy(t) for t in self.caches(np.arange(8.0), 2))
        q = _rope_reference(self.q(x).view(B, S, 2, 8), qc, qs, False, 8).transpose(1, 2)
        k = _rope_reference(self.k(x).view(B, S, 2, 8), kc, ks, True, 4).transpose(1, 2)
        v = self.v(x).view(B, S, 2, 8).transpose(1, 2)
        return _causal_attention_classifier(self, q, k, v)

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = _onnx_linear("input", "q", False) + _onnx_linear("input", "k", False) + \
            _onnx_linear("input", "v", True) + [
                n("RotaryEmbedding", ["q", "q_cos", "q_sin", "positions"], ["q_rot"],
                  num_heads=2)] + _onnx_heads("q_rot") + _onnx_heads("k") + [
                n("RotaryEmbedding", ["k_heads", "k_cos", "k_sin"], ["k_rot"], interleaved=1,
                  rotary_embedding_dim=4)] + _onnx_heads("v") + [
                n("Attention", ["q_rot_heads", "k_rot", "v_heads"], ["a"], is_causal=1),
                n("Transpose", ["a"], ["a_seq"], perm=[0, 2, 1, 3]),
                n("Reshape", ["a_seq", "merge_shape"], ["merged"]),
                n("ReduceMean", ["merged", "mean_axes"], ["mean"], keepdims=0),
                n("Gemm", ["mean", "fc.weight", "fc.bias"], ["logits"], transB=1),
                n("Softmax", ["logits"], ["output"], axis=1)]
        q_cos, q_sin = self.caches(np.arange(12.0), 4)
        k_cos, k_sin = self.caches(np.arange(8.0), 2)
        extra = [("heads_shape", np.array([batch, 8, 2, 8], np.int64)),
                 ("merge_shape", np.array([batch, 8, 16], np.int64)),
                 ("mean_axes", np.array([1], np.int64)),
                 ("positions", np.tile(np.arange(2, 10, dtype=np.int64), (batch, 1))),
                 ("q_cos", q_cos), ("q_sin", q_sin),
                 ("k_cos", np.tile(k_cos, (batch, 1, 1))), ("k_sin", np.tile(k_sin, (batch, 1, 1)))]
        onnx.save(_onnx_model(self, nodes, batch, (8, 16), (10,), 23, extra), path)


class Ops28(nn.Module):
    """Opset 28's SwiGLU and Celu (ONNX written by hand at opset 28): Linear(10, 32) -> Split
    by num_outputs 2 into a gate and a value -> SwiGLU with alpha 1.5 (gate * sigmoid(1.5
    gate) * value) -> Linear(16, 16) -> two SwiGLU halves again with alpha 1 -> Celu with
    alpha 0.7 -> Gemm(8, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.fc2 = nn.Linear(16, 16)
        self.fc = nn.Linear(8, 10)
        self.head = True

    def forward(self, x):
        a, b = self.fc1(x).chunk(2, dim=1)
        h = self.fc2(a * torch.sigmoid(1.5 * a) * b)
        a, b = h.chunk(2, dim=1)
        x = self.fc(F.celu(F.silu(a) * b, alpha=0.7))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [
            n("Gemm", ["input", "fc1.weight", "fc1.bias"], ["h1"], transB=1),
            n("Split", ["h1"], ["a1", "b1"], axis=1, num_outputs=2),
            n("SwiGLU", ["a1", "b1"], ["g1"], alpha=1.5),
            n("Gemm", ["g1", "fc2.weight", "fc2.bias"], ["h2"], transB=1),
            n("Split", ["h2"], ["a2", "b2"], axis=-1, num_outputs=2),
            n("SwiGLU", ["a2", "b2"], ["g2"]),
            n("Celu", ["g2"], ["c"], alpha=0.7),
            n("Gemm", ["c", "fc.weight", "fc.bias"], ["logits"], transB=1),
            n("Softmax", ["logits"], ["output"], axis=1),
        ]
        onnx.save(_onnx_model(self, nodes, batch, (10,), (10,), 28), path)


class LocalFunctions(nn.Module):
    """ONNX model-local functions (ModelProto.functions, as onnxscript and the dynamo exporter
    write them when they do not inline), written by hand at opset 18: a function "Block"
    (domain "local") calls a function "LinearAct" twice, LeakyRelu(X W^T + B) whose alpha is
    a function attribute: 0.1 at the first call, the function's default 0.2 (its
    attribute_proto, IR 9) at the second; Block returns the sum of the two. The graph calls
    Block on the input, then Gemm(16, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        h = F.leaky_relu(self.fc1(x), 0.1)
        h = h + F.leaky_relu(self.fc2(h), 0.2)
        x = self.fc(h)
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        opsets = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]
        alpha = helper.make_attribute("alpha", 0.0)
        alpha.ref_attr_name = "alpha"
        act = n("LeakyRelu", ["A"], ["Y"])
        act.attribute.append(alpha)
        linear_act = helper.make_function(
            "local", "LinearAct", ["X", "W", "B"], ["Y"],
            [n("Transpose", ["W"], ["Wt"], perm=[1, 0]), n("MatMul", ["X", "Wt"], ["M"]),
             n("Add", ["M", "B"], ["A"]), act], opsets, attributes=["alpha"])
        # The default alpha = 0.2 as FunctionProto.attribute_proto (field 11), which onnx 1.12's
        # IR 8 schema lacks: appended as the field's wire bytes.
        default = helper.make_attribute("alpha", 0.2).SerializeToString()
        wire = linear_act.SerializeToString() + b"\x5a" + bytes([len(default)]) + default
        linear_act = onnx.FunctionProto.FromString(wire)
        block = helper.make_function(
            "local", "Block", ["X", "W1", "B1", "W2", "B2"], ["Y"],
            [n("LinearAct", ["X", "W1", "B1"], ["H"], domain="local", alpha=0.1),
             n("LinearAct", ["H", "W2", "B2"], ["G"], domain="local"),
             n("Add", ["H", "G"], ["Y"])], opsets)
        nodes = [n("Block", ["input", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"],
                   ["block"], domain="local", name="block"),
                 n("Gemm", ["block", "fc.weight", "fc.bias"], ["logits"], transB=1),
                 n("Softmax", ["logits"], ["output"], axis=1)]
        model = _onnx_model(self, nodes, batch, (10,), (10,), 18)
        model.opset_import.append(helper.make_opsetid("local", 1))
        model.functions.extend([linear_act, block])
        onnx.save(model, path)


class Sdpa18(nn.Module):
    """F.scaled_dot_product_attention(q, k, v, is_causal=True) as torch's dynamo exporter
    writes it at opset 18 (onnxscript's decomposition, constants folded), by hand: K^T as
    Reshape to [-1, S, D], Transpose, Reshape back to [B, H, D, S]; Q and K^T each multiplied by
    sqrt(1 / sqrt(D)) before their MatMul (for stability); the causal mask a constant [S, S]
    of 0 and -inf added to the scores; Softmax; MatMul by V. On a [B, 8, 16] sequence:
    bias-free Q, K, V projections into 2 heads of 8, that attention, the heads merged, the
    mean over the sequence -> Gemm(16, 10) -> Softmax."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16, bias=False)
        self.k = nn.Linear(16, 16, bias=False)
        self.v = nn.Linear(16, 16, bias=False)
        self.fc = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        B, S, _ = x.shape
        heads = lambda t: t.view(B, S, 2, 8).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        return _causal_attention_classifier(self, q, k, v)

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = _onnx_linear("input", "q", False) + _onnx_linear("input", "k", False) + \
            _onnx_linear("input", "v", False) + _onnx_heads("q") + _onnx_heads("k") + \
            _onnx_heads("v") + [
                n("Reshape", ["k_heads", "squeezed_shape"], ["k_squeezed"]),
                n("Transpose", ["k_squeezed"], ["k_squeezed_t"], perm=[0, 2, 1]),
                n("Reshape", ["k_squeezed_t", "kt_shape"], ["k_t"]),
                n("Mul", ["q_heads", "root_scale"], ["q_scaled"]),
                n("Mul", ["k_t", "root_scale"], ["k_t_scaled"]),
                n("MatMul", ["q_scaled", "k_t_scaled"], ["scores"]),
                n("Add", ["scores", "causal_mask"], ["masked"]),
                n("Softmax", ["masked"], ["probabilities"], axis=-1),
                n("MatMul", ["probabilities", "v_heads"], ["a"]),
                n("Transpose", ["a"], ["a_seq"], perm=[0, 2, 1, 3]),
                n("Reshape", ["a_seq", "merge_shape"], ["merged"]),
                n("ReduceMean", ["merged", "mean_axes"], ["mean"], keepdims=0),
                n("Gemm", ["mean", "fc.weight", "fc.bias"], ["logits"], transB=1),
                n("Softmax", ["logits"], ["output"], axis=1)]
        extra = [("heads_shape", np.array([batch, 8, 2, 8], np.int64)),
                 ("squeezed_shape", np.array([-1, 8, 8], np.int64)),
                 ("kt_shape", np.array([batch, 2, 8, 8], np.int64)),
                 ("root_scale", np.array(math.sqrt(1 / math.sqrt(8)), np.float32)),
                 ("causal_mask", np.where(np.tri(8, dtype=bool), 0.0, -np.inf)
                  .astype(np.float32)),
                 ("merge_shape", np.array([batch, 8, 16], np.int64)),
                 ("mean_axes", np.array([1], np.int64))]
        onnx.save(_onnx_model(self, nodes, batch, (8, 16), (10,), 18, extra), path)


class PadModes(nn.Module):
    """F.pad's other modes, as torch 1.13 exports them: Conv(3, 6, 3) -> ReLU -> reflect
    padding (W by 1 and 2, H by 2 and 1: ONNX Pad mode reflect) -> Conv(6, 6, 3) -> Tanh ->
    replicate padding (W by 2 and 0, H by 1 and 1: mode edge) -> Conv(6, 4, 3, stride 2) ->
    Linear(4 * 5 * 5, 10); 10x10 images. (Circular padding is left out: torch 1.13 exports it
    as Slices and Concats that pad the other side; Ops20 tests opset 19's mode wrap.)"""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.conv2 = nn.Conv2d(6, 6, 3)
        self.conv3 = nn.Conv2d(6, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 5 * 5, 10)
        self.head = True

    def forward(self, x):
        x = F.pad(torch.relu(self.conv1(x)), (1, 2, 2, 1), mode="reflect")   # [B, 6, 11, 11]
        x = F.pad(torch.tanh(self.conv2(x)), (2, 0, 1, 1), mode="replicate")  # [B, 6, 11, 11]
        x = self.fc(self.conv3(x).flatten(1))                                  # [B, 4, 5, 5]
        return torch.softmax(x, dim=1) if self.head else x


class EinsumAttention(nn.Module):
    """Attention written with torch.einsum, as research code writes it (torch 1.13 exports each
    as an ONNX Einsum of computed tensors): the query projection "bsd,ed->bse" of a trained
    [16, 16] weight, keys and values by nn.Linear, the scores "bqhd,bkhd->bhqk" over 2 heads of
    8, softmax, the output "bhqk,bkhd->bqhd", the sum over the sequence "bsd->bd" (one operand:
    a sum) / S, a head "...d,cd->...c" (an ellipsis), softmax."""

    def __init__(self):
        super().__init__()
        self.wq = nn.Parameter(0.25 * torch.randn(16, 16))
        self.k = nn.Linear(16, 16, bias=False)
        self.v = nn.Linear(16, 16)
        self.wc = nn.Parameter(0.25 * torch.randn(10, 16))
        self.head = True

    def forward(self, x):
        B, S, _ = x.shape
        q = torch.einsum("bsd,ed->bse", x, self.wq).view(B, S, 2, 8)
        k, v = self.k(x).view(B, S, 2, 8), self.v(x).view(B, S, 2, 8)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(8)
        h = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), v).reshape(B, S, 16)
        x = torch.einsum("...d,cd->...c", torch.einsum("bsd->bd", h) / S, self.wc)
        return torch.softmax(x, dim=1) if self.head else x


class SpaceDepth(nn.Module):
    """SpaceToDepth and DepthToSpace in mode DCR, TensorFlow's space_to_depth and depth_to_space
    as tf2onnx writes them (ONNX written by hand at opset 13): [B, 4, 6, 6] -> SpaceToDepth(2)
    -> Conv(16, 16, 1) -> DepthToSpace(2, DCR) -> Conv(4, 4, 3) -> Gemm(64, 10) -> Softmax;
    PyTorch computes the two as ONNX's reference definitions (views and permutes)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 16, 1)
        self.conv2 = nn.Conv2d(4, 4, 3)
        self.fc = nn.Linear(64, 10)
        self.head = True

    def forward(self, x):
        B, C, H, W = x.shape
        x = x.view(B, C, H // 2, 2, W // 2, 2).permute(0, 3, 5, 1, 2, 4).reshape(B, 4 * C, H // 2,
                                                                              W // 2)
        x = self.conv1(x)
        x = x.view(B, 2, 2, C, H // 2, W // 2).permute(0, 3, 4, 1, 5, 2).reshape(B, C, H, W)
        x = self.fc(torch.relu(self.conv2(x)).flatten(1))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [n("SpaceToDepth", ["input"], ["s2d"], blocksize=2),
                 n("Conv", ["s2d", "conv1.weight", "conv1.bias"], ["c1"]),
                 n("DepthToSpace", ["c1"], ["d2s"], blocksize=2, mode="DCR"),
                 n("Conv", ["d2s", "conv2.weight", "conv2.bias"], ["c2"]),
                 n("Relu", ["c2"], ["r"]),
                 n("Flatten", ["r"], ["flat"]),
                 n("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
                 n("Softmax", ["logits"], ["output"], axis=1)]
        onnx.save(_onnx_model(self, nodes, batch, (4, 6, 6), (10,), 13), path)


class PReLUNet(nn.Module):
    """nn.PReLU as torch 1.13 exports it (ONNX PRelu): Conv(3, 6, 3) -> PReLU(6) (a slope per
    channel, the weight Unsqueezed to [6, 1, 1]) -> Conv(6, 4, 3, stride 2) -> PReLU() (one
    slope) -> Linear(4 * 3 * 3, 16) -> PReLU(16) (per feature of a vector) -> Linear(16, 10);
    10x10 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.act1 = nn.PReLU(6, init=0.2)
        self.conv2 = nn.Conv2d(6, 4, 3, stride=2)
        self.act2 = nn.PReLU(init=0.1)
        self.fc1 = nn.Linear(4 * 3 * 3, 16)
        self.act3 = nn.PReLU(16, init=0.3)
        self.fc2 = nn.Linear(16, 10)
        with torch.no_grad():  # slopes of their own
            self.act1.weight.uniform_(0.05, 0.4)
            self.act3.weight.uniform_(0.05, 0.4)
        self.head = True

    def forward(self, x):
        x = self.act2(self.conv2(self.act1(self.conv1(x))))
        x = self.fc2(self.act3(self.fc1(x.flatten(1))))
        return torch.softmax(x, dim=1) if self.head else x


class MergeOps(nn.Module):
    """Variadic merges and a global max pool, as tf2onnx and Keras converters write them (ONNX
    written by hand at opset 13): three convolutions of a [B, 3, 6, 6] image summed by one Sum
    node, ReLU, the Mean of that and the first convolution, a per-channel shift [4, 1, 1]
    broadcast into a second Sum, GlobalMaxPool (nn.AdaptiveMaxPool2d(1)), Flatten, Gemm(4, 10),
    Softmax."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(3, 4, 1)
        self.c = nn.Conv2d(3, 4, 3, padding=2, dilation=2)
        self.shift = nn.Parameter(0.2 * torch.randn(4, 1, 1))
        self.fc = nn.Linear(4, 10)
        self.head = True

    def forward(self, x):
        a = self.a(x)
        h = torch.relu(a + self.b(x) + self.c(x))
        h = (h + a) / 2 + self.shift
        x = self.fc(h.amax(dim=(2, 3)))
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [n("Conv", ["input", "a.weight", "a.bias"], ["ca"], pads=[1, 1, 1, 1]),
                 n("Conv", ["input", "b.weight", "b.bias"], ["cb"]),
                 n("Conv", ["input", "c.weight", "c.bias"], ["cc"], pads=[2, 2, 2, 2],
                   dilations=[2, 2]),
                 n("Sum", ["ca", "cb", "cc"], ["total"]),
                 n("Relu", ["total"], ["r"]),
                 n("Mean", ["r", "ca"], ["mean"]),
                 n("Sum", ["mean", "shift"], ["shifted"]),
                 n("GlobalMaxPool", ["shifted"], ["pooled"]),
                 n("Flatten", ["pooled"], ["flat"]),
                 n("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], transB=1),
                 n("Softmax", ["logits"], ["output"], axis=1)]
        onnx.save(_onnx_model(self, nodes, batch, (3, 6, 6), (10,), 13), path)


def _graphc_hashes(count, op_id, step, seed=0):
    """splitmix64(key ^ i) for i < count: graphc's counter-based draws (dropout_mask.h) of op
    `op_id` (the ONNX node's index) at step `step`, in numpy's wrapping uint64 arithmetic."""
    def mix(z):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    with np.errstate(over="ignore"):
        key = mix(mix(mix(np.uint64(seed)) ^ np.uint64(op_id)) ^ np.uint64(step))
        return mix(np.arange(count, dtype=np.uint64) ^ key)


def graphc_normal(shape, op_id, step):
    """graph.random_normal's standard normals (Box-Muller in float32) over `shape`."""
    h = _graphc_hashes(int(np.prod(shape)), op_id, step)
    u1 = ((h >> np.uint64(40)) + np.uint64(1)).astype(np.float32) * np.float32(2.0 ** -24)
    u2 = ((h >> np.uint64(16)) & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0 ** -24)
    z = np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(np.float32(6.28318530717958647692) * u2)
    return torch.from_numpy(z.astype(np.float32).reshape(shape))


def graphc_uniform(shape, op_id, step):
    """graph.random_uniform's 24-bit uniforms in [0, 1) over `shape`."""
    h = _graphc_hashes(int(np.prod(shape)), op_id, step)
    u = (h >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)
    return torch.from_numpy(u.reshape(shape))


class NoiseMLP(nn.Module):
    """Noise in the training step, as torch.randn_like and torch.rand_like export (ONNX written
    by hand at opset 13, the reference fed graphc's draws): Linear(12, 16), ReLU, plus
    RandomNormalLike (mean 0, scale 0.1), times RandomUniformLike (low 0.8, high 1.2), then
    Linear(16, 10), Softmax. Node i's draws are keyed by i; the module counts its training
    steps, as graphc's step counter (1, 2, ...)."""

    NORMAL_NODE, UNIFORM_NODE = 2, 4

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.fc2 = nn.Linear(16, 10)
        self.head = True
        self.step = 0

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.training:
            self.step += 1
            h = h + 0.1 * graphc_normal(tuple(h.shape), self.NORMAL_NODE, self.step)
            width = np.float32(1.2) - np.float32(0.8)
            h = h * (np.float32(0.8) + float(width) * graphc_uniform(tuple(h.shape), self.UNIFORM_NODE, self.step))
        x = self.fc2(h)
        return torch.softmax(x, dim=1) if self.head else x

    def write_onnx(self, path, batch):
        import onnx
        from onnx import helper
        n = helper.make_node
        nodes = [n("Gemm", ["input", "fc1.weight", "fc1.bias"], ["h1"], transB=1),
                 n("Relu", ["h1"], ["r"]),
                 n("RandomNormalLike", ["r"], ["noise"], mean=0.0, scale=0.1, seed=3.0),
                 n("Add", ["r", "noise"], ["noisy"]),
                 n("RandomUniformLike", ["noisy"], ["jitter"], low=0.8, high=1.2),
                 n("Mul", ["noisy", "jitter"], ["jittered"]),
                 n("Gemm", ["jittered", "fc2.weight", "fc2.bias"], ["logits"], transB=1),
                 n("Softmax", ["logits"], ["output"], axis=1)]
        assert nodes[self.NORMAL_NODE].op_type == "RandomNormalLike"
        assert nodes[self.UNIFORM_NODE].op_type == "RandomUniformLike"
        onnx.save(_onnx_model(self, nodes, batch, (12,), (10,), 13), path)


class ShrinkNet(nn.Module):
    """F.interpolate shrinking, as torch 1.13 exports it (ONNX Resize with scales below 1):
    Conv(3, 6, 3, pad 1) on 24x24 -> nearest by 1/2 -> bilinear by 1/2 (align_corners=False:
    each output the mean of a 2x2 block) -> Conv(6, 6, 3, pad 1) -> bilinear by 1/3 (each
    output the centre of a 3x3 block) -> Linear(6, 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
        self.fc = nn.Linear(6 * 2 * 2, 10)
        self.head = True

    def forward(self, x):
        x = torch.tanh(self.conv1(x))                                                 # 24x24
        x = F.interpolate(x, scale_factor=0.5, mode="nearest")                         # 12x12
        x = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)   # 6x6
        x = F.interpolate(torch.tanh(self.conv2(x)), scale_factor=1 / 3, mode="bilinear",
                          align_corners=False)                                         # 2x2
        x = self.fc(x.flatten(1))
        return torch.softmax(x, dim=1) if self.head else x


class ResampleNet(ShrinkNet):
    """F.interpolate beyond whole factors, as torch 1.13 exports it (ONNX Resize imported as
    interpolation matrices): Conv(3, 6, 3, pad 1) on 10x10 -> bilinear by 1.5 with
    align_corners=True (15x15) -> bicubic to 9x11 -> Conv(6, 6, 3, pad 1) -> nearest to 4x5
    (asymmetric, floor: not a repeat of each pixel) -> bilinear by 0.75 (3x3: fractional
    shrinking) -> Linear(54, 10)."""

    def __init__(self):
        super().__init__()  # ShrinkNet's convolutions, then a Linear for the 3x3 map
        self.fc = nn.Linear(6 * 3 * 3, 10)

    def forward(self, x):
        x = torch.tanh(self.conv1(x))                                                   # 10x10
        x = F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True)      # 15x15
        x = F.interpolate(x, size=(9, 11), mode="bicubic", align_corners=False)          # 9x11
        x = torch.tanh(self.conv2(x))
        x = F.interpolate(x, size=(4, 5), mode="nearest")                                # 4x5
        x = F.interpolate(x, scale_factor=0.75, mode="bilinear", align_corners=False)   # 3x3
        x = self.fc(x.flatten(1))
        return torch.softmax(x, dim=1) if self.head else x


class TileNet(nn.Module):
    """x.repeat, as torch exports it (ONNX Tile of a computed tensor by constant repeats):
    Conv(3, 4, 3, pad 1) on 6x6 -> repeat(1, 2, 1, 2) (the channels and the width twice: 8 x 6
    x 12) -> Conv(8, 4, 3, stride 2, pad 1) (4 x 3 x 6) -> flatten -> repeat(1, 2) ->
    Linear(144, 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, stride=2, padding=1)
        self.fc = nn.Linear(144, 10)
        self.head = True

    def forward(self, x):
        x = torch.tanh(self.conv1(x)).repeat(1, 2, 1, 2)
        x = torch.tanh(self.conv2(x)).flatten(1).repeat(1, 2)
        x = self.fc(x)
        return torch.softmax(x, dim=1) if self.head else x


class CompareNet(nn.Module):
    """Comparisons with a scalar as torch exports them (ONNX Greater, Less, LessOrEqual,
    GreaterOrEqual of a computed tensor, then Cast or Where): masks without gradients. Linear(8,
    16) h -> (h > 0.1) h + (h <= -0.2) 0.5 h -> where(h < 0.5, that, 2 h) -> (0.3 >= h) mask
    times that -> Linear(16, 10)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 10)
        self.head = True

    def forward(self, x):
        h = self.fc1(x)
        y = (h > 0.1).float() * h + (h <= -0.2).float() * 0.5 * h
        y = torch.where(h < 0.5, y, 2 * h)
        y = y * (0.3 >= h).float() + y
        x = self.fc2(y)
        return torch.softmax(x, dim=1) if self.head else x


class CumSumNet(CompareNet):
    """torch.cumsum as torch exports it (ONNX CumSum of a computed tensor along a constant axis):
    CompareNet's layers, Linear(8, 16) h -> cumsum over the last axis, and over the middle axis
    of its (4, 4) view (transposed last and back) -> their sum, scaled -> Linear(16, 10)."""

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        y = torch.cumsum(h, dim=-1) + torch.cumsum(h.view(-1, 4, 4), dim=1).flatten(1)
        x = self.fc2(0.25 * y)
        return torch.softmax(x, dim=1) if self.head else x


class Conv1dNet(nn.Module):
    """The 1-D layers of audio and time-series models (a TCN's blocks) on [N, 4, 32]:
    Conv1d(4, 8, 3, padding 1) -> BatchNorm1d -> ReLU -> MaxPool1d(2) (16 steps)
    -> Conv1d(8, 8, 3, padding 2, dilation 2, groups 2) -> ReLU -> AvgPool1d(2) (8)
    -> ConvTranspose1d(8, 6, 4, stride 2, padding 1) (16) -> ReLU
    -> Conv1d(6, 12, 5, stride 2, padding 2, no bias) (8)
    -> AdaptiveAvgPool1d(1) + AdaptiveMaxPool1d(1) -> Linear(12, 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm1d(8)
        self.conv2 = nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.up = nn.ConvTranspose1d(8, 6, 4, stride=2, padding=1)
        self.conv3 = nn.Conv1d(6, 12, 5, stride=2, padding=2, bias=False)
        self.fc = nn.Linear(12, 10)
        self.head = True

    def forward(self, x):
        x = F.max_pool1d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.avg_pool1d(F.relu(self.conv2(x)), 2)
        x = self.conv3(F.relu(self.up(x)))
        x = F.adaptive_avg_pool1d(x, 1) + F.adaptive_max_pool1d(x, 1)
        x = self.fc(torch.flatten(x, 1))
        return torch.softmax(x, dim=1) if self.head else x


class Conv3dNet(nn.Module):
    """The 3-D layers of video and volume models on [N, 2, 6, 8, 8] (depth 6):
    Conv3d(2, 4, 3, padding 1) -> BatchNorm3d -> ReLU -> MaxPool3d(2) (3 x 4 x 4)
    -> Conv3d(4, 8, 3, stride (2, 1, 1), padding 1, groups 2) (2 x 4 x 4) -> ReLU
    -> Conv3d(8, 8, (3, 1, 3), padding (2, 0, 1), dilation (2, 1, 1), no bias) (2 x 4 x 4)
    -> AvgPool3d((1, 2, 2)) (2 x 2 x 2) -> AdaptiveAvgPool3d(1) + AdaptiveMaxPool3d(1)
    -> Linear(8, 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(2, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm3d(4)
        self.conv2 = nn.Conv3d(4, 8, 3, stride=(2, 1, 1), padding=1, groups=2)
        self.conv3 = nn.Conv3d(8, 8, (3, 1, 3), padding=(2, 0, 1), dilation=(2, 1, 1),
                               bias=False)
        self.fc = nn.Linear(8, 10)
        self.head = True

    def forward(self, x):
        x = F.max_pool3d(F.relu(self.bn1(self.conv1(x))), 2)
        x = self.conv3(F.relu(self.conv2(x)))
        x = F.avg_pool3d(x, (1, 2, 2))
        x = F.adaptive_avg_pool3d(x, 1) + F.adaptive_max_pool3d(x, 1)
        x = self.fc(torch.flatten(x, 1))
        return torch.softmax(x, dim=1) if self.head else x


class UNet3d(nn.Module):
    """A small 3-D U-Net with a per-voxel binary head on [N, 1, 8, 8, 8] volumes:
    Conv3d(1, 4, 3, padding 1) -> BatchNorm3d -> ReLU (the skip) -> MaxPool3d(2) (4^3)
    -> Conv3d(4, 8, 3, padding 1) -> ReLU -> ConvTranspose3d(8, 4, 2, stride 2) (8^3)
    -> concat the skip (8 channels) -> Conv3d(8, 4, 3, stride (2, 1, 1), padding 1) (4 x 8^2)
    -> ReLU -> ConvTranspose3d(4, 4, 3, stride (2, 1, 1), padding 1, output_padding (1, 0, 0),
    groups 2) (8^3) -> ReLU -> Conv3d(4, 1, 1) (-> Sigmoid)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv3d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm3d(4)
        self.mid = nn.Conv3d(4, 8, 3, padding=1)
        self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
        self.dec = nn.Conv3d(8, 4, 3, stride=(2, 1, 1), padding=1)
        self.up2 = nn.ConvTranspose3d(4, 4, 3, stride=(2, 1, 1), padding=1,
                                      output_padding=(1, 0, 0), groups=2)
        self.head_conv = nn.Conv3d(4, 1, 1)
        self.head = True

    def forward(self, x):
        skip = F.relu(self.bn(self.enc(x)))
        x = self.up(F.relu(self.mid(F.max_pool3d(skip, 2))))
        x = F.relu(self.dec(torch.cat([x, skip], dim=1)))
        x = self.head_conv(F.relu(self.up2(x)))
        return torch.sigmoid(x) if self.head else x


class Resize3dNet(nn.Module):
    """Volume resizing as 3-D U-Nets and video models upsample, on [N, 2, 3, 4, 4]:
    Conv3d(2, 4, 1) -> nearest x2 (6 x 8 x 8) -> Conv3d(4, 4, 3, padding 1) -> ReLU
    -> trilinear to (9, 10, 12) (align_corners False) -> Conv3d(4, 4, 3) (7 x 8 x 10)
    -> trilinear down to (4, 4, 5) with align_corners True -> AdaptiveAvgPool3d(1)
    -> Linear(4, 10)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(2, 4, 1)
        self.conv2 = nn.Conv3d(4, 4, 3, padding=1)
        self.conv3 = nn.Conv3d(4, 4, 3)
        self.fc = nn.Linear(4, 10)
        self.head = True

    def forward(self, x):
        x = F.interpolate(self.conv1(x), scale_factor=2, mode="nearest")
        x = F.relu(self.conv2(x))
        x = F.interpolate(x, size=(9, 10, 12), mode="trilinear", align_corners=False)
        x = F.interpolate(self.conv3(x), size=(4, 4, 5), mode="trilinear", align_corners=True)
        x = self.fc(torch.flatten(F.adaptive_avg_pool3d(x, 1), 1))
        return torch.softmax(x, dim=1) if self.head else x


class NormUNet(nn.Module):
    """A small U-Net of the normalizations and resamplings that segmentation and diffusion
    models use: the input normalised by constant per-channel mean and std tables, Conv ->
    GroupNorm(4) -> SiLU, a stride-2 Conv -> InstanceNorm2d(affine) -> ReLU, nearest upsampling
    x2 by scale_factor, the skip concatenated, Conv -> GroupNorm(2), bilinear upsampling by
    (2, 3) with align_corners=False, a stride-(2, 3) Conv back to the input size, a max pool
    and a nearest upsampling to a given size, and a 1x1 Conv head (-> Sigmoid)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.gn1 = nn.GroupNorm(4, 8)
        # (No bias: InstanceNorm removes any per-channel shift, so its true gradient is 0 and
        # Adam would turn both runs' float32 noise there into lr-sized steps.)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.inorm = nn.InstanceNorm2d(16, affine=True)
        self.conv2 = nn.Conv2d(24, 8, 3, padding=1)
        self.gn2 = nn.GroupNorm(2, 8, eps=1e-3)
        self.back = nn.Conv2d(8, 8, 3, stride=(2, 3), padding=1)
        self.head_conv = nn.Conv2d(8, 1, 1)
        with torch.no_grad():  # affine maps away from their initial identity
            for norm in (self.gn1, self.inorm, self.gn2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)
        self.head = True

    def forward(self, x):
        # Tensors made in forward export as Constant tables (buffers would be initializers,
        # which graphc trains unless --freeze names them).
        mean = torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1)
        std = torch.tensor([0.25, 0.5, 2.0]).view(3, 1, 1)
        x = (x - mean) / std
        skip = F.silu(self.gn1(self.conv1(x)))                                 # [B, 8, 12, 12]
        y = F.relu(self.inorm(self.down(skip)))                                # [B, 16, 6, 6]
        y = F.interpolate(y, scale_factor=2, mode="nearest")                   # [B, 16, 12, 12]
        y = torch.relu(self.gn2(self.conv2(torch.cat([y, skip], 1))))          # [B, 8, 12, 12]
        y = F.interpolate(y, scale_factor=(2, 3), mode="bilinear", align_corners=False)
        y = self.back(y)                                                       # [B, 8, 12, 12]
        y = F.interpolate(F.max_pool2d(y, 2), size=(12, 12), mode="nearest")
        y = self.head_conv(y)
        return torch.sigmoid(y) if self.head else y


class ShuffleSR(nn.Module):
    """ESPCN-style x2 super-resolution of 8x8 images: Conv(3, 16, 3) -> tanh -> Conv(16, 12, 3)
    -> pixel_shuffle(2) (3 channels at 16x16) -> pixel_unshuffle(2) and a 1x1 Conv (a 6-D
    Reshape and Transpose back to 12 channels at 8x8) -> pixel_shuffle(2) -> the 3-channel
    16x16 prediction (-> Sigmoid)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 12, 3, padding=1)
        self.c3 = nn.Conv2d(12, 12, 1)
        self.head = True

    def forward(self, x):
        y = F.pixel_shuffle(self.c2(torch.tanh(self.c1(x))), 2)
        y = F.pixel_shuffle(self.c3(F.pixel_unshuffle(y, 2)), 2)
        return torch.sigmoid(y) if self.head else y


class CNNBN(nn.Module):
    """Conv -> BatchNorm -> ReLU -> AvgPool2d(3, 2, pad 1, count_include_pad=False)
    -> Conv (no bias) -> BatchNorm -> ReLU -> AvgPool2d(2, 2)
    -> Dropout(0.25) -> global average pool -> Linear (-> Softmax when head)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.AvgPool2d(3, 2, padding=1, count_include_pad=False)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool2 = nn.AvgPool2d(2, 2, count_include_pad=False)  # True: torch writes a Pad
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16, classes)
        self.head = True

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.drop(self.pool2(F.relu(self.bn2(self.conv2(x)))))
        x = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return torch.softmax(x, dim=1) if self.head else x


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 100)
        self.fc2 = nn.Linear(100, 10)
        self.head = True  # apply the Softmax (export); False: return logits (reference training)

    def forward(self, x):
        x = self.fc2(F.relu(self.fc1(x)))
        return torch.softmax(x, dim=1) if self.head else x


class ResMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.block = nn.Linear(32, 32)
        self.fc2 = nn.Linear(32, 10)
        self.head = True

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = h + F.relu(self.block(h))  # the residual Add: h has two readers
        x = self.fc2(h)
        return torch.softmax(x, dim=1) if self.head else x


class CNN(nn.Module):
    def __init__(self, outputs=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3)
        self.fc = nn.Linear(32 * 13 * 13, outputs)  # 5408 -> outputs
        self.outputs = outputs
        self.head = True

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        x = self.fc(torch.flatten(x, 1))
        if not self.head:
            return x
        return torch.sigmoid(x) if self.outputs == 1 else torch.softmax(x, dim=1)


def input_shape(name, batch=None):
    batch = batch or batch_of(name)
    if name in TORCHVISION:
        return (batch, 3, IMAGE[name], IMAGE[name])
    if name in TRANSFORMERS:
        return (batch, TRANSFORMER["seq"], TRANSFORMER["d_model"])
    if name in RECURRENT:
        return (batch, RECURRENT_SHAPE["seq"], RECURRENT_SHAPE["features"])
    if name in TOKEN_MODELS:
        return (batch, TOKEN_MODELS[name]["seq"])
    if name == "cnn_bn":
        return (batch, 3, CNN_BN["image"], CNN_BN["image"])
    if name in DROPOUT_TRANSFORMERS:
        t = DROPOUT_TRANSFORMERS[name]
        return (batch, t["seq"], t["d_model"])
    if name == "unet":
        return (batch, 3, UNET["image"], UNET["image"])
    if name == "tconv":
        return (batch, 3, 8, 8)
    if name == "norm_unet":
        return (batch, 3, NORM_UNET["image"], NORM_UNET["image"])
    if name == "shuffle_sr":
        return (batch, 3, 8, 8)
    if name == "pad_cnn":
        return (batch, 3, 12, 12)
    if name in ("pad_modes", "prelu_cnn"):
        return (batch, 3, 10, 10)
    if name == "merge_ops":
        return (batch, 3, 6, 6)
    if name == "noise_mlp":
        return (batch, 12)
    if name == "shrink":
        return (batch, 3, 24, 24)
    if name == "resample":
        return (batch, 3, 10, 10)
    if name == "tile":
        return (batch, 3, 6, 6)
    if name == "compare":
        return (batch, 8)
    if name == "cumsum":
        return (batch, 8)
    if name == "conv1d":
        return (batch, 4, 32)
    if name == "conv3d":
        return (batch, 2, 6, 8, 8)
    if name == "unet3d":
        return (batch, 1, 8, 8, 8)
    if name == "resize3d":
        return (batch, 2, 3, 4, 4)
    if name in ("ops20", "space_depth"):
        return (batch, 4, 6, 6)
    if name == "ops24":
        return (batch, 6, 8)
    if name in ("attn23", "rope23", "sdpa18", "einsum_attn"):
        return (batch, 8, 16)
    return ((batch, 10) if name in ("mlp", "resmlp", "split_mlp", "act_mlp", "arith_mlp", "ops28", "local_fn",
                                    "bcast_mlp", "row_mlp", "math_mlp")
            else (batch, 3, 28, 28))


def label_shape(name):
    """Per-sample label shape of a binary-crossentropy model: its output's (one forward pass)."""
    model = build(name)
    model.head = False
    with torch.no_grad():
        return tuple(model(torch.zeros(input_shape(name, 1))).shape[1:])


def build(name):
    """The model `name` with its fixed initial weights (float32)."""
    torch.manual_seed(SEEDS[name])
    if name == "attn23_pad":
        return Attention23Pad(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
    if name == "mlp":
        return MLP()
    if name == "resmlp":
        return ResMLP()
    if name == "cnn":
        return CNN(10)
    if name == "cnn_bce":
        return CNN(1)
    if name in TORCHVISION:
        return Classifier(torchvision_net(name))
    if name in TRANSFORMERS:
        t = TRANSFORMER
        return TransformerClassifier(t["d_model"], t["nhead"], t["dim_feedforward"],
                                     t["num_layers"])
    if name in RECURRENT:
        return RecurrentClassifier(name)
    if name == "causal_cls":
        return CausalClassifier(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
    if name in ("nano_gpt", "nano_gpt_tied", "nano_gpt_trilu"):
        model = NanoGPT(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"],
                        mask_in_forward=name == "nano_gpt_trilu")
        if name == "nano_gpt_tied":  # nanoGPT's weight tying: the head is the embedding
            model.lm_head.weight = model.wte.weight
        return model
    if name == "llama":
        return Llama(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
    if name == "llama_gqa":  # 4 query heads sharing 2 key/value heads
        return Llama(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"], heads=4,
                     kv_heads=2)
    if name == "llama_hf":  # rotary tables as Hugging Face's LlamaRotaryEmbedding builds them
        model = Llama(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
        for attention in model.attn:
            attention.hf_rotary = True
        return model
    if name == "pad_cls":
        return PaddedClassifier(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
    if name == "kpm_cls":
        return KeyPaddingClassifier(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
    if name in ("mask_cls", "mask_cls_hf"):
        model = MaskedClassifier(TOKEN_MODELS[name]["vocabulary"], TOKEN_MODELS[name]["seq"])
        model.expand_mask = name == "mask_cls_hf"
        return model
    if name == "row_mlp":
        return RowMLP()
    if name == "math_mlp":
        return MathMLP()
    if name == "causal_lm":
        t = TOKEN_MODELS[name]
        return CausalClassifier(t["vocabulary"], t["seq"], classes=t["vocabulary"], per_token=True)
    if name in TOKEN_MODELS:
        return EmbeddingLSTM(TOKEN_MODELS[name]["vocabulary"])
    if name == "split_mlp":
        return SplitMLP()
    if name == "act_mlp":
        return ActivationMLP()
    if name == "pad_cnn":
        return PadCNN()
    if name == "arith_mlp":
        return ArithmeticMLP()
    if name == "bcast_mlp":
        return BroadcastMLP()
    if name == "unet":  # the U-Net of the planner benchmark, at 2 levels
        bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
        if bench not in sys.path:
            sys.path.insert(0, bench)
        from training_graphs import UNet
        return UNet(base=UNET["base"], levels=2, sigmoid=True)
    if name == "tconv":
        return TConv()
    if name == "norm_unet":
        return NormUNet()
    if name == "shuffle_sr":
        return ShuffleSR()
    if name == "ops20":
        return Ops20()
    if name == "ops24":
        return Ops24()
    if name == "attn23":
        return Attention23()
    if name == "rope23":
        return Rope23()
    if name == "ops28":
        return Ops28()
    if name == "local_fn":
        return LocalFunctions()
    if name == "sdpa18":
        return Sdpa18()
    if name == "pad_modes":
        return PadModes()
    if name == "einsum_attn":
        return EinsumAttention()
    if name == "space_depth":
        return SpaceDepth()
    if name == "prelu_cnn":
        return PReLUNet()
    if name == "merge_ops":
        return MergeOps()
    if name == "noise_mlp":
        return NoiseMLP()
    if name == "shrink":
        return ShrinkNet()
    if name == "resample":
        return ResampleNet()
    if name == "tile":
        return TileNet()
    if name == "compare":
        return CompareNet()
    if name == "cumsum":
        return CumSumNet()
    if name == "conv1d":
        return Conv1dNet()
    if name == "conv3d":
        return Conv3dNet()
    if name == "unet3d":
        return UNet3d()
    if name == "resize3d":
        return Resize3dNet()
    if name == "cnn_bn":
        return CNNBN()
    if name in DROPOUT_TRANSFORMERS:
        t = DROPOUT_TRANSFORMERS[name]
        return TransformerClassifier(t["d_model"], t["nhead"], t["dim_feedforward"],
                                     t["num_layers"], dropout=t["dropout"])
    raise ValueError("unknown model %r" % name)


def export(name, path, batch=None, training=None, dynamic_batch=False, export_params=True):
    """Export model `name` (with its Softmax/Sigmoid head) to ONNX at `path`; returns the model.

    training: export in training mode (torch.onnx.TrainingMode.TRAINING: BatchNormalization
    with batch statistics); the default is training mode for the torchvision models. An
    eval-mode export of a model with BatchNorm has the BatchNorm folded into the convolutions
    by the exporter (torch 1.13 does so even without constant folding).

    dynamic_batch: export the batch axis as dynamic (dynamic_axes), so that shape arithmetic
    (Shape/Gather/Cast/Div/Concat chains) replaces the batch the exporter would bake into
    Reshape constants; graphc folds it at the --batch it is given.

    export_params=False: the parameters become graph inputs named by their state_dict keys,
    without values (graphc initialises them).
    """
    if training is None:
        training = name in TRAINING_EXPORT
    if name in HANDWRITTEN:
        model = build(name)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        model.write_onnx(path, batch or batch_of(name))
        return model
    model = build(name)
    model.train(training)
    model.head = True
    dummy = torch.zeros(input_shape(name, batch),
                        dtype=torch.int64 if name in TOKEN_MODELS else torch.float32)
    input_names = ["input"]
    if name in MASK_INPUT_MODELS:  # (input_ids, attention_mask), named as Hugging Face's
        dummy = (dummy, torch.ones(input_shape(name, batch), dtype=torch.int64))
        input_names = ["input_ids", "attention_mask"]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    # Tracing in training mode updates the running statistics of `model`; the initializers
    # hold the updated values, and the reference training starts from the initializers.
    # An eval-mode export of a recurrent model folds constants, as torch.onnx.export does by
    # default: the LSTM/GRU weights become new initializers already in ONNX's gate order.
    fold = not training and name in RECURRENT
    with torch.no_grad():
        torch.onnx.export(model, dummy, path, export_params=export_params,
                          do_constant_folding=fold, training=mode, opset_version=OPSETS.get(name, OPSET),
                          input_names=input_names, output_names=["output"],
                          dynamic_axes=(dict({n: {0: "batch"} for n in input_names},
                                             output={0: "batch"}) if dynamic_batch else None))
    return model


def onnx_initializers(path):
    """{initializer name: numpy array} of an ONNX file, in graph order."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def initializer_map(path, model):
    """{ONNX initializer name: state_dict key} for the exported `model`.

    The exporter normally keeps the state_dict key as the initializer name; this verifies it (same
    name, shape and bit-identical values).  Should the exporter rename an initializer (e.g.
    'onnx::Gemm_12'), it is mapped to the unique state_dict entry with bit-identical values.
    Raises if some parameter cannot be mapped one-to-one.
    """
    inits = onnx_initializers(path)
    sd = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    mapping = {}
    for name, arr in inits.items():
        if name in sd and sd[name].shape == arr.shape and np.array_equal(sd[name], arr):
            mapping[name] = name
            continue
        cands = [k for k, v in sd.items() if v.shape == arr.shape and np.array_equal(v, arr)]
        cands = [k for k in cands if k not in mapping.values()]
        if len(cands) != 1:
            raise RuntimeError("ONNX initializer %r (shape %s) matches %d state_dict entries"
                               % (name, arr.shape, len(cands)))
        mapping[name] = cands[0]
    # BatchNorm's step counter is not exported (momentum is fixed, so it changes nothing); a
    # tied entry (the same tensor under two keys: nanoGPT's lm_head.weight is wte.weight) is
    # exported once, under the key mapped.
    storage = {v.data_ptr(): k for k, v in model.state_dict().items() if k in mapping.values()}
    tied = {k for k, v in model.state_dict().items() if v.data_ptr() in storage}
    missing = (set(k for k in sd if not k.endswith("num_batches_tracked")) - set(mapping.values())
               - tied)
    if missing:
        raise RuntimeError("state_dict entries not exported as initializers: %s" % sorted(missing))
    return mapping


if __name__ == "__main__":
    import sys
    import tempfile
    import onnx
    out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    for n in ("mlp", "cnn", "cnn_bce", "resmlp"):
        p = os.path.join(out, n + ".onnx")
        mdl = export(n, p)
        onnx.checker.check_model(onnx.load(p))
        mp = initializer_map(p, mdl)
        print(n, p, [(k, tuple(v.shape)) for k, v in onnx_initializers(p).items()],
              "identity" if all(k == v for k, v in mp.items()) else mp)
