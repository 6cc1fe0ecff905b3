#!/usr/bin/env python3
"""Writes the Keras model JSON fixtures in test/keras/Inputs/ (run once; the output is checked in).

Keras cannot be installed here, so the fixtures are written field by field the way Keras
serializes models:

- tf.keras 2.15 (`model.to_json()`): top level {"class_name", "config", "keras_version",
  "backend"}; layer entries {"module": "keras.layers", "class_name", "config",
  "registered_name": null, "build_config"}; Functional layers add "name" and "inbound_nodes" as
  lists of nodes, each a list of ["layer", node_index, tensor_index, {kwargs}];
  InputLayer has "batch_input_shape"; BatchNormalization's axis is a list; dtype a string.
- Keras 3 (3.x `model.to_json()` / config.json of a .keras archive): top level with "module",
  "registered_name", "build_config" and "compile_config"; dtype a DTypePolicy object;
  InputLayer has "batch_shape"; inbound nodes are {"args": [...], "kwargs": {...}} whose tensors
  are {"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history":
  [layer, node, tensor]}}; a single model input/output is written flat (["name", 0, 0]).
"""
import copy
import json
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs")


def init(cls, config=None, k3=False):
    return {"module": "keras.initializers", "class_name": cls,
            "config": {} if config is None else config, "registered_name": None}


GLOROT = lambda: init("GlorotUniform", {"seed": None})  # noqa: E731
ZEROS = lambda: init("Zeros")  # noqa: E731
ONES = lambda: init("Ones")  # noqa: E731


class Style:
    def __init__(self, k3):
        self.k3 = k3

    def dtype(self):
        if self.k3:
            return {"module": "keras", "class_name": "DTypePolicy",
                    "config": {"name": "float32"}, "registered_name": None}
        return "float32"

    def base(self, name, trainable=True):
        return {"name": name, "trainable": trainable, "dtype": self.dtype()}

    def entry(self, cls, config, input_shape=None):
        e = {"module": "keras.layers", "class_name": cls, "config": config,
             "registered_name": None}
        if input_shape is not None:
            e["build_config"] = {"input_shape": input_shape}
        return e

    # ---- layers -------------------------------------------------------------------------
    def input_layer(self, name, shape):
        if self.k3:
            cfg = {"batch_shape": shape, "dtype": "float32", "sparse": False, "name": name}
        else:
            cfg = {"batch_input_shape": shape, "dtype": "float32", "sparse": False,
                   "ragged": False, "name": name}
        return self.entry("InputLayer", cfg)

    def dense(self, name, units, activation="linear", use_bias=True, trainable=True, shape=None):
        c = self.base(name, trainable)
        c.update({"units": units, "activation": activation, "use_bias": use_bias,
                  "kernel_initializer": GLOROT(), "bias_initializer": ZEROS(),
                  "kernel_regularizer": None, "bias_regularizer": None})
        if not self.k3:
            c["activity_regularizer"] = None
        c.update({"kernel_constraint": None, "bias_constraint": None})
        if self.k3:
            c["lora_rank"] = None
        return self.entry("Dense", c, shape)

    def conv2d(self, name, filters, kernel, strides=(1, 1), padding="valid", dilation=(1, 1),
               activation="linear", use_bias=True, trainable=True, shape=None, groups=1,
               cls="Conv2D"):
        c = self.base(name, trainable)
        c.update({"filters": filters, "kernel_size": list(kernel), "strides": list(strides),
                  "padding": padding, "data_format": "channels_last",
                  "dilation_rate": list(dilation), "groups": groups, "activation": activation,
                  "use_bias": use_bias, "kernel_initializer": GLOROT(),
                  "bias_initializer": ZEROS(), "kernel_regularizer": None,
                  "bias_regularizer": None, "activity_regularizer": None,
                  "kernel_constraint": None, "bias_constraint": None})
        return self.entry(cls, c, shape)

    def conv3d(self, name, filters, kernel, strides=(1, 1, 1), padding="valid",
               dilation=(1, 1, 1), **kw):
        """Conv3D: Conv2D's config with three-element tuples."""
        return self.conv2d(name, filters, kernel, strides, padding, dilation, cls="Conv3D", **kw)

    def conv1d(self, name, filters, kernel, strides=1, padding="valid", dilation=1, **kw):
        """Conv1D: Conv2D's config with one-element tuples (padding may be causal)."""
        return self.conv2d(name, filters, (kernel,), (strides,), padding, (dilation,),
                           cls="Conv1D", **kw)

    def conv2d_transpose(self, name, filters, kernel, strides=(1, 1), padding="valid",
                         dilation=(1, 1), output_padding=None, activation="linear",
                         use_bias=True, shape=None):
        """tf.keras 2.15 writes Conv2D's config (groups included) plus output_padding; Keras 3's
        BaseConvTranspose.get_config has neither."""
        e = self.conv2d(name, filters, kernel, strides, padding, dilation, activation, use_bias,
                        shape=shape, cls="Conv2DTranspose")
        if self.k3:
            del e["config"]["groups"]
        else:
            e["config"]["output_padding"] = None if output_padding is None else list(output_padding)
        return e

    def conv1d_transpose(self, name, filters, kernel, strides=1, padding="valid",
                         output_padding=None, **kw):
        """Conv1DTranspose: Conv2DTranspose's config with one-element tuples."""
        e = self.conv2d_transpose(name, filters, (kernel,), (strides,), padding, (1,),
                                  None if output_padding is None else (output_padding,), **kw)
        e["class_name"] = "Conv1DTranspose"
        return e

    def separable(self, name, filters, kernel, multiplier=1, strides=(1, 1), padding="valid",
                  activation="linear", use_bias=True, shape=None):
        c = self.base(name)
        c.update({"filters": filters, "kernel_size": list(kernel), "strides": list(strides),
                  "padding": padding, "data_format": "channels_last", "dilation_rate": [1, 1]})
        if not self.k3:
            c["groups"] = 1
        c.update({"activation": activation, "use_bias": use_bias, "bias_initializer": ZEROS(),
                  "bias_regularizer": None, "activity_regularizer": None, "bias_constraint": None,
                  "depth_multiplier": multiplier, "depthwise_initializer": GLOROT(),
                  "pointwise_initializer": GLOROT(), "depthwise_regularizer": None,
                  "pointwise_regularizer": None, "depthwise_constraint": None,
                  "pointwise_constraint": None})
        return self.entry("SeparableConv2D", c, shape)

    def layer_norm(self, name, center=True, epsilon=0.001, shape=None):
        """tf.keras 2.15 writes the axis as the built layer holds it, a list of positive axes."""
        c = self.base(name)
        c.update({"axis": -1 if self.k3 else [len(shape) - 1], "epsilon": epsilon,
                  "center": center, "scale": True, "beta_initializer": ZEROS(),
                  "gamma_initializer": ONES(), "beta_regularizer": None, "gamma_regularizer": None,
                  "beta_constraint": None, "gamma_constraint": None})
        if self.k3:
            c["rms_scaling"] = False
        return self.entry("LayerNormalization", c, shape)

    def rms_norm(self, name, epsilon=1e-6, shape=None):
        """Keras 3.9's RMSNormalization: get_config adds axis and epsilon to the base config; a
        built layer holds its axis as a sorted list of positive axes."""
        c = self.base(name)
        c.update({"axis": [len(shape) - 1], "epsilon": epsilon})
        return self.entry("RMSNormalization", c, shape)

    def unit_norm(self, name, axis=-1, shape=None):
        """Keras 3's UnitNormalization: get_config adds axis (as given: -1, or a list) to the
        base config."""
        c = self.base(name)
        c["axis"] = axis
        return self.entry("UnitNormalization", c, shape)

    def permute(self, name, dims, shape=None):
        c = self.base(name)
        c["dims"] = list(dims)
        return self.entry("Permute", c, shape)

    def depthwise(self, name, kernel, multiplier, strides=(1, 1), padding="valid",
                  activation="linear", shape=None):
        c = self.base(name)
        c.update({"kernel_size": list(kernel), "strides": list(strides), "padding": padding,
                  "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
                  "activation": activation, "use_bias": True, "bias_initializer": ZEROS(),
                  "bias_regularizer": None, "activity_regularizer": None,
                  "bias_constraint": None, "depth_multiplier": multiplier,
                  "depthwise_initializer": GLOROT(), "depthwise_regularizer": None,
                  "depthwise_constraint": None})
        return self.entry("DepthwiseConv2D", c, shape)

    def pool(self, cls, name, size, strides=None, padding="valid", shape=None):
        c = self.base(name)
        c.update({"pool_size": list(size), "padding": padding,
                  "strides": list(strides or size), "data_format": "channels_last"})
        return self.entry(cls, c, shape)

    def global_pool(self, cls, name, shape=None):
        c = self.base(name)
        c.update({"data_format": "channels_last", "keepdims": False})
        return self.entry(cls, c, shape)

    def flatten(self, name, shape=None):
        c = self.base(name)
        c["data_format"] = "channels_last"
        return self.entry("Flatten", c, shape)

    def reshape(self, name, target, shape=None):
        c = self.base(name)
        c["target_shape"] = list(target)
        return self.entry("Reshape", c, shape)

    def activation(self, name, fn, shape=None):
        c = self.base(name)
        c["activation"] = fn
        return self.entry("Activation", c, shape)

    def rescaling(self, name, scale, offset, shape=None):
        c = self.base(name)
        c.update({"scale": scale, "offset": offset})
        return self.entry("Rescaling", c, shape)

    def normalization(self, name, axis, invert=False, mean=None, variance=None, shape=None):
        c = self.base(name)
        c.update({"axis": axis, "invert": invert, "mean": mean, "variance": variance})
        return self.entry("Normalization", c, shape)

    def dropout(self, name, rate, shape=None):
        c = self.base(name)
        c.update({"rate": rate, "noise_shape": None, "seed": None} if not self.k3 else
                 {"rate": rate, "seed": None, "noise_shape": None})
        return self.entry("Dropout", c, shape)

    def spatial_dropout(self, cls, name, rate, shape=None):
        c = self.base(name)
        c.update({"rate": rate, "seed": None} if self.k3 else
                 {"rate": rate, "noise_shape": None, "seed": None})
        if cls == "SpatialDropout2D":
            c["data_format"] = "channels_last"
        return self.entry(cls, c, shape)

    def noise(self, cls, name, amount, shape=None, noise_shape=None):
        """GaussianNoise (amount = stddev), GaussianDropout and AlphaDropout (amount = rate)."""
        c = self.base(name)
        c.update({"stddev" if cls == "GaussianNoise" else "rate": amount, "seed": None})
        if cls == "AlphaDropout":
            c["noise_shape"] = noise_shape
        return self.entry(cls, c, shape)

    def augment(self, cls, name, shape=None, **config):
        """RandomFlip (mode), RandomRotation (factor), RandomZoom and RandomTranslation
        (height_factor, width_factor), RandomCrop (height, width), with Keras's defaults for
        the rest."""
        c = self.base(name)
        if cls in ("RandomRotation", "RandomZoom", "RandomTranslation"):
            c.update({"fill_mode": "reflect", "interpolation": "bilinear", "fill_value": 0.0})
        c.update({"seed": None})
        if self.k3:
            c["data_format"] = "channels_last"
        c.update(config)
        return self.entry(cls, c, shape)

    def batchnorm(self, name, trainable=True, momentum=0.99, epsilon=0.001, shape=None):
        c = self.base(name, trainable)
        c.update({"axis": -1 if self.k3 else [len(shape) - 1 if shape else 3],
                  "momentum": momentum, "epsilon": epsilon, "center": True, "scale": True,
                  "beta_initializer": ZEROS(), "gamma_initializer": ONES(),
                  "moving_mean_initializer": ZEROS(), "moving_variance_initializer": ONES(),
                  "beta_regularizer": None, "gamma_regularizer": None,
                  "beta_constraint": None, "gamma_constraint": None})
        if self.k3:
            c["synchronized"] = False
        return self.entry("BatchNormalization", c, shape)

    def zero_padding(self, name, pad, shape=None):
        c = self.base(name)
        c.update({"padding": [[pad, pad], [pad, pad]], "data_format": "channels_last"})
        return self.entry("ZeroPadding2D", c, shape)

    def zero_padding1d(self, name, pad, shape=None):
        """ZeroPadding1D: the (left, right) pair normalize_tuple makes of an int or a pair."""
        c = self.base(name)
        c["padding"] = [pad, pad] if isinstance(pad, int) else list(pad)
        return self.entry("ZeroPadding1D", c, shape)

    def cropping(self, name, crop, shape=None):
        """Cropping1D ((begin, end)) or, with a pair of pairs, Cropping2D (((top, bottom),
        (left, right)) and a data_format)."""
        c = self.base(name)
        if isinstance(crop[0], (list, tuple)):
            c.update({"cropping": [list(p) for p in crop], "data_format": "channels_last"})
            return self.entry("Cropping2D", c, shape)
        c["cropping"] = list(crop)
        return self.entry("Cropping1D", c, shape)

    def upsampling(self, name, size, interpolation="nearest", shape=None):
        """UpSampling1D (an int size) or UpSampling2D (a pair, data_format, interpolation)."""
        c = self.base(name)
        if isinstance(size, int):
            c["size"] = size
            return self.entry("UpSampling1D", c, shape)
        c.update({"size": list(size), "data_format": "channels_last",
                  "interpolation": interpolation})
        return self.entry("UpSampling2D", c, shape)

    def group_norm(self, name, groups, epsilon=0.001, center=True, scale=True, shape=None):
        """Keras 3's GroupNormalization: groups, axis -1, epsilon, center, scale and the
        initializers, regularizers and constraints of gamma and beta."""
        c = self.base(name)
        c.update({"groups": groups, "axis": -1, "epsilon": epsilon, "center": center,
                  "scale": scale, "beta_initializer": ZEROS(), "gamma_initializer": ONES(),
                  "beta_regularizer": None, "gamma_regularizer": None, "beta_constraint": None,
                  "gamma_constraint": None})
        return self.entry("GroupNormalization", c, shape)

    def merge(self, cls, name, shape=None, **extra):
        c = self.base(name)
        c.update(extra)
        return self.entry(cls, c, shape)

    def lambda_layer(self, name, shape=None):
        c = self.base(name)
        c.update({"function": {"class_name": "__lambda__", "config": {
            "code": "4wEAAAAAAAAAAAAAAAEAAAACAAAAQwAAAHMIAAAAfABkARQAUwApAk7pAgAAAKkAKQHaAXhyAgAAAHICAAAA+hw8aXB5dGhvbi1pbnB1dC0xLTVkZTE4YjY0Nzg+2gg8bGFtYmRhPgEAAABzAgAAAAgA",
            "defaults": None, "closure": None}}, "output_shape": None, "arguments": {}})
        return self.entry("Lambda", c, shape)

    # ---- recurrent and embedding layers (their Keras 3 / tf.keras 2.15 config fields) -------
    def rnn(self, cls, name, units, activation="tanh", recurrent_activation="sigmoid",
            return_sequences=False, go_backwards=False, reset_after=True, use_bias=True,
            shape=None):
        c = self.base(name)
        c.update({"return_sequences": return_sequences, "return_state": False,
                  "go_backwards": go_backwards, "stateful": False, "unroll": False})
        if self.k3:
            c["zero_output_for_mask"] = False
        else:
            c["time_major"] = False
        c.update({"units": units, "activation": activation, "use_bias": use_bias,
                  "kernel_initializer": GLOROT(),
                  "recurrent_initializer": init("Orthogonal", {"gain": 1.0, "seed": None}),
                  "bias_initializer": ZEROS(), "kernel_regularizer": None,
                  "recurrent_regularizer": None, "bias_regularizer": None,
                  "activity_regularizer": None, "kernel_constraint": None,
                  "recurrent_constraint": None, "bias_constraint": None, "dropout": 0.0,
                  "recurrent_dropout": 0.0})
        if cls != "SimpleRNN":
            c["recurrent_activation"] = recurrent_activation
        if cls == "LSTM":
            c["unit_forget_bias"] = True
        if cls == "GRU":
            c["reset_after"] = reset_after
        if self.k3:
            c["seed"] = None
        else:
            c["implementation"] = 2 if cls != "SimpleRNN" else 1
        return self.entry(cls, c, shape)

    def embedding(self, name, vocabulary, features, shape=None):
        c = self.base(name)
        c.update({"input_dim": vocabulary, "output_dim": features,
                  "embeddings_initializer": init("RandomUniform", {"minval": -0.05, "maxval": 0.05, "seed": None}),
                  "embeddings_regularizer": None, "activity_regularizer": None,
                  "embeddings_constraint": None, "mask_zero": False})
        if self.k3:
            c["lora_rank"] = None
        else:
            c["input_length"] = shape[1] if shape else None
        return self.entry("Embedding", c, shape)

    def wrapper(self, cls, name, inner, shape=None, **extra):
        c = self.base(name)
        layer = {k: v for k, v in inner.items() if k != "build_config"}
        c["layer"] = layer
        c.update(extra)
        return self.entry(cls, c, shape)

    def leaky_relu(self, name, slope, shape=None):
        c = self.base(name)
        c["negative_slope" if self.k3 else "alpha"] = slope
        return self.entry("LeakyReLU", c, shape)

    def elu(self, name, alpha, shape=None):
        c = self.base(name)
        c["alpha"] = alpha
        return self.entry("ELU", c, shape)

    # ---- functional wiring ------------------------------------------------------------------
    def mha(self, name, heads, key_dim, value_dim=None, dropout=0.0, shape=None):
        """MultiHeadAttention as get_config writes it (Keras 3: build_config's shapes_dict;
        tf.keras 2.15 adds the query/key/value shapes to the config)."""
        c = self.base(name)
        c.update({"num_heads": heads, "key_dim": key_dim, "value_dim": value_dim or key_dim,
                  "dropout": dropout, "use_bias": True, "output_shape": None,
                  "attention_axes": None, "kernel_initializer": GLOROT(),
                  "bias_initializer": ZEROS(), "kernel_regularizer": None,
                  "bias_regularizer": None, "activity_regularizer": None,
                  "kernel_constraint": None, "bias_constraint": None})
        if self.k3:
            c["seed"] = None
            e = self.entry("MultiHeadAttention", c)
            e["build_config"] = {"shapes_dict": {"query_shape": shape, "value_shape": shape}}
            return e
        c.update({"query_shape": shape, "key_shape": None, "value_shape": shape})
        return self.entry("MultiHeadAttention", c)

    def tensor(self, layer, node, index, shape):
        return {"class_name": "__keras_tensor__",
                "config": {"shape": shape, "dtype": "float32", "keras_history": [layer, node, index]}}

    def wire(self, entry, calls, kwargs=None):
        """calls: one list per node of (layer, node, tensor, shape) inputs."""
        name = entry["config"]["name"]
        e = dict(entry)
        e["name"] = name
        nodes = []
        for inputs in calls:
            if self.k3:
                ts = [self.tensor(l, n, t, s) for l, n, t, s in inputs]
                nodes.append({"args": [ts] if len(ts) > 1 else ts, "kwargs": dict(kwargs or {})})
            else:
                nodes.append([[l, n, t, dict(kwargs or {})] for l, n, t, _ in inputs])
        e["inbound_nodes"] = nodes
        return e

    def functional(self, name, layers, inputs, outputs, compile_config=None, nested=False):
        cfg = {"name": name, "trainable": True, "layers": layers}
        if self.k3 and len(inputs) == 1:
            cfg["input_layers"] = list(inputs[0])
            cfg["output_layers"] = list(outputs[0])
        else:
            cfg["input_layers"] = [list(i) for i in inputs]
            cfg["output_layers"] = [list(o) for o in outputs]
        if self.k3:
            m = {"module": "keras.src.models.functional", "class_name": "Functional",
                 "config": cfg, "registered_name": "Functional",
                 "build_config": {"input_shape": None}}
            if compile_config and not nested:
                m["compile_config"] = compile_config
            return m
        m = {"class_name": "Functional", "config": cfg}
        if nested:
            m = {"module": "keras.src.engine.functional", "class_name": "Functional",
                 "config": cfg, "registered_name": "Functional"}
        else:
            m.update({"keras_version": "2.15.0", "backend": "tensorflow"})
        return m

    def sequential(self, name, layers, input_shape, compile_config=None, nested=False):
        if self.k3:
            cfg = {"name": name, "trainable": True, "dtype": self.dtype(), "layers": layers,
                   "build_input_shape": input_shape}
            m = {"module": "keras", "class_name": "Sequential", "config": cfg,
                 "registered_name": None, "build_config": {"input_shape": input_shape}}
            if compile_config and not nested:
                m["compile_config"] = compile_config
            return m
        cfg = {"name": name, "layers": layers}
        if nested:
            return {"module": "keras.src.engine.sequential", "class_name": "Sequential",
                    "config": cfg, "registered_name": None,
                    "build_config": {"input_shape": input_shape}}
        return {"class_name": "Sequential", "config": cfg, "keras_version": "2.15.0",
                "backend": "tensorflow"}


def image_head(s, h, w, c=3):
    """The tail of the small image classifiers: a same Conv2D(4, 3, relu) of an h x w x c
    image, GlobalAveragePooling2D and a softmax Dense(3) (Keras 3), or a Dense(3) and a softmax
    Activation (tf.keras 2)."""
    N = None
    tail = [s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, h, w, c]),
            s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, h, w, 4])]
    if s.k3:
        return tail + [s.dense("dense", 3, "softmax", shape=[N, 4])]
    return tail + [s.dense("dense", 3, shape=[N, 4]), s.activation("activation", "softmax", [N, 3])]


def model_inputs(s, *specs):
    """A Functional model's InputLayer entries, one per (name, batch shape)."""
    layers = []
    for name, shape in specs:
        layer = s.input_layer(name, shape)
        layer["name"] = name
        layer["inbound_nodes"] = []
        layers.append(layer)
    return layers


def k3_compile(optimizer, opt_config, loss):
    base = {"name": optimizer, "learning_rate": 0.001, "weight_decay": None, "clipnorm": None,
            "global_clipnorm": None, "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
            "ema_overwrite_frequency": None, "loss_scale_factor": None,
            "gradient_accumulation_steps": None}
    base.update(opt_config)
    return {"optimizer": {"module": "keras.optimizers", "class_name": optimizer, "config": base,
                          "registered_name": None},
            "loss": loss, "loss_weights": None, "metrics": ["accuracy"],
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1,
            "jit_compile": False}


def k3_adam(lr, loss):
    return k3_compile("Adam", {"learning_rate": lr, "beta_1": 0.9, "beta_2": 0.999,
                               "epsilon": 1e-07, "amsgrad": False}, loss)


def k3_sgd(lr, loss):
    return k3_compile("SGD", {"learning_rate": lr, "momentum": 0.0, "nesterov": False}, loss)


# SparseCategoricalCrossentropy(from_logits=True), as an object.
SPARSE_FROM_LOGITS = {"module": "keras.losses", "class_name": "SparseCategoricalCrossentropy",
                      "config": {"name": "sparse_categorical_crossentropy",
                                 "reduction": "sum_over_batch_size", "from_logits": True,
                                 "ignore_class": None}, "registered_name": None}


def write(name, model):
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")


def volume_fixtures(k3):
    """Conv3D, the 3-D pools and their global forms over a volume (batch, D, H, W, C)."""
    N = None

    # Keras 3 Functional over a (batch, 4, 6, 6, 2) volume: a same Conv3D (relu),
    # BatchNormalization, MaxPooling3D, a strided same Conv3D with groups 2 (tanh), a same
    # AveragePooling3D of stride 1 (TF divisor), a valid Conv3D without bias, both global 3-D
    # pools, Flatten of a volume into a Dense (Keras's (D, H, W, C) order), Add of two volumes,
    # Concatenate; compile_config: Adam and SparseCategoricalCrossentropy(from_logits=True).
    s = k3
    L = [s.input_layer("volume", [N, 4, 6, 6, 2])]
    L[0]["name"] = "volume"
    L[0]["inbound_nodes"] = []

    def add(entry, *inputs):
        L.append(s.wire(entry, [[(i, 0, 0, None) for i in inputs]]))

    add(s.conv3d("conv3d", 4, (3, 3, 3), padding="same", activation="relu", shape=[N, 4, 6, 6, 2]), "volume")
    add(s.batchnorm("batch_normalization", shape=[N, 4, 6, 6, 4]), "conv3d")
    add(s.pool("MaxPooling3D", "max_pooling3d", (2, 2, 2), shape=[N, 4, 6, 6, 4]), "batch_normalization")
    add(s.conv3d("conv3d_1", 6, (2, 3, 3), strides=(1, 2, 2), padding="same", groups=2, activation="tanh", shape=[N, 2, 3, 3, 4]), "max_pooling3d")
    add(s.pool("AveragePooling3D", "average_pooling3d", (2, 2, 2), strides=(1, 1, 1), padding="same", shape=[N, 2, 2, 2, 6]), "conv3d_1")
    add(s.merge("Add", "add"), "conv3d_1", "average_pooling3d")
    add(s.conv3d("conv3d_2", 5, (1, 2, 2), use_bias=False, shape=[N, 2, 2, 2, 6]), "add")
    add(s.global_pool("GlobalAveragePooling3D", "global_average_pooling3d", [N, 2, 1, 1, 5]), "conv3d_2")
    add(s.global_pool("GlobalMaxPooling3D", "global_max_pooling3d", [N, 2, 2, 2, 6]), "average_pooling3d")
    add(s.flatten("flatten", [N, 2, 1, 1, 5]), "conv3d_2")
    add(s.dense("dense", 4, "relu", shape=[N, 10]), "flatten")
    add(s.merge("Concatenate", "concatenate", axis=-1), "global_average_pooling3d", "global_max_pooling3d", "dense")
    add(s.dense("logits", 3, shape=[N, 15]), "concatenate")
    write("k3_conv3d", s.functional("functional", L, [("volume", 0, 0)], [("logits", 0, 0)],
                                    k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # A Keras 3 Functional 3-D U-Net over (batch, 4, 6, 6, 2): a same Conv3D (relu), MaxPooling3D,
    # a same Conv3D (relu), a valid Conv3DTranspose of stride 2 and UpSampling3D of the pooled
    # volume back to the input's size, Concatenate with the first Conv3D's skip, ZeroPadding3D
    # of uneven widths, a same Conv3DTranspose of depth stride 2 (tanh), Cropping3D,
    # GlobalAveragePooling3D, Dense; Adam and SparseCategoricalCrossentropy(from_logits=True).
    L = [s.input_layer("volume", [N, 4, 6, 6, 2])]
    L[0]["name"] = "volume"
    L[0]["inbound_nodes"] = []
    add(s.conv3d("conv3d", 4, (3, 3, 3), padding="same", activation="relu", shape=[N, 4, 6, 6, 2]), "volume")
    add(s.pool("MaxPooling3D", "max_pooling3d", (2, 2, 2), shape=[N, 4, 6, 6, 4]), "conv3d")
    add(s.conv3d("conv3d_1", 8, (1, 3, 3), padding="same", activation="relu", shape=[N, 2, 3, 3, 4]), "max_pooling3d")
    up = s.conv2d("conv3d_transpose", 4, (2, 2, 2), (2, 2, 2), "valid", (1, 1, 1), shape=[N, 2, 3, 3, 8], cls="Conv3DTranspose")
    del up["config"]["groups"]
    add(up, "conv3d_1")
    ups = s.base("up_sampling3d")
    ups.update({"size": [2, 2, 2], "data_format": "channels_last"})
    add(s.entry("UpSampling3D", ups, [N, 2, 3, 3, 4]), "max_pooling3d")
    add(s.merge("Concatenate", "concatenate", axis=-1), "conv3d", "conv3d_transpose", "up_sampling3d")
    zp = s.base("zero_padding3d")
    zp.update({"padding": [[1, 0], [1, 1], [0, 2]], "data_format": "channels_last"})
    add(s.entry("ZeroPadding3D", zp, [N, 4, 6, 6, 12]), "concatenate")
    up2 = s.conv2d("conv3d_transpose_1", 3, (3, 3, 3), (2, 1, 1), "same", (1, 1, 1), activation="tanh", shape=[N, 5, 8, 8, 12], cls="Conv3DTranspose")
    del up2["config"]["groups"]
    add(up2, "zero_padding3d")
    cr = s.base("cropping3d")
    cr.update({"cropping": [[2, 3], [1, 1], [2, 0]], "data_format": "channels_last"})
    add(s.entry("Cropping3D", cr, [N, 10, 8, 8, 3]), "conv3d_transpose_1")
    add(s.global_pool("GlobalAveragePooling3D", "global_average_pooling3d", [N, 5, 6, 6, 3]), "cropping3d")
    add(s.dense("logits", 3, shape=[N, 3]), "global_average_pooling3d")
    write("k3_unet3d", s.functional("functional", L, [("volume", 0, 0)], [("logits", 0, 0)],
                                    k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # A Permute of a volume's axes (graphc holds the channels first): refused, naming the
    # layer, after a SpatialDropout3D and a Dense over the channels that graphc takes.
    L = [s.spatial_dropout("SpatialDropout3D", "spatial_dropout3d", 0.2, [N, 4, 6, 6, 2]),
         s.dense("dense", 3, shape=[N, 4, 6, 6, 2]),
         s.permute("permute", (2, 1, 3, 4), [N, 4, 6, 6, 3])]
    write("err_volume_permute", s.sequential("sequential", L, [N, 4, 6, 6, 2]))

    # A Keras 3 Sequential Dense over a volume's channels (per voxel; relu), LayerNormalization
    # over them, GlobalAveragePooling3D and a Dense; SGD and SparseCategoricalCrossentropy
    # (from_logits).
    L = [s.dense("dense", 4, "relu", shape=[N, 2, 3, 3, 2]),
         s.layer_norm("layer_normalization", shape=[N, 2, 3, 3, 4]),
         s.global_pool("GlobalAveragePooling3D", "global_average_pooling3d", [N, 2, 3, 3, 4]),
         s.dense("dense_1", 3, shape=[N, 4])]
    write("k3_volume_dense", s.sequential("sequential", L, [N, 2, 3, 3, 2],
                                          k3_sgd(0.1, SPARSE_FROM_LOGITS)))


def crop_pad_upsample_fixtures(k3, k2):
    """Cropping2D, Cropping1D, ZeroPadding1D, UpSampling2D and UpSampling1D."""
    N = None

    # J. Keras 3 Functional: Cropping2D of the input (uneven edges), a same Conv2D whose output
    # a Cropping2D and a valid Conv2D both read, Add, Flatten, Dense softmax; compile_config:
    # SGD.
    s = k3
    L = [s.input_layer("input_layer", [N, 9, 8, 3])]
    L[0]["name"] = "input_layer"
    L[0]["inbound_nodes"] = []
    def add(entry, inputs):
        L.append(s.wire(entry, [[(i, 0, 0, None) for i in inputs]]))
    add(s.cropping("cropping2d", ((1, 0), (2, 1)), [N, 9, 8, 3]), ["input_layer"])
    add(s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 8, 5, 3]), ["cropping2d"])
    add(s.cropping("cropping2d_1", ((1, 1), (1, 1)), [N, 8, 5, 4]), ["conv2d"])
    add(s.conv2d("conv2d_1", 4, (3, 3), activation="tanh", shape=[N, 8, 5, 4]), ["conv2d"])
    add(s.merge("Add", "add"), ["cropping2d_1", "conv2d_1"])
    add(s.flatten("flatten", [N, 6, 3, 4]), ["add"])
    add(s.dense("dense", 3, "softmax", shape=[N, 72]), ["flatten"])
    write("k3_crop2d", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                    k3_sgd(0.05, "sparse_categorical_crossentropy")))

    # J2. Keras 3 Functional: Rescaling(scale 0.5, offset -0.25) of the input, a same Conv2D
    # (relu) whose output a same Conv2D (tanh) reads, a 1x1 Conv2D of the rescaled input,
    # Maximum of the last two, Minimum of that and the first conv, GlobalAveragePooling2D,
    # Dense softmax; compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 6, 6, 3])]
    L[0]["name"] = "input_layer"
    L[0]["inbound_nodes"] = []
    add(s.rescaling("rescaling", 0.5, -0.25, [N, 6, 6, 3]), ["input_layer"])
    add(s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 6, 6, 3]), ["rescaling"])
    add(s.conv2d("conv2d_1", 4, (3, 3), padding="same", activation="tanh", shape=[N, 6, 6, 4]), ["conv2d"])
    add(s.conv2d("conv2d_2", 4, (1, 1), shape=[N, 6, 6, 3]), ["rescaling"])
    add(s.merge("Maximum", "maximum"), ["conv2d_1", "conv2d_2"])
    add(s.merge("Minimum", "minimum"), ["maximum", "conv2d"])
    add(s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 4]), ["minimum"])
    add(s.dense("dense", 3, "softmax", shape=[N, 4]), ["global_average_pooling2d"])
    write("k3_rescale_max", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                         k3_adam(0.01, "sparse_categorical_crossentropy")))

    # J3. Keras 3 Sequential: Normalization of the image's channels (axis -1, adapted: its mean,
    # variance and count in the weights file), a same Conv2D (relu), GlobalAveragePooling2D,
    # Normalization of the 4 features with the mean and variance in its config, Normalization
    # with axis None, inverted, of one mean and variance in its config, Dense softmax;
    # compile_config: Adam.
    L = [s.input_layer("input_layer", [N, 6, 6, 3]),
         s.normalization("normalization", [-1], shape=[N, 6, 6, 3]),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 6, 6, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 4]),
         s.normalization("normalization_1", [-1], mean=[0.1, 0.2, 0.3, 0.4],
                         variance=[1.0, 2.0, 0.5, 4.0], shape=[N, 4]),
         s.normalization("normalization_2", [], invert=True, mean=0.5, variance=4.0, shape=[N, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_normalization", s.sequential("sequential", L, [N, 6, 6, 3],
                                           k3_adam(0.01, "sparse_categorical_crossentropy")))

    # K. tf.keras 2.15 Sequential: Cropping1D of the (batch, steps, features) input, Conv1D,
    # Cropping1D of the 1-D feature map, Flatten, Dense, Activation softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 12, 3]),
         s.cropping("cropping1d", (1, 2), [N, 12, 3]),
         s.conv1d("conv1d", 4, 3, activation="relu", shape=[N, 9, 3]),
         s.cropping("cropping1d_1", (2, 1), [N, 7, 4]),
         s.flatten("flatten", [N, 4, 4]),
         s.dense("dense", 3, shape=[N, 16]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_crop1d", s.sequential("sequential", L, [N, 12, 3]))

    # L. tf.keras 2.15 Sequential: ZeroPadding1D folded into a valid Conv1D, a MaxPooling1D
    # (after relu), a valid AveragePooling1D (the zeros count), a causal dilated Conv1D, a
    # strided same Conv1D; Flatten, Dense, Activation softmax.
    L = [s.input_layer("input_1", [N, 10, 3]),
         s.zero_padding1d("zero_padding1d", (2, 1), [N, 10, 3]),
         s.conv1d("conv1d", 4, 3, activation="relu", shape=[N, 13, 3]),
         s.zero_padding1d("zero_padding1d_1", (1, 0), [N, 11, 4]),
         s.pool("MaxPooling1D", "max_pooling1d", (2,), shape=[N, 12, 4]),
         s.zero_padding1d("zero_padding1d_2", 1, [N, 6, 4]),
         s.pool("AveragePooling1D", "average_pooling1d", (2,), shape=[N, 8, 4]),
         s.zero_padding1d("zero_padding1d_3", (1, 2), [N, 4, 4]),
         s.conv1d("conv1d_1", 3, 2, padding="causal", dilation=2, activation="tanh", shape=[N, 7, 4]),
         s.zero_padding1d("zero_padding1d_4", 1, [N, 7, 3]),
         s.conv1d("conv1d_2", 2, 3, strides=2, padding="same", shape=[N, 9, 3]),
         s.flatten("flatten", [N, 5, 2]),
         s.dense("dense", 3, shape=[N, 10]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_pad1d", s.sequential("sequential", L, [N, 10, 3]))

    # M. Keras 3 Sequential: same Conv2D, UpSampling2D (2, 3), strided Conv2D, UpSampling2D
    # (2, 2), GlobalAveragePooling2D, Dense softmax; compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 3, 4, 2]),
         s.conv2d("conv2d", 3, (2, 2), padding="same", activation="relu", shape=[N, 3, 4, 2]),
         s.upsampling("up_sampling2d", (2, 3), shape=[N, 3, 4, 3]),
         s.conv2d("conv2d_1", 4, (3, 3), strides=(2, 2), shape=[N, 6, 12, 3]),
         s.upsampling("up_sampling2d_1", (2, 2), shape=[N, 2, 5, 4]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 4, 10, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_upsample2d", s.sequential("sequential", L, [N, 3, 4, 2], k3_adam(0.01, "sparse_categorical_crossentropy")))

    # M2. Keras 3 Sequential: a same Conv2D, GroupNormalization (4 groups of 2 channels),
    # UpSampling2D (2, 3) bilinear, a strided Conv2D, GroupNormalization (2 groups, no center,
    # epsilon 1e-5), UpSampling2D (2, 2) bilinear, GlobalAveragePooling2D, Dense softmax;
    # compile_config: Adam.
    L = [s.input_layer("input_layer", [N, 4, 5, 3]),
         s.conv2d("conv2d", 8, (3, 3), padding="same", shape=[N, 4, 5, 3]),
         s.group_norm("group_normalization", 4, shape=[N, 4, 5, 8]),
         s.upsampling("up_sampling2d", (2, 3), interpolation="bilinear", shape=[N, 4, 5, 8]),
         s.conv2d("conv2d_1", 4, (3, 3), strides=(2, 2), activation="relu", shape=[N, 8, 15, 8]),
         s.group_norm("group_normalization_1", 2, epsilon=1e-5, center=False, shape=[N, 3, 7, 4]),
         s.upsampling("up_sampling2d_1", (2, 2), interpolation="bilinear", shape=[N, 3, 7, 4]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 14, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_group_norm_bilinear", s.sequential("sequential", L, [N, 4, 5, 3],
                                                 k3_adam(0.01, "sparse_categorical_crossentropy")))

    # N. tf.keras 2.15 Sequential: UpSampling1D of the (batch, steps, features) input, Conv1D,
    # UpSampling1D of the 1-D feature map, GlobalMaxPooling1D, Dense, Activation softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 5, 3]),
         s.upsampling("up_sampling1d", 2, shape=[N, 5, 3]),
         s.conv1d("conv1d", 4, 3, activation="relu", shape=[N, 10, 3]),
         s.upsampling("up_sampling1d_1", 3, shape=[N, 8, 4]),
         s.global_pool("GlobalMaxPooling1D", "global_max_pooling1d", [N, 24, 4]),
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_upsample1d", s.sequential("sequential", L, [N, 5, 3]))


def conv_family_fixtures(k3, k2):
    """Conv1D and 1-D pooling, Conv2DTranspose, SeparableConv2D, Permute, LayerNormalization."""
    N = None

    # F. Keras 3 Functional over a (batch, steps, channels) input: causal dilated Conv1D, strided
    # same grouped Conv1D, BatchNormalization, MaxPooling1D, same AveragePooling1D, a Conv1D
    # without bias, both global 1-D pools, Flatten of a 1-D feature map into a Dense,
    # Concatenate; compile_config: Adam and SparseCategoricalCrossentropy(from_logits=True).
    s = k3
    L = [s.input_layer("sequence", [N, 16, 3])]
    L[0]["name"] = "sequence"
    L[0]["inbound_nodes"] = []

    def add(entry, *inputs):
        L.append(s.wire(entry, [[(i, 0, 0, None) for i in inputs]]))

    add(s.conv1d("conv1d", 4, 3, padding="causal", dilation=2, activation="relu", shape=[N, 16, 3]), "sequence")
    add(s.conv1d("conv1d_1", 6, 3, strides=2, padding="same", groups=2, activation="tanh", shape=[N, 16, 4]), "conv1d")
    add(s.batchnorm("batch_normalization", shape=[N, 8, 6]), "conv1d_1")
    add(s.pool("MaxPooling1D", "max_pooling1d", (2,), shape=[N, 8, 6]), "batch_normalization")
    add(s.pool("AveragePooling1D", "average_pooling1d", (3,), strides=(1,), padding="same", shape=[N, 4, 6]), "max_pooling1d")
    add(s.conv1d("conv1d_2", 5, 2, use_bias=False, shape=[N, 4, 6]), "average_pooling1d")
    add(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 3, 5]), "conv1d_2")
    add(s.global_pool("GlobalMaxPooling1D", "global_max_pooling1d", [N, 3, 5]), "conv1d_2")
    add(s.flatten("flatten", [N, 3, 5]), "conv1d_2")
    add(s.dense("dense", 4, "relu", shape=[N, 15]), "flatten")
    add(s.merge("Concatenate", "concatenate", axis=-1), "global_average_pooling1d", "global_max_pooling1d", "dense")
    add(s.dense("logits", 3, shape=[N, 14]), "concatenate")
    write("k3_conv1d", s.functional("functional", L, [("sequence", 0, 0)], [("logits", 0, 0)],
                                    k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # G. tf.keras 2.15 Sequential: Conv1D, LayerNormalization over the channels of a 1-D
    # feature map, Permute (steps <-> channels), a strided Conv1D over the permuted tensor,
    # GlobalMaxPooling1D, LayerNormalization of a vector without center, Dense, softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 10, 4]),
         s.conv1d("conv1d", 6, 3, activation="relu", shape=[N, 10, 4]),
         s.layer_norm("layer_normalization", shape=[N, 8, 6]),
         s.permute("permute", (2, 1), [N, 8, 6]),
         s.conv1d("conv1d_1", 4, 2, strides=2, shape=[N, 6, 8]),
         s.global_pool("GlobalMaxPooling1D", "global_max_pooling1d", [N, 3, 4]),
         s.layer_norm("layer_normalization_1", center=False, epsilon=0.01, shape=[N, 4]),
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_seq1d", s.sequential("sequential", L, [N, 10, 4]))

    # H. Keras 3 Functional, a small U-Net: Conv2D and MaxPooling2D down, SeparableConv2D
    # (depth multiplier 2), a strided same Conv2DTranspose up, Concatenate with the skip
    # connection, LayerNormalization over the channels, Permute (height <-> width), a valid
    # strided Conv2DTranspose, a strided SeparableConv2D without bias, a dilated same
    # Conv2DTranspose, GlobalAveragePooling2D, Dense softmax; compile_config SGD.
    s = k3
    L = [s.input_layer("image", [N, 6, 6, 3])]
    L[0]["name"] = "image"
    L[0]["inbound_nodes"] = []
    add(s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 6, 6, 3]), "image")
    add(s.pool("MaxPooling2D", "max_pooling2d", (2, 2), shape=[N, 6, 6, 4]), "conv2d")
    add(s.separable("separable_conv2d", 6, (3, 3), multiplier=2, padding="same", activation="relu", shape=[N, 3, 3, 4]), "max_pooling2d")
    add(s.conv2d_transpose("conv2d_transpose", 4, (3, 3), strides=(2, 2), padding="same", activation="relu", shape=[N, 3, 3, 6]), "separable_conv2d")
    add(s.merge("Concatenate", "concatenate", axis=-1), "conv2d", "conv2d_transpose")
    add(s.layer_norm("layer_normalization", shape=[N, 6, 6, 8]), "concatenate")
    add(s.permute("permute", (2, 1, 3), [N, 6, 6, 8]), "layer_normalization")
    add(s.conv2d_transpose("conv2d_transpose_1", 3, (2, 2), strides=(2, 2), shape=[N, 6, 6, 8]), "permute")
    add(s.separable("separable_conv2d_1", 5, (3, 3), strides=(2, 2), use_bias=False, shape=[N, 12, 12, 3]), "conv2d_transpose_1")
    add(s.conv2d_transpose("conv2d_transpose_2", 4, (3, 3), padding="same", dilation=(2, 2), activation="tanh", shape=[N, 5, 5, 5]), "separable_conv2d_1")
    add(s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 5, 5, 4]), "conv2d_transpose_2")
    add(s.dense("dense", 4, "softmax", shape=[N, 4]), "global_average_pooling2d")
    write("k3_transpose", s.functional("functional", L, [("image", 0, 0)], [("dense", 0, 0)],
                                       k3_sgd(0.05, "sparse_categorical_crossentropy")))

    # I. tf.keras 2.15 Sequential: a valid strided Conv2DTranspose with output_padding, a strided
    # SeparableConv2D, a same Conv2DTranspose whose output_padding the even kernel needs, no
    # bias; Flatten (a Dense after a transposed convolution), softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 4, 4, 2]),
         s.conv2d_transpose("conv2d_transpose", 3, (3, 3), strides=(2, 2), output_padding=(1, 1), activation="relu", shape=[N, 4, 4, 2]),
         s.separable("separable_conv2d", 4, (2, 2), strides=(2, 2), shape=[N, 10, 10, 3]),
         s.conv2d_transpose("conv2d_transpose_1", 2, (4, 4), strides=(2, 2), padding="same", output_padding=(1, 1), use_bias=False, shape=[N, 5, 5, 4]),
         s.flatten("flatten", [N, 9, 9, 2]),
         s.dense("dense", 3, shape=[N, 162]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_upsample", s.sequential("sequential", L, [N, 4, 4, 2]))


def noise_fixtures(k3, k2):
    """The noise layers: spatial dropout, Dropout's noise_shape, Gaussian noise and dropout,
    AlphaDropout."""
    N = None
    # Keras 3 Sequential: GaussianNoise(0.3) of the image, a same Conv2D (relu),
    # SpatialDropout2D(0.25), a same Conv2D (tanh), GaussianDropout(0.2),
    # GlobalAveragePooling2D, Dense softmax; compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 6, 6, 3]),
         s.noise("GaussianNoise", "gaussian_noise", 0.3, [N, 6, 6, 3]),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 6, 6, 3]),
         s.spatial_dropout("SpatialDropout2D", "spatial_dropout2d", 0.25, [N, 6, 6, 4]),
         s.conv2d("conv2d_1", 4, (3, 3), padding="same", activation="tanh", shape=[N, 6, 6, 4]),
         s.noise("GaussianDropout", "gaussian_dropout", 0.2, [N, 6, 6, 4]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_noise_cnn", s.sequential("sequential", L, [N, 6, 6, 3],
                                       k3_adam(0.01, "sparse_categorical_crossentropy")))

    # tf.keras 2.15 Sequential over a (5 steps, 6 features) input: Dense(8, relu) on the rows,
    # SpatialDropout1D(0.3) (one draw per sample and feature), Conv1D(4, 3, selu),
    # Dropout(0.25, noise_shape=(None, 1, 4)) of the feature map (one draw per sample and
    # channel), AlphaDropout(0.1), Flatten, Dense(3), Activation softmax.
    s = k2
    drop = s.dropout("dropout", 0.25, [N, 3, 4])
    drop["config"]["noise_shape"] = [None, 1, 4]
    L = [s.input_layer("input_1", [N, 5, 6]),
         s.dense("dense", 8, "relu", shape=[N, 5, 6]),
         s.spatial_dropout("SpatialDropout1D", "spatial_dropout1d", 0.3, [N, 5, 8]),
         s.conv1d("conv1d", 4, 3, activation="selu", shape=[N, 5, 8]),
         drop,
         s.noise("AlphaDropout", "alpha_dropout", 0.1, [N, 3, 4]),
         s.flatten("flatten", [N, 3, 4]),
         s.dense("dense_1", 3, shape=[N, 12]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_noise_seq", s.sequential("sequential", L, [N, 5, 6]))

    # Keras 3 Sequential of the augmentation layers of the image-classification tutorials:
    # RandomFlip("horizontal"), RandomRotation(0.1), RandomZoom(0.2) (the aspect ratio kept),
    # RandomTranslation(0.1, 0.15, fill_mode="constant", fill_value=0.5), then a same Conv2D
    # (relu), GlobalAveragePooling2D, Dense softmax; compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 8, 8, 3]),
         s.augment("RandomFlip", "random_flip", [N, 8, 8, 3], mode="horizontal"),
         s.augment("RandomRotation", "random_rotation", [N, 8, 8, 3], factor=0.1),
         s.augment("RandomZoom", "random_zoom", [N, 8, 8, 3], height_factor=0.2, width_factor=None),
         s.augment("RandomTranslation", "random_translation", [N, 8, 8, 3], height_factor=0.1,
                   width_factor=0.15, fill_mode="constant", fill_value=0.5),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 8, 8, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 8, 8, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_augment", s.sequential("sequential", L, [N, 8, 8, 3],
                                     k3_adam(0.01, "sparse_categorical_crossentropy")))

    # tf.keras 2.15 Sequential on a 7x9 image: RandomFlip (both ways), RandomZoom((-0.2, 0.1),
    # (0.1, 0.3), fill_mode="nearest", interpolation="nearest"), RandomRotation((-0.05, 0.1)),
    # a same Conv2D (tanh), GlobalAveragePooling2D, Dense, Activation softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 7, 9, 3]),
         s.augment("RandomFlip", "random_flip", [N, 7, 9, 3], mode="horizontal_and_vertical"),
         s.augment("RandomZoom", "random_zoom", [N, 7, 9, 3], height_factor=[-0.2, 0.1],
                   width_factor=[0.1, 0.3], fill_mode="nearest", interpolation="nearest"),
         s.augment("RandomRotation", "random_rotation", [N, 7, 9, 3], factor=[-0.05, 0.1]),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="tanh", shape=[N, 7, 9, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 7, 9, 4]),
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_augment", s.sequential("sequential", L, [N, 7, 9, 3]))

    # Keras 3 colour augmentation on a 6x5 image: RandomContrast(0.3, value_range (-1.5, 1.5)),
    # RandomBrightness((-0.1, 0.2), value_range (-2, 2)), a same Conv2D (relu),
    # GlobalAveragePooling2D, Dense softmax; compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 6, 5, 3]),
         s.augment("RandomContrast", "random_contrast", [N, 6, 5, 3], factor=0.3,
                   value_range=[-1.5, 1.5]),
         s.augment("RandomBrightness", "random_brightness", [N, 6, 5, 3], factor=[-0.1, 0.2],
                   value_range=[-2, 2]),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 6, 5, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 5, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_color", s.sequential("sequential", L, [N, 6, 5, 3],
                                   k3_adam(0.01, "sparse_categorical_crossentropy")))
    s = k2

    # Keras 3 RandomGrayscale(0.5) and RandomInvert((0.2, 0.8), value_range (-2, 2)) on a 6x5
    # RGB image, a same Conv2D (relu), GlobalAveragePooling2D, Dense softmax; Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 6, 5, 3]),
         s.augment("RandomGrayscale", "random_grayscale", [N, 6, 5, 3], factor=0.5),
         s.augment("RandomInvert", "random_invert", [N, 6, 5, 3], factor=[0.2, 0.8],
                   value_range=[-2, 2])] + image_head(s, 6, 5)
    write("k3_gray_invert", s.sequential("sequential", L, [N, 6, 5, 3],
                                         k3_adam(0.01, "sparse_categorical_crossentropy")))

    # tf.keras 2 CenterCrop(4, 5) of a 7x8 image (from row 1 and column 1), a same Conv2D
    # (relu), GlobalAveragePooling2D, Dense, Activation softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 7, 8, 3]),
         s.merge("CenterCrop", "center_crop", [N, 7, 8, 3], height=4, width=5),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 4, 5, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 4, 5, 4]),
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_center_crop", s.sequential("sequential", L, [N, 7, 8, 3]))

    # Keras 3 Resizing(6, 12) of a 3x4 image (bilinear, by 2 and 3), Resizing(6, 12) again (the
    # same size: nothing), Resizing(12, 12, nearest) (by 2 and 1), a same Conv2D (relu),
    # GlobalAveragePooling2D, Dense softmax; Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 3, 4, 3]),
         s.merge("Resizing", "resizing", [N, 3, 4, 3], height=6, width=12,
                 interpolation="bilinear", crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                 fill_mode="constant", fill_value=0.0, data_format="channels_last"),
         s.merge("Resizing", "resizing_1", [N, 6, 12, 3], height=6, width=12,
                 interpolation="bilinear", crop_to_aspect_ratio=False),
         s.merge("Resizing", "resizing_2", [N, 6, 12, 3], height=12, width=12,
                 interpolation="nearest", crop_to_aspect_ratio=False),
         s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu", shape=[N, 12, 12, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 12, 12, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 4])]
    write("k3_resizing", s.sequential("sequential", L, [N, 3, 4, 3],
                                      k3_adam(0.01, "sparse_categorical_crossentropy")))
    s = k2

    # Keras 3 RandomCrop(7, 8) of a 9x11 image (one random place for the batch), RandomCrop(7,
    # 6) of that (as high as the target: Keras 3's centre window, columns 1 to 6), a same
    # Conv2D (relu), GlobalAveragePooling2D, Dense softmax; Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 9, 11, 3]),
         s.augment("RandomCrop", "random_crop", [N, 9, 11, 3], height=7, width=8),
         s.augment("RandomCrop", "random_crop_1", [N, 7, 8, 3], height=7, width=6)] + image_head(s, 7, 6)
    write("k3_random_crop", s.sequential("sequential", L, [N, 9, 11, 3],
                                         k3_adam(0.01, "sparse_categorical_crossentropy")))

    # tf.keras 2 RandomCrop(6, 5) of a 6x8 image (as high as the target: tf.keras 2 still
    # crops at a random column), a same Conv2D (relu), GlobalAveragePooling2D, Dense,
    # Activation softmax.
    s = k2
    L = [s.input_layer("input_1", [N, 6, 8, 3]),
         s.augment("RandomCrop", "random_crop", [N, 6, 8, 3], height=6, width=5)] + image_head(s, 6, 5)
    write("tf2_random_crop", s.sequential("sequential", L, [N, 6, 8, 3]))

    # tf.keras 2: RandomCrop(8, 8) of a 6x8 image (smaller: smart_resize's 6x6 window from
    # column 1, resized to 8x8), Resizing(5, 7) (shrinking, bilinear), a same Conv2D (relu),
    # GlobalAveragePooling2D, Dense, Activation softmax.
    L = [s.input_layer("input_1", [N, 6, 8, 3]),
         s.augment("RandomCrop", "random_crop", [N, 6, 8, 3], height=8, width=8),
         s.merge("Resizing", "resizing", [N, 8, 8, 3], height=5, width=7,
                 interpolation="bilinear", crop_to_aspect_ratio=False)] + image_head(s, 5, 7)
    write("tf2_resize", s.sequential("sequential", L, [N, 6, 8, 3]))

    # Keras 3 resizing any way: Resizing(6, 8) of 9x12 (shrinking, bilinear), Resizing(7, 10,
    # nearest) (by 7/6 and 5/4), Resizing(5, 5, crop_to_aspect_ratio) (the centred 7x7 from
    # column 1, shrunk), CenterCrop(6, 6) of the 5x5 (smaller: smart-resized), RandomCrop(8, 5)
    # of the 6x6 (smaller: Keras 3 slices rows 0-5 and columns 1-5 and resizes them), a same
    # Conv2D (relu), GlobalAveragePooling2D, Dense softmax; Adam.
    s = k3
    resize = dict(antialias=False, pad_to_aspect_ratio=False, fill_mode="constant",
                  fill_value=0.0, data_format="channels_last")
    L = [s.input_layer("input_layer", [N, 9, 12, 3]),
         s.merge("Resizing", "resizing", [N, 9, 12, 3], height=6, width=8,
                 interpolation="bilinear", crop_to_aspect_ratio=False, **resize),
         s.merge("Resizing", "resizing_1", [N, 6, 8, 3], height=7, width=10,
                 interpolation="nearest", crop_to_aspect_ratio=False, **resize),
         s.merge("Resizing", "resizing_2", [N, 7, 10, 3], height=5, width=5,
                 interpolation="bilinear", crop_to_aspect_ratio=True, **resize),
         s.merge("CenterCrop", "center_crop", [N, 5, 5, 3], height=6, width=6,
                 data_format="channels_last"),
         s.augment("RandomCrop", "random_crop", [N, 6, 6, 3], height=8, width=5)] + image_head(s, 8, 5)
    write("k3_resize", s.sequential("sequential", L, [N, 9, 12, 3],
                                    k3_adam(0.01, "sparse_categorical_crossentropy")))
    s = k2

    # Refused: Resizing with bicubic interpolation.
    L = [s.input_layer("input_1", [N, 6, 8, 3]),
         s.merge("Resizing", "resizing", [N, 6, 8, 3], height=4, width=4,
                 interpolation="bicubic", crop_to_aspect_ratio=False),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 4, 4, 3]),
         s.dense("dense", 3, "softmax", shape=[N, 3])]
    write("err_resize_bicubic", s.sequential("sequential", L, [N, 6, 8, 3]))

    # Keras 3 1-D separable and depthwise convolutions: (8 steps, 4 features) ->
    # SeparableConv1D(6, 3, same, depth_multiplier 2, relu) -> DepthwiseConv1D(3, valid,
    # depth_multiplier 2) -> GlobalAveragePooling1D -> Dense(3) softmax; Adam.
    s = k3
    sep = s.separable("separable_conv1d", 6, (3,), 2, strides=(1,), padding="same",
                      activation="relu", shape=[N, 8, 4])
    sep["class_name"] = "SeparableConv1D"
    sep["config"]["dilation_rate"] = [1]
    dw1 = s.depthwise("depthwise_conv1d", (3,), 2, strides=(1,), shape=[N, 8, 6])
    dw1["class_name"] = "DepthwiseConv1D"
    dw1["config"]["dilation_rate"] = [1]
    L = [s.input_layer("input_layer", [N, 8, 4]), sep, dw1,
         s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 6, 12]),
         s.dense("dense", 3, "softmax", shape=[N, 12])]
    write("k3_conv1d_sep", s.sequential("sequential", L, [N, 8, 4],
                                        k3_adam(0.01, "sparse_categorical_crossentropy")))

    # PReLU's sharings. Keras 3 Sequential on a 6x6 image: Conv2D(4, 3, same) -> PReLU
    # (shared_axes [1, 2]: one alpha per channel) -> Conv2D(4, 3, same) -> PReLU (an alpha per
    # element, (6, 6, 4)) -> GlobalAveragePooling2D -> Dense(6) -> PReLU (per feature) ->
    # Dense(3) softmax; Adam. tf.keras 2 Sequential on (5 steps, 4 features): Conv1D(6, 3,
    # same) -> PReLU (shared_axes [1]: per feature) -> Dense(5) -> PReLU (shared_axes [1, 2]:
    # one alpha) -> GlobalAveragePooling1D -> Dense(3) -> Activation softmax.
    def prelu(st, name, shared_axes, shape):
        c = st.base(name)
        c.update({"alpha_initializer": ZEROS(), "alpha_regularizer": None,
                  "alpha_constraint": None, "shared_axes": shared_axes})
        return st.entry("PReLU", c, shape)

    s = k3
    L = [s.input_layer("input_layer", [N, 6, 6, 3]),
         s.conv2d("conv2d", 4, (3, 3), padding="same", shape=[N, 6, 6, 3]),
         prelu(s, "p_re_lu", [1, 2], [N, 6, 6, 4]),
         s.conv2d("conv2d_1", 4, (3, 3), padding="same", shape=[N, 6, 6, 4]),
         prelu(s, "p_re_lu_1", None, [N, 6, 6, 4]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 4]),
         s.dense("dense", 6, shape=[N, 4]),
         prelu(s, "p_re_lu_2", None, [N, 6]),
         s.dense("dense_1", 3, "softmax", shape=[N, 6])]
    write("k3_prelu", s.sequential("sequential", L, [N, 6, 6, 3],
                                   k3_adam(0.01, "sparse_categorical_crossentropy")))
    s = k2
    L = [s.input_layer("input_1", [N, 5, 4]),
         s.conv1d("conv1d", 6, 3, padding="same", shape=[N, 5, 4]),
         prelu(s, "p_re_lu", [1], [N, 5, 6]),
         s.dense("dense", 5, shape=[N, 5, 6]),
         prelu(s, "p_re_lu_1", [1, 2], [N, 5, 5]),
         s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 5]),
         s.dense("dense_1", 3, shape=[N, 5]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_prelu", s.sequential("sequential", L, [N, 5, 4]))

    # Video (a CNN per frame, then a recurrent layer over the frames). Keras 3 Sequential on
    # (4 frames, 8x8, 3): TimeDistributed(Conv2D(4, 3, same, relu)) ->
    # TimeDistributed(MaxPooling2D(2)) -> TimeDistributed(Flatten) -> LSTM(6) -> Dense(3)
    # softmax; Adam. tf.keras 2 Sequential on (3 frames, 6x6, 2): TimeDistributed(Conv2D(4, 3))
    # -> TimeDistributed(BatchNormalization) -> TimeDistributed(GlobalAveragePooling2D) ->
    # GRU(5) -> Dense(3) -> Activation softmax.
    s = k3
    L = [s.input_layer("input_layer", [N, 4, 8, 8, 3]),
         s.wrapper("TimeDistributed", "time_distributed",
                   s.conv2d("conv2d", 4, (3, 3), padding="same", activation="relu"),
                   [N, 4, 8, 8, 3]),
         s.wrapper("TimeDistributed", "time_distributed_1",
                   s.pool("MaxPooling2D", "max_pooling2d", (2, 2)), [N, 4, 8, 8, 4]),
         s.wrapper("TimeDistributed", "time_distributed_2", s.flatten("flatten"), [N, 4, 4, 4, 4]),
         s.rnn("LSTM", "lstm", 6, shape=[N, 4, 64]),
         s.dense("dense", 3, "softmax", shape=[N, 6])]
    write("k3_video", s.sequential("sequential", L, [N, 4, 8, 8, 3],
                                   k3_adam(0.01, "sparse_categorical_crossentropy")))
    s = k2
    L = [s.input_layer("input_1", [N, 3, 6, 6, 2]),
         s.wrapper("TimeDistributed", "time_distributed", s.conv2d("conv2d", 4, (3, 3)),
                   [N, 3, 6, 6, 2]),
         s.wrapper("TimeDistributed", "time_distributed_1",
                   s.batchnorm("batch_normalization", shape=[N, 4, 4, 4]), [N, 3, 4, 4, 4]),
         s.wrapper("TimeDistributed", "time_distributed_2",
                   s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d"),
                   [N, 3, 4, 4, 4]),
         s.rnn("GRU", "gru", 5, shape=[N, 3, 4]),
         s.dense("dense", 3, shape=[N, 5]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_video", s.sequential("sequential", L, [N, 3, 6, 6, 2]))
    # Refused: a Dense reading the frames themselves (not per frame).
    L = [s.input_layer("input_1", [N, 3, 6, 6, 2]),
         s.wrapper("TimeDistributed", "time_distributed", s.conv2d("conv2d", 4, (3, 3)),
                   [N, 3, 6, 6, 2]),
         s.flatten("flatten", [N, 3, 4, 4, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 192])]
    write("err_frames", s.sequential("sequential", L, [N, 3, 6, 6, 2]))

    # Refused: an augmentation layer after a trained one (random_affine has no input gradient),
    # and RandomRotation's fill_mode wrap.
    L = [s.input_layer("input_1", [N, 6, 6, 3]),
         s.conv2d("conv2d", 3, (3, 3), padding="same", shape=[N, 6, 6, 3]),
         s.augment("RandomRotation", "random_rotation", [N, 6, 6, 3], factor=0.1),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 3]),
         s.dense("dense", 3, "softmax", shape=[N, 3])]
    write("err_augment_late", s.sequential("sequential", L, [N, 6, 6, 3]))
    L = [s.input_layer("input_1", [N, 6, 6, 3]),
         s.augment("RandomRotation", "random_rotation", [N, 6, 6, 3], factor=0.1, fill_mode="wrap"),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 3]),
         s.dense("dense", 3, "softmax", shape=[N, 3])]
    write("err_augment_wrap", s.sequential("sequential", L, [N, 6, 6, 3]))

    # Refused: a noise_shape that shares the mask across the batch, and one whose shared axes
    # (the width and the channels) are not adjacent in graphc's NCHW layout.
    for case, noise_shape in (("err_noise_batch", [1, 6, 6, 3]), ("err_noise_axes", [None, 6, 1, 1])):
        drop = s.dropout("dropout", 0.5, [N, 6, 6, 3])
        drop["config"]["noise_shape"] = noise_shape
        L = [s.input_layer("input_1", [N, 6, 6, 3]), drop,
             s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 3]),
             s.dense("dense", 3, "softmax", shape=[N, 3])]
        write(case, s.sequential("sequential", L, [N, 6, 6, 3]))


def conv1d_transpose_fixtures(k2):
    """tf.keras 2.15 Sequential over a (6 steps, 4 features) input: Conv1D(5, 3, same, relu),
    Conv1DTranspose(3, 3, strides 2, same) to 12 steps, Conv1DTranspose(2, 2, strides 3,
    valid, output_padding 1, tanh) to (12 - 1) * 3 + 2 + 1 = 36 steps, Flatten, Dense(3),
    Activation softmax."""
    N = None
    s = k2
    L = [s.input_layer("input_1", [N, 6, 4]),
         s.conv1d("conv1d", 5, 3, padding="same", activation="relu", shape=[N, 6, 4]),
         s.conv1d_transpose("conv1d_transpose", 3, 3, strides=2, padding="same", shape=[N, 6, 5]),
         s.conv1d_transpose("conv1d_transpose_1", 2, 2, strides=3, padding="valid",
                            output_padding=1, activation="tanh", shape=[N, 12, 3]),
         s.flatten("flatten", [N, 36, 2]),
         s.dense("dense", 3, shape=[N, 72]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_conv1d_transpose", s.sequential("sequential", L, [N, 6, 4]))


def se_fixtures(k3):
    """Squeeze-and-excitation blocks as Keras's EfficientNet and MobileNetV3 write them."""
    N = None
    s = k3
    # Rescaling per channel, a same Conv2D(8, swish); GlobalAveragePooling2D(keepdims) -> Conv2D(2, 1, swish) ->
    # Conv2D(8, 1, sigmoid) -> Multiply with the image (a per-channel gate); then
    # EfficientNet's form: GlobalAveragePooling2D -> Reshape((1, 1, 8)) -> Conv2D(8, 1,
    # hard_sigmoid) -> Multiply (gate first); EfficientNet's drop connect; GlobalAveragePooling2D,
    # Dense softmax; Adam.
    L = model_inputs(s, ("input_layer", [N, 6, 6, 3]))
    # (EfficientNet's input Rescaling per channel: a scale and an offset per RGB channel.)
    L.append(s.wire(s.rescaling("rescaling", [2.0, 0.5, 1.5], [0.1, -0.2, 0.0], [N, 6, 6, 3]),
                    [[("input_layer", 0, 0, [N, 6, 6, 3])]]))
    L.append(s.wire(s.conv2d("conv2d", 8, (3, 3), padding="same", activation="swish",
                             shape=[N, 6, 6, 3]), [[("rescaling", 0, 0, [N, 6, 6, 3])]]))
    squeeze = s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 8])
    squeeze["config"]["keepdims"] = True
    L.append(s.wire(squeeze, [[("conv2d", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.conv2d("conv2d_1", 2, (1, 1), activation="swish", shape=[N, 1, 1, 8]),
                    [[("global_average_pooling2d", 0, 0, [N, 1, 1, 8])]]))
    L.append(s.wire(s.conv2d("conv2d_2", 8, (1, 1), activation="sigmoid", shape=[N, 1, 1, 2]),
                    [[("conv2d_1", 0, 0, [N, 1, 1, 2])]]))
    L.append(s.wire(s.merge("Multiply", "multiply"),
                    [[("conv2d", 0, 0, [N, 6, 6, 8]), ("conv2d_2", 0, 0, [N, 1, 1, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d_1",
                                  [N, 6, 6, 8]), [[("multiply", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.reshape("reshape", (1, 1, 8), [N, 8]),
                    [[("global_average_pooling2d_1", 0, 0, [N, 8])]]))
    L.append(s.wire(s.conv2d("conv2d_3", 8, (1, 1), activation="hard_sigmoid", shape=[N, 1, 1, 8]),
                    [[("reshape", 0, 0, [N, 1, 1, 8])]]))
    L.append(s.wire(s.merge("Multiply", "multiply_1"),
                    [[("conv2d_3", 0, 0, [N, 1, 1, 8]), ("multiply", 0, 0, [N, 6, 6, 8])]]))
    # EfficientNet's drop connect: Dropout(0.2, noise_shape=(None, 1, 1, 1)), a draw per sample.
    drop = s.dropout("dropout", 0.2, [N, 6, 6, 8])
    drop["config"]["noise_shape"] = [None, 1, 1, 1]
    L.append(s.wire(drop, [[("multiply_1", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d_2",
                                  [N, 6, 6, 8]), [[("dropout", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.dense("dense", 3, "softmax", shape=[N, 8]),
                    [[("global_average_pooling2d_2", 0, 0, [N, 8])]]))
    write("k3_se_block", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                      k3_adam(0.01, "sparse_categorical_crossentropy")))


def efficientnet_fixtures(k3):
    """A miniature of keras.applications.EfficientNetB0, layer for layer as its builder writes
    them (names included): the stem (Rescaling, an adapted Normalization, the per-channel
    Rescaling, correct_pad's ZeroPadding2D ((0, 1), (0, 1)) before a stride-2 valid Conv2D
    without bias, BatchNormalization, swish), block1a (DepthwiseConv2D, BN, swish, the
    squeeze-and-excitation, a projecting Conv2D and BN, drop connect and the residual Add),
    block2a (expand, padded stride-2 DepthwiseConv2D, SE, project), the top Conv2D, BN, swish,
    GlobalAveragePooling2D, Dropout and the softmax Dense; SGD."""
    N = None
    s = k3
    L = model_inputs(s, ("input_layer", [N, 12, 12, 3]))
    last = ["input_layer", [N, 12, 12, 3]]

    def add(entry, *inputs, kwargs=None):
        ins = inputs or (tuple(last),)
        L.append(s.wire(entry, [[(name, 0, 0, shape) for name, shape in ins]], kwargs))
        last[0] = entry["config"]["name"]

    def shaped(shape):
        last[1] = shape
        return shape

    def conv(name, filters, kernel=1, strides=1, padding="same", activation="linear"):
        return s.conv2d(name, filters, (kernel, kernel), (strides, strides), padding,
                        activation=activation, use_bias=activation != "linear", shape=last[1])

    def dwconv(name, strides, padding):
        e = s.depthwise(name, (3, 3), 1, (strides, strides), padding, shape=last[1])
        e["config"]["use_bias"] = False
        return e

    def pad(name):
        e = s.zero_padding(name, 0, last[1])
        e["config"]["padding"] = [[0, 1], [0, 1]]
        return e

    def bn_swish(prefix, bn, act):
        add(s.batchnorm(prefix + bn, shape=last[1]))
        add(s.activation(prefix + act, "swish", last[1]))

    def squeeze_excite(prefix, filters, reduced):
        x = (last[0], last[1])
        add(s.global_pool("GlobalAveragePooling2D", prefix + "se_squeeze", last[1]))
        add(s.reshape(prefix + "se_reshape", (1, 1, filters), [N, filters]))
        shaped([N, 1, 1, filters])
        add(conv(prefix + "se_reduce", reduced, activation="swish"))
        shaped([N, 1, 1, reduced])
        add(conv(prefix + "se_expand", filters, activation="sigmoid"))
        shaped([N, 1, 1, filters])
        add(s.merge("Multiply", prefix + "se_excite"), x, (prefix + "se_expand", [N, 1, 1, filters]))
        shaped(x[1])

    add(s.rescaling("rescaling", 0.5, 0.0, last[1]))
    add(s.normalization("normalization", [-1], shape=last[1]))
    add(s.rescaling("rescaling_1", [1.2, 0.9, 1.1], 0.0, last[1]))
    add(pad("stem_conv_pad"))
    shaped([N, 13, 13, 3])
    add(conv("stem_conv", 8, 3, 2, "valid"))
    shaped([N, 6, 6, 8])
    bn_swish("", "stem_bn", "stem_activation")
    stem = ("stem_activation", [N, 6, 6, 8])
    add(dwconv("block1a_dwconv", 1, "same"))
    bn_swish("block1a_", "bn", "activation")
    squeeze_excite("block1a_", 8, 2)
    add(conv("block1a_project_conv", 8))
    add(s.batchnorm("block1a_project_bn", shape=last[1]))
    drop = s.dropout("block1a_drop", 0.2, last[1])
    drop["config"]["noise_shape"] = [None, 1, 1, 1]
    add(drop)
    add(s.merge("Add", "block1a_add"), tuple(last), stem)
    add(conv("block2a_expand_conv", 16))
    shaped([N, 6, 6, 16])
    bn_swish("block2a_", "expand_bn", "expand_activation")
    add(pad("block2a_dwconv_pad"))
    shaped([N, 7, 7, 16])
    add(dwconv("block2a_dwconv", 2, "valid"))
    shaped([N, 3, 3, 16])
    bn_swish("block2a_", "bn", "activation")
    squeeze_excite("block2a_", 16, 2)
    add(conv("block2a_project_conv", 12))
    shaped([N, 3, 3, 12])
    add(s.batchnorm("block2a_project_bn", shape=last[1]))
    add(conv("top_conv", 16))
    shaped([N, 3, 3, 16])
    bn_swish("top_", "bn", "activation")
    add(s.global_pool("GlobalAveragePooling2D", "avg_pool", last[1]))
    shaped([N, 16])
    add(s.dropout("top_dropout", 0.2, last[1]))
    add(s.dense("predictions", 3, "softmax", shape=last[1]))
    # (SGD: the last projecting BN's beta feeds top_conv (no bias) and top_bn, which removes any
    # per-channel shift, so its true gradient is zero, as in EfficientNetB0's block7a; Adam
    # would magnify the rounding noise that stands for it.)
    write("k3_efficientnet", s.functional("efficientnet", L, [("input_layer", 0, 0)],
                                          [("predictions", 0, 0)],
                                          k3_sgd(0.05, "sparse_categorical_crossentropy")))


def convnext_fixtures(k3):
    """A ConvNeXt block (Keras 3): Dense layers over an image's channels."""
    N = None
    s = k3
    # A same Conv2D(8, 3); the block: DepthwiseConv2D(3, same), LayerNormalization (epsilon
    # 1e-6) over the channels, Dense(16, gelu) and Dense(8) over the channels (pointwise),
    # Add with the block's input; GlobalAveragePooling2D, Dense softmax; Adam.
    L = model_inputs(s, ("input_layer", [N, 6, 6, 3]))
    L.append(s.wire(s.conv2d("conv2d", 8, (3, 3), padding="same", shape=[N, 6, 6, 3]),
                    [[("input_layer", 0, 0, [N, 6, 6, 3])]]))
    L.append(s.wire(s.depthwise("depthwise_conv2d", (3, 3), 1, padding="same", shape=[N, 6, 6, 8]),
                    [[("conv2d", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.layer_norm("layer_normalization", epsilon=1e-6, shape=[N, 6, 6, 8]),
                    [[("depthwise_conv2d", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.dense("dense", 16, "gelu", shape=[N, 6, 6, 8]),
                    [[("layer_normalization", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.dense("dense_1", 8, shape=[N, 6, 6, 16]), [[("dense", 0, 0, [N, 6, 6, 16])]]))
    L.append(s.wire(s.merge("Add", "add"),
                    [[("conv2d", 0, 0, [N, 6, 6, 8]), ("dense_1", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 6, 6, 8]),
                    [[("add", 0, 0, [N, 6, 6, 8])]]))
    L.append(s.wire(s.dense("dense_2", 3, "softmax", shape=[N, 8]),
                    [[("global_average_pooling2d", 0, 0, [N, 8])]]))
    write("k3_convnext", s.functional("functional", L, [("input_layer", 0, 0)], [("dense_2", 0, 0)],
                                      k3_adam(0.01, "sparse_categorical_crossentropy")))


def convnext_app_fixtures(k3):
    """A miniature of keras.applications.ConvNeXtTiny (Keras 3), layer for layer as its builder
    writes them: PreStem's Normalization, the stem and a downsampling block as nested
    Sequentials, two ConvNeXt blocks (a grouped 3x3 Conv2D with groups = channels,
    LayerNormalization, Dense 4C, gelu, Dense C, LayerScale, StochasticDepth (0.4) or a linear
    Activation, and `inputs + x` as a keras.src.ops.numpy Add operation), the head's
    GlobalAveragePooling2D, LayerNormalization and softmax Dense; Adam."""
    N = None
    s = k3
    name = "convnext"

    def convnext_layer(cls, lname, **config):
        c = s.base(lname)
        c.update(config)
        return {"module": "keras.src.applications.convnext", "class_name": cls, "config": c,
                "registered_name": cls}

    def plus(lname, a, b):
        return {"module": "keras.src.ops.numpy", "class_name": "Add", "config": {"name": lname},
                "registered_name": "Add", "name": lname,
                "inbound_nodes": [{"args": [s.tensor(*a), s.tensor(*b)], "kwargs": {}}]}

    L = model_inputs(s, ("input_layer", [N, 16, 16, 3]))
    L.append(s.wire(s.normalization(name + "_prestem_normalization", -1,
                                    mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                    variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2,
                                              (0.225 * 255) ** 2], shape=[N, 16, 16, 3]),
                    [[("input_layer", 0, 0, [N, 16, 16, 3])]]))
    stem = s.sequential(name + "_stem", [
        s.input_layer(name + "_stem_input", [N, 16, 16, 3]),
        s.conv2d(name + "_stem_conv", 8, (4, 4), (4, 4), shape=[N, 16, 16, 3]),
        s.layer_norm(name + "_stem_layernorm", epsilon=1e-6, shape=[N, 4, 4, 8])],
        [N, 16, 16, 3], nested=True)
    stem["name"] = name + "_stem"
    stem["inbound_nodes"] = [{"args": [s.tensor(name + "_prestem_normalization", 0, 0, [N, 16, 16, 3])],
                              "kwargs": {}}]
    L.append(stem)

    def block(prefix, source, c, hw, drop):
        shape = [N, hw, hw, c]
        L.append(s.wire(s.conv2d(prefix + "_depthwise_conv", c, (3, 3), padding="same", groups=c,
                                 shape=shape), [[(source, 0, 0, shape)]]))
        L.append(s.wire(s.layer_norm(prefix + "_layernorm", epsilon=1e-6, shape=shape),
                        [[(prefix + "_depthwise_conv", 0, 0, shape)]]))
        L.append(s.wire(s.dense(prefix + "_pointwise_conv_1", 4 * c, shape=shape),
                        [[(prefix + "_layernorm", 0, 0, shape)]]))
        wide = [N, hw, hw, 4 * c]
        L.append(s.wire(s.activation(prefix + "_gelu", "gelu", wide),
                        [[(prefix + "_pointwise_conv_1", 0, 0, wide)]]))
        L.append(s.wire(s.dense(prefix + "_pointwise_conv_2", c, shape=wide),
                        [[(prefix + "_gelu", 0, 0, wide)]]))
        L.append(s.wire(convnext_layer("LayerScale", prefix + "_layer_scale", init_values=1e-6,
                                       projection_dim=c),
                        [[(prefix + "_pointwise_conv_2", 0, 0, shape)]]))
        if drop:
            last = s.wire(convnext_layer("StochasticDepth", prefix + "_stochastic_depth",
                                         drop_path_rate=drop),
                          [[(prefix + "_layer_scale", 0, 0, shape)]])
        else:
            last = s.wire(s.activation(prefix + "_identity", "linear", shape),
                          [[(prefix + "_layer_scale", 0, 0, shape)]])
        L.append(last)
        add = "add" if source.endswith("stem") else "add_1"
        L.append(plus(add, (source, 0, 0, shape), (last["name"], 0, 0, shape)))
        return add

    x = block(name + "_stage_0_block_0", name + "_stem", 8, 4, 0.4)
    down = s.sequential(name + "_downsampling_block_0", [
        s.input_layer(name + "_downsampling_block_0_input", [N, 4, 4, 8]),
        s.layer_norm(name + "_downsampling_layernorm_0", epsilon=1e-6, shape=[N, 4, 4, 8]),
        s.conv2d(name + "_downsampling_conv_0", 16, (2, 2), (2, 2), shape=[N, 4, 4, 8])],
        [N, 4, 4, 8], nested=True)
    down["name"] = name + "_downsampling_block_0"
    down["inbound_nodes"] = [{"args": [s.tensor(x, 0, 0, [N, 4, 4, 8])], "kwargs": {}}]
    L.append(down)
    x = block(name + "_stage_1_block_0", name + "_downsampling_block_0", 16, 2, 0.0)
    L.append(s.wire(s.global_pool("GlobalAveragePooling2D", name + "_head_gap", [N, 2, 2, 16]),
                    [[(x, 0, 0, [N, 2, 2, 16])]]))
    L.append(s.wire(s.layer_norm(name + "_head_layernorm", epsilon=1e-6, shape=[N, 16]),
                    [[(name + "_head_gap", 0, 0, [N, 16])]]))
    L.append(s.wire(s.dense(name + "_head_dense", 3, "softmax", shape=[N, 16]),
                    [[(name + "_head_layernorm", 0, 0, [N, 16])]]))
    write("k3_convnext_app", s.functional(name, L, [("input_layer", 0, 0)],
                                          [(name + "_head_dense", 0, 0)],
                                          k3_adam(0.01, "sparse_categorical_crossentropy")))

    # tf.keras 2.15 (its legacy JSON names no module): keras.applications' LayerScale and
    # StochasticDepth on a sequence: Dense(8) of (5 steps, 6 features), LayerScale(0.1, 8),
    # StochasticDepth(0.3), Add with the Dense, GlobalAveragePooling1D, Dense(3), softmax.
    t = Style(False)
    L = [t.input_layer("input_1", [N, 5, 6])]
    L[0]["name"] = "input_1"
    L[0]["inbound_nodes"] = []
    L.append(t.wire(t.dense("dense", 8, shape=[N, 5, 6]), [[("input_1", 0, 0, [N, 5, 6])]]))
    for cls, lname, config, source in (
            ("LayerScale", "layer_scale", {"init_values": 0.1, "projection_dim": 8}, "dense"),
            ("StochasticDepth", "stochastic_depth", {"drop_path_rate": 0.3}, "layer_scale")):
        c = t.base(lname)
        c.update(config)
        L.append(t.wire({"class_name": cls, "config": c}, [[(source, 0, 0, [N, 5, 8])]]))
    L.append(t.wire(t.merge("Add", "add"), [[("dense", 0, 0, [N, 5, 8]),
                                             ("stochastic_depth", 0, 0, [N, 5, 8])]]))
    L.append(t.wire(t.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("add", 0, 0, [N, 5, 8])]]))
    L.append(t.wire(t.dense("dense_1", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    L.append(t.wire(t.activation("activation", "softmax", [N, 3]), [[("dense_1", 0, 0, [N, 3])]]))
    write("tf2_layer_scale", t.functional("model", L, [("input_1", 0, 0)], [("activation", 0, 0)]))

    # Keras 3 operations on symbolic tensors in a Functional MLP: Dense(8) h; h * 0.5
    # (Multiply by a number), 1.0 - that (Subtract from a number), that / 4 (TrueDivide), plus
    # h (Add of two tensors), Maximum with h; Dense(3) logits; SGD.
    def op(cls, lname, *args):
        return {"module": "keras.src.ops.numpy", "class_name": cls, "config": {"name": lname},
                "registered_name": cls, "name": lname,
                "inbound_nodes": [{"args": [s.tensor(*a) if isinstance(a, tuple) else a
                                            for a in args], "kwargs": {}}]}

    L = model_inputs(s, ("input_layer", [N, 6]))
    L.append(s.wire(s.dense("dense", 8, "tanh", shape=[N, 6]), [[("input_layer", 0, 0, [N, 6])]]))
    h = ("dense", 0, 0, [N, 8])
    L.append(op("Multiply", "multiply", h, 0.5))
    L.append(op("Subtract", "subtract", 1.0, ("multiply", 0, 0, [N, 8])))
    L.append(op("TrueDivide", "true_divide", ("subtract", 0, 0, [N, 8]), 4))
    L.append(op("Add", "add", ("true_divide", 0, 0, [N, 8]), h))
    L.append(op("Maximum", "maximum", ("add", 0, 0, [N, 8]), h))
    L.append(s.wire(s.dense("dense_1", 3, shape=[N, 8]), [[("maximum", 0, 0, [N, 8])]]))
    write("k3_ops", s.functional("functional", L, [("input_layer", 0, 0)], [("dense_1", 0, 0)],
                                 k3_sgd(0.1, SPARSE_FROM_LOGITS)))

    # Keras 3 EinsumDense: (5 steps, 6 features) -> "abc,cd->abd" (8, relu, bias "d") ->
    # "...c,cd->...d" (4, no bias) -> GlobalAveragePooling1D -> "ab,bcd->acd" ((2, 3), bias
    # "cd") -> GlobalAveragePooling1D -> logits; Adam.
    def einsum(name, equation, output_shape, bias_axes=None, activation="linear", shape=None):
        c = s.base(name)
        c.update({"equation": equation, "output_shape": output_shape, "activation": activation,
                  "bias_axes": bias_axes, "kernel_initializer": GLOROT(),
                  "bias_initializer": ZEROS(), "kernel_regularizer": None,
                  "bias_regularizer": None, "activity_regularizer": None,
                  "kernel_constraint": None, "bias_constraint": None, "lora_rank": None})
        return s.entry("EinsumDense", c, shape)

    L = model_inputs(s, ("input_layer", [N, 5, 6]))
    L.append(s.wire(einsum("einsum_dense", "abc,cd->abd", [None, 8], "d", "relu", [N, 5, 6]),
                    [[("input_layer", 0, 0, [N, 5, 6])]]))
    L.append(s.wire(einsum("einsum_dense_1", "...c,cd->...d", 4, shape=[N, 5, 8]),
                    [[("einsum_dense", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 4]),
                    [[("einsum_dense_1", 0, 0, [N, 5, 4])]]))
    L.append(s.wire(einsum("einsum_dense_2", "ab,bcd->acd", [2, 3], "cd", shape=[N, 4]),
                    [[("global_average_pooling1d", 0, 0, [N, 4])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d_1", [N, 2, 3]),
                    [[("einsum_dense_2", 0, 0, [N, 2, 3])]]))
    write("k3_einsum", s.functional("functional", L, [("input_layer", 0, 0)],
                                    [("global_average_pooling1d_1", 0, 0)],
                                    k3_adam(0.01, SPARSE_FROM_LOGITS)))
    # Refused: an EinsumDense that is not a dense (a batched product over the steps).
    L = model_inputs(s, ("input_layer", [N, 5, 6]))
    L.append(s.wire(einsum("einsum_dense", "abc,bd->acd", [6, 8], shape=[N, 5, 6]),
                    [[("input_layer", 0, 0, [N, 5, 6])]]))
    write("err_einsum", s.functional("functional", L, [("input_layer", 0, 0)],
                                     [("einsum_dense", 0, 0)]))

    # Refused: a custom layer (registered "my_package>Scale"), a class from a user module, and
    # a Keras operation graphc does not import (Matmul).
    for case, entry in (
            ("err_custom_registered", {"module": "my_package.layers", "class_name": "Dense",
                                       "registered_name": "my_package>Dense"}),
            ("err_custom_module", {"module": "my_layers", "class_name": "LayerScale",
                                   "registered_name": "LayerScale"}),
            ("err_keras_op", {"module": "keras.src.ops.numpy", "class_name": "Matmul",
                              "registered_name": "Matmul"})):
        L = model_inputs(s, ("input_layer", [N, 8]))
        e = s.dense("dense", 8, shape=[N, 8])
        e.update(entry)
        if case == "err_custom_module":
            e["config"] = dict(s.base("dense"), init_values=0.1, projection_dim=8)
        L.append(s.wire(e, [[("input_layer", 0, 0, [N, 8])]]))
        L.append(s.wire(s.dense("dense_1", 3, shape=[N, 8]), [[("dense", 0, 0, [N, 8])]]))
        write(case, s.functional("functional", L, [("input_layer", 0, 0)], [("dense_1", 0, 0)]))


def masked_output_fixtures(k3, k2):
    """Masked sequences as the model's output: Keras weighs each step's loss by the mask."""
    N = None
    # Keras 3 Sequential tagger: token ids (7 steps, ids 0 to 11) -> Embedding(12, 6,
    # mask_zero) -> LSTM(5, return_sequences) -> Dense(4) logits per step; a class per step,
    # Adam from logits: the loss is the mean over the steps whose id is not 0.
    s = k3
    emb = s.embedding("embedding", 12, 6, [N, 7])
    emb["config"]["mask_zero"] = True
    L = [s.input_layer("input_layer", [N, 7]), emb,
         s.rnn("LSTM", "lstm", 5, return_sequences=True, shape=[N, 7, 6]),
         s.dense("dense", 4, shape=[N, 7, 5])]
    L[0]["config"]["dtype"] = "int32"
    write("k3_masked_tagger", s.sequential("sequential", L, [N, 7],
                                           k3_adam(0.01, SPARSE_FROM_LOGITS)))
    # tf.keras 2 Sequential: float sequences (6 steps, 3 features) whose padding steps are
    # zeros -> Masking(0.0) -> LSTM(4, return_sequences) -> Dense(3) per step, trained with
    # --loss=mse: each real step's mean squared error, averaged over the real steps.
    s = k2
    L = [s.input_layer("input_1", [N, 6, 3]),
         s.merge("Masking", "masking", [N, 6, 3], mask_value=0.0),
         s.rnn("LSTM", "lstm", 4, return_sequences=True, shape=[N, 6, 3]),
         s.dense("dense", 3, shape=[N, 6, 4])]
    write("tf2_masked_seq_mse", s.sequential("sequential", L, [N, 6, 3]))


def masked_rnn_fixtures(k3, k2):
    """Embedding(mask_zero=True) before recurrent layers: padding steps (token id 0) skipped."""
    N = None
    # tf.keras 2 Sequential: token ids (7 steps, ids 0 to 5) -> Embedding(6, 5, mask_zero) ->
    # LSTM(6, return_sequences) -> GRU(4) -> Dense(3) -> Activation softmax.
    s = k2
    emb = s.embedding("embedding", 6, 5, [N, 7])
    emb["config"]["mask_zero"] = True
    L = [s.input_layer("input_1", [N, 7]), emb,
         s.rnn("LSTM", "lstm", 6, return_sequences=True, shape=[N, 7, 5]),
         s.rnn("GRU", "gru", 4, shape=[N, 7, 6]),
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    L[0]["config"]["dtype"] = "int32"
    write("tf2_masked_rnn", s.sequential("sequential", L, [N, 7]))
    # The recurrent layers' own dropout. tf.keras 2 Sequential: (6 steps, 4 features) ->
    # LSTM(5, dropout 0.2, recurrent_dropout 0.3, return_sequences) -> SimpleRNN(4, dropout
    # 0.1, recurrent_dropout 0.2) -> Dense(3) -> Activation softmax. Keras 3 Sequential:
    # Embedding(6, 5, mask_zero) -> Bidirectional(GRU(4, dropout 0.25)) -> Dense(3) logits.
    s = k2
    lstm_d = s.rnn("LSTM", "lstm", 5, return_sequences=True, shape=[N, 6, 4])
    lstm_d["config"].update(dropout=0.2, recurrent_dropout=0.3)
    rnn_d = s.rnn("SimpleRNN", "simple_rnn", 4, shape=[N, 6, 5])
    rnn_d["config"].update(dropout=0.1, recurrent_dropout=0.2)
    L = [s.input_layer("input_1", [N, 6, 4]), lstm_d, rnn_d,
         s.dense("dense", 3, shape=[N, 4]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_rnn_dropout", s.sequential("sequential", L, [N, 6, 4]))
    s = k3
    emb = s.embedding("embedding", 6, 5, [N, 7])
    emb["config"]["mask_zero"] = True
    gru_d = s.rnn("GRU", "gru", 4)
    gru_d["config"]["dropout"] = 0.25
    L = [s.input_layer("input_layer", [N, 7]), emb,
         s.wrapper("Bidirectional", "bidirectional", gru_d, [N, 7, 5], merge_mode="concat"),
         s.dense("dense", 3, shape=[N, 8])]
    L[0]["config"]["dtype"] = "int32"
    write("k3_rnn_dropout", s.sequential("sequential", L, [N, 7],
                                         k3_sgd(0.1, SPARSE_FROM_LOGITS)))
    # Keras 3 Sequential: Embedding(6, 5, mask_zero) -> SpatialDropout1D(0.2) (the mask passes
    # through) -> LSTM(4, go_backwards) -> Dense(3) logits; SGD from logits.
    s = k3
    emb = s.embedding("embedding", 6, 5, [N, 7])
    emb["config"]["mask_zero"] = True
    L = [s.input_layer("input_layer", [N, 7]), emb,
         s.spatial_dropout("SpatialDropout1D", "spatial_dropout1d", 0.2, [N, 7, 5]),
         s.rnn("LSTM", "lstm", 4, go_backwards=True, shape=[N, 7, 5]),
         s.dense("dense", 3, shape=[N, 4])]
    L[0]["config"]["dtype"] = "int32"
    write("k3_masked_rnn", s.sequential("sequential", L, [N, 7],
                                        k3_sgd(0.1, SPARSE_FROM_LOGITS)))
    # Keras 3 Sequential: Embedding(10, 6, mask_zero) -> GlobalAveragePooling1D (the mean of
    # the real steps) -> Dense(3) logits; Adam from logits.
    s = k3
    emb = s.embedding("embedding", 10, 6, [N, 7])
    emb["config"]["mask_zero"] = True
    L = [s.input_layer("input_layer", [N, 7]), emb,
         s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 7, 6]),
         s.dense("dense", 3, shape=[N, 6])]
    L[0]["config"]["dtype"] = "int32"
    write("k3_masked_mean", s.sequential("sequential", L, [N, 7], k3_adam(0.01, SPARSE_FROM_LOGITS)))
    # tf.keras 2 Sequential: float sequences (6 steps, 4 features) whose padding steps are
    # zeros -> Masking(0.0) -> Dense(5, tanh) (per step: the mask passes on) -> LSTM(6) ->
    # Dense(3) -> Activation softmax.
    s = k2
    masking = s.merge("Masking", "masking", [N, 6, 4], mask_value=0.0)
    L = [s.input_layer("input_1", [N, 6, 4]), masking,
         s.dense("dense", 5, "tanh", shape=[N, 6, 4]),
         s.rnn("LSTM", "lstm", 6, shape=[N, 6, 5]),
         s.dense("dense_1", 3, shape=[N, 6]),
         s.activation("activation", "softmax", [N, 3])]
    write("tf2_masking", s.sequential("sequential", L, [N, 6, 4]))
    # Keras 3 Functional: padding steps of -1 -> Masking(-1.0) (zeroes them) -> GRU(5,
    # return_sequences) -> LayerNormalization (the mask passes on) -> GlobalAveragePooling1D
    # (the mean of the real steps) -> Dense(3) logits; Adam from logits.
    s = k3
    L = model_inputs(s, ("input_layer", [N, 6, 4]))
    L.append(s.wire(s.merge("Masking", "masking", [N, 6, 4], mask_value=-1.0),
                    [[("input_layer", 0, 0, [N, 6, 4])]]))
    L.append(s.wire(s.rnn("GRU", "gru", 5, return_sequences=True, shape=[N, 6, 4]),
                    [[("masking", 0, 0, [N, 6, 4])]]))
    L.append(s.wire(s.layer_norm("layer_normalization", shape=[N, 6, 5]),
                    [[("gru", 0, 0, [N, 6, 5])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 6, 5]),
                    [[("layer_normalization", 0, 0, [N, 6, 5])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 5]),
                    [[("global_average_pooling1d", 0, 0, [N, 5])]]))
    write("k3_masking", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                     k3_adam(0.01, SPARSE_FROM_LOGITS)))
    # Keras 3 Functional: token ids (7 steps, ids 0 to 11) -> Embedding(12, 8, mask_zero) ->
    # MultiHeadAttention(2 heads, key_dim 4)(x, x) (Keras's automatic mask from the padding)
    # -> Add with x -> LayerNormalization -> Dense(8, relu) (the mask passes on through each)
    # -> GlobalAveragePooling1D (the mean of the real steps) -> Dense(3) logits; SGD.
    s = k3
    L = model_inputs(s, ("input_layer", [N, 7]))
    L[0]["config"]["dtype"] = "int32"
    emb = s.embedding("embedding", 12, 8, [N, 7])
    emb["config"]["mask_zero"] = True
    L.append(s.wire(emb, [[("input_layer", 0, 0, [N, 7])]]))
    x = ("embedding", 0, 0, [N, 7, 8])
    m = s.mha("multi_head_attention", 2, 4, shape=[N, 7, 8])
    m["name"] = "multi_head_attention"
    m["inbound_nodes"] = [{"args": [s.tensor(*x), s.tensor(*x)], "kwargs": {}}]
    L.append(m)
    L.append(s.wire(s.merge("Add", "add"), [[x, ("multi_head_attention", 0, 0, [N, 7, 8])]]))
    L.append(s.wire(s.layer_norm("layer_normalization", shape=[N, 7, 8]), [[("add", 0, 0, [N, 7, 8])]]))
    L.append(s.wire(s.dense("dense", 8, "relu", shape=[N, 7, 8]),
                    [[("layer_normalization", 0, 0, [N, 7, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 7, 8]),
                    [[("dense", 0, 0, [N, 7, 8])]]))
    L.append(s.wire(s.dense("dense_1", 3, shape=[N, 8]),
                    [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_mha_padding", s.functional("functional", L, [("input_layer", 0, 0)],
                                         [("dense_1", 0, 0)],
                                         k3_sgd(0.1, SPARSE_FROM_LOGITS)))
    # Keras 3 Functional: token ids -> Embedding(12, 8, mask_zero) -> Dense(8) (the mask
    # passes on) -> Attention(use_scale)([dense, embedding]) (padding keys masked, padding
    # queries zeroed) -> AdditiveAttention([attention, embedding]) -> GlobalAveragePooling1D
    # (the mean of the real steps) -> Dense(3) logits; Adam.
    A = model_inputs(s, ("input_layer", [N, 7]))
    A[0]["config"]["dtype"] = "int32"
    A.append(s.wire(emb, [[("input_layer", 0, 0, [N, 7])]]))
    A.append(s.wire(s.dense("dense", 8, shape=[N, 7, 8]), [[x]]))
    A.append(s.wire(s.merge("Attention", "attention", use_scale=True, score_mode="dot",
                            dropout=0.0, seed=None),
                    [[("dense", 0, 0, [N, 7, 8]), x]]))
    A.append(s.wire(s.merge("AdditiveAttention", "additive_attention", use_scale=True,
                            dropout=0.0, seed=None),
                    [[("attention", 0, 0, [N, 7, 8]), x]]))
    A.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 7, 8]),
                    [[("additive_attention", 0, 0, [N, 7, 8])]]))
    A.append(s.wire(s.dense("dense_1", 3, shape=[N, 8]),
                    [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_attention_padding", s.functional("functional", A, [("input_layer", 0, 0)],
                                               [("dense_1", 0, 0)],
                                               k3_adam(0.01, SPARSE_FROM_LOGITS)))
    # Keras 3 GroupedQueryAttention(head_dim 3, 4 query heads, 2 key/value heads, dropout
    # 0.1)(x, x, use_causal_mask) of (5 steps, 8 features) -> Add with x ->
    # LayerNormalization -> GlobalAveragePooling1D -> Dense(3) logits; SGD.
    c = s.base("grouped_query_attention")
    c.update({"head_dim": 3, "num_query_heads": 4, "num_key_value_heads": 2, "dropout": 0.1,
              "use_bias": True, "flash_attention": None, "kernel_initializer": GLOROT(),
              "bias_initializer": ZEROS(), "kernel_regularizer": None, "bias_regularizer": None,
              "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None,
              "seed": None})
    g = s.entry("GroupedQueryAttention", c)
    g["build_config"] = {"shapes_dict": {"query_shape": [N, 5, 8], "value_shape": [N, 5, 8]}}
    g["name"] = "grouped_query_attention"
    q = ("input_layer", 0, 0, [N, 5, 8])
    g["inbound_nodes"] = [{"args": [s.tensor(*q), s.tensor(*q)],
                           "kwargs": {"use_causal_mask": True}}]
    G = model_inputs(s, ("input_layer", [N, 5, 8]))
    G.append(g)
    G.append(s.wire(s.merge("Add", "add"), [[q, ("grouped_query_attention", 0, 0, [N, 5, 8])]]))
    G.append(s.wire(s.layer_norm("layer_normalization", shape=[N, 5, 8]), [[("add", 0, 0, [N, 5, 8])]]))
    G.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("layer_normalization", 0, 0, [N, 5, 8])]]))
    G.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_gqa", s.functional("functional", G, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                 k3_sgd(0.05, SPARSE_FROM_LOGITS)))
    # Refused: that attention also given an explicit attention_mask (a second input).
    L = model_inputs(s, ("input_layer", [N, 7]), ("input_layer_1", [N, 7, 7]))
    L[0]["config"]["dtype"] = "int32"
    L.append(s.wire(emb, [[("input_layer", 0, 0, [N, 7])]]))
    m = dict(m)
    m["inbound_nodes"] = [{"args": [s.tensor(*x), s.tensor(*x)],
                           "kwargs": {"attention_mask": s.tensor("input_layer_1", 0, 0, [N, 7, 7])}}]
    L.append(m)
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 7, 8]),
                    [[("multi_head_attention", 0, 0, [N, 7, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 8]),
                    [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("err_mha_two_masks", s.functional("functional", L,
                                            [("input_layer", 0, 0), ("input_layer_1", 0, 0)],
                                            [("dense", 0, 0)]))
    # Refused: a Flatten reading the masked sequence (Keras would carry the mask to the loss).
    s = k2
    emb = s.embedding("embedding", 6, 5, [N, 7])
    emb["config"]["mask_zero"] = True
    L = [s.input_layer("input_1", [N, 7]), emb, s.flatten("flatten", [N, 7, 5]),
         s.dense("dense", 3, "softmax", shape=[N, 35])]
    write("err_mask_flatten", s.sequential("sequential", L, [N, 7]))


def seq2seq_fixtures(k3, k2):
    """RepeatVector, Dot, Identity and the attention layers in Keras 3 and tf.keras 2 sequence models."""
    N = None
    s = k3
    # An LSTM encoder's code repeated 4 times (RepeatVector) for an LSTM decoder; Dot((2, 2))
    # of the decoder's 4 steps with a Dense(8) of the input's 5 steps (attention-like scores),
    # flattened; Dot(1, normalize=True) of the two sequences' means (a cosine similarity);
    # Concatenate, Identity, Dense(3) logits; Adam from logits.
    L = model_inputs(s, ("input_layer", [N, 5, 6]))
    x = ("input_layer", 0, 0, [N, 5, 6])
    L.append(s.wire(s.rnn("LSTM", "lstm", 8, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.merge("RepeatVector", "repeat_vector", [N, 8], n=4), [[("lstm", 0, 0, [N, 8])]]))
    L.append(s.wire(s.rnn("LSTM", "lstm_1", 8, return_sequences=True, shape=[N, 4, 8]),
                    [[("repeat_vector", 0, 0, [N, 4, 8])]]))
    L.append(s.wire(s.dense("dense", 8, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.merge("Dot", "dot", axes=[2, 2], normalize=False),
                    [[("lstm_1", 0, 0, [N, 4, 8]), ("dense", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.flatten("flatten", [N, 4, 5]), [[("dot", 0, 0, [N, 4, 5])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 4, 8]),
                    [[("lstm_1", 0, 0, [N, 4, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d_1", [N, 5, 8]),
                    [[("dense", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.merge("Dot", "dot_1", axes=1, normalize=True),
                    [[("global_average_pooling1d", 0, 0, [N, 8]),
                      ("global_average_pooling1d_1", 0, 0, [N, 8])]]))
    L.append(s.wire(s.merge("Concatenate", "concatenate", axis=-1),
                    [[("flatten", 0, 0, [N, 20]), ("dot_1", 0, 0, [N, 1])]]))
    L.append(s.wire(s.merge("Identity", "identity", [N, 21]), [[("concatenate", 0, 0, [N, 21])]]))
    L.append(s.wire(s.dense("dense_1", 3, shape=[N, 21]), [[("identity", 0, 0, [N, 21])]]))
    write("k3_seq2seq", s.functional("functional", L, [("input_layer", 0, 0)], [("dense_1", 0, 0)],
                                     k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # Keras's Attention layer: a Dense(8) query of the input's steps attends (use_scale, causal)
    # over a same Conv1D(8, 3) of them as the value; a second Attention(dropout=0.25) of that
    # as the query over the Conv1D value with a Dense(8) key (no bias); GlobalAveragePooling1D, Dense(3)
    # logits; Adam from logits.
    L = model_inputs(s, ("input_layer", [N, 5, 6]))
    x = ("input_layer", 0, 0, [N, 5, 6])
    L.append(s.wire(s.dense("dense", 8, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.conv1d("conv1d", 8, 3, padding="same", shape=[N, 5, 6]), [[x]]))
    # (The key without a bias: a bias on the key moves every score of a query alike, so its
    # true gradient is zero, and Adam would magnify the rounding noise that stands for it.)
    L.append(s.wire(s.dense("dense_1", 8, use_bias=False, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.merge("Attention", "attention", use_scale=True, score_mode="dot",
                            dropout=0.0, seed=None),
                    [[("dense", 0, 0, [N, 5, 8]), ("conv1d", 0, 0, [N, 5, 8])]],
                    kwargs={"use_causal_mask": True}))
    L.append(s.wire(s.merge("Attention", "attention_1", use_scale=False, score_mode="dot",
                            dropout=0.25, seed=None),
                    [[("attention", 0, 0, [N, 5, 8]), ("conv1d", 0, 0, [N, 5, 8]),
                      ("dense_1", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("attention_1", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense_2", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_dot_attention", s.functional("functional", L, [("input_layer", 0, 0)],
                                           [("dense_2", 0, 0)], k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # Bahdanau's additive attention: a Dense(8) query of the input's steps attends
    # (AdditiveAttention, its trainable per-feature scale, causal) over a Conv1D(8, 3) of them as
    # the value; an Attention(score_mode concat, use_scale, dropout 0.25) of that over the
    # value with a Dense(8) key (no bias); GlobalAveragePooling1D, Dense(3) logits; Adam.
    L = model_inputs(s, ("input_layer", [N, 5, 6]))
    x = ("input_layer", 0, 0, [N, 5, 6])
    L.append(s.wire(s.dense("dense", 8, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.conv1d("conv1d", 8, 3, padding="same", shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.dense("dense_1", 8, use_bias=False, shape=[N, 5, 6]), [[x]]))
    L.append(s.wire(s.merge("AdditiveAttention", "additive_attention", use_scale=True,
                            dropout=0.0, seed=None),
                    [[("dense", 0, 0, [N, 5, 8]), ("conv1d", 0, 0, [N, 5, 8])]],
                    kwargs={"use_causal_mask": True}))
    L.append(s.wire(s.merge("Attention", "attention", use_scale=True, score_mode="concat",
                            dropout=0.25, seed=None),
                    [[("additive_attention", 0, 0, [N, 5, 8]), ("conv1d", 0, 0, [N, 5, 8]),
                      ("dense_1", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("attention", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense_2", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_additive_attention", s.functional("functional", L, [("input_layer", 0, 0)],
                                                [("dense_2", 0, 0)], k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # tf.keras 2: a Dense(8, tanh) query of the input's steps attends over a Conv1D(8, 3) value
    # (AdditiveAttention without a scale, dropout 0.1); GlobalAveragePooling1D, Dense(3), softmax.
    t = k2
    L = [t.input_layer("input_1", [N, 5, 6])]
    L[0]["name"] = "input_1"
    L[0]["inbound_nodes"] = []
    x = ("input_1", 0, 0, [N, 5, 6])
    L.append(t.wire(t.dense("dense", 8, "tanh", shape=[N, 5, 6]), [[x]]))
    L.append(t.wire(t.conv1d("conv1d", 8, 3, padding="same", shape=[N, 5, 6]), [[x]]))
    L.append(t.wire(t.merge("AdditiveAttention", "additive_attention", use_scale=False,
                            dropout=0.1),
                    [[("dense", 0, 0, [N, 5, 8]), ("conv1d", 0, 0, [N, 5, 8])]]))
    L.append(t.wire(t.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("additive_attention", 0, 0, [N, 5, 8])]]))
    L.append(t.wire(t.dense("dense_1", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    L.append(t.wire(t.activation("activation", "softmax", [N, 3]), [[("dense_1", 0, 0, [N, 3])]]))
    write("tf2_additive_attention", t.functional("model", L, [("input_1", 0, 0)],
                                                 [("activation", 0, 0)]))

    # Refused: Attention with a score_mode Keras does not have.
    L = model_inputs(s, ("input_layer", [N, 5, 8]))
    x = ("input_layer", 0, 0, [N, 5, 8])
    L.append(s.wire(s.merge("Attention", "attention", use_scale=False, score_mode="general",
                            dropout=0.0, seed=None), [[x, x]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("attention", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("err_attention_score_mode", s.functional("functional", L, [("input_layer", 0, 0)],
                                               [("dense", 0, 0)]))

    # Refused: Dot(1, normalize=True) of two (5 steps, 8 features) sequences (normalising
    # along the steps).
    L = model_inputs(s, ("input_layer", [N, 5, 8]))
    x = ("input_layer", 0, 0, [N, 5, 8])
    L.append(s.wire(s.merge("Dot", "dot", axes=1, normalize=True), [[x, x]]))
    L.append(s.wire(s.flatten("flatten", [N, 8, 8]), [[("dot", 0, 0, [N, 8, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 64]), [[("flatten", 0, 0, [N, 64])]]))
    write("err_dot_normalize", s.functional("functional", L, [("input_layer", 0, 0)],
                                            [("dense", 0, 0)]))


def main():
    k3, k2 = Style(True), Style(False)
    N = None

    # A. Keras 3 Functional CNN: ZeroPadding2D folded into a conv, valid/same/strided convs,
    # max pool, BatchNormalization, relu6, Flatten after conv (NHWC order), Dropout, Dense
    # softmax; compile_config supplies SGD lr 0.05 and the loss.
    s = k3
    L = [s.input_layer("input_layer", [N, 8, 8, 3])]
    L[0]["name"] = "input_layer"
    L[0]["inbound_nodes"] = []
    L.append(s.wire(s.zero_padding("zero_padding2d", 1, [N, 8, 8, 3]), [[("input_layer", 0, 0, [N, 8, 8, 3])]]))
    L.append(s.wire(s.conv2d("conv2d", 4, (3, 3), activation="relu", shape=[N, 10, 10, 3]), [[("zero_padding2d", 0, 0, [N, 10, 10, 3])]]))
    L.append(s.wire(s.pool("MaxPooling2D", "max_pooling2d", (2, 2), shape=[N, 8, 8, 4]), [[("conv2d", 0, 0, [N, 8, 8, 4])]]))
    L.append(s.wire(s.conv2d("conv2d_1", 6, (3, 3), strides=(2, 2), padding="same", shape=[N, 4, 4, 4]), [[("max_pooling2d", 0, 0, [N, 4, 4, 4])]]))
    L.append(s.wire(s.batchnorm("batch_normalization", shape=[N, 2, 2, 6]), [[("conv2d_1", 0, 0, [N, 2, 2, 6])]], kwargs={"mask": None}))
    L.append(s.wire(s.activation("activation", "relu6", [N, 2, 2, 6]), [[("batch_normalization", 0, 0, [N, 2, 2, 6])]]))
    L.append(s.wire(s.flatten("flatten", [N, 2, 2, 6]), [[("activation", 0, 0, [N, 2, 2, 6])]]))
    L.append(s.wire(s.dropout("dropout", 0.25, [N, 24]), [[("flatten", 0, 0, [N, 24])]]))
    L.append(s.wire(s.dense("dense", 5, "softmax", shape=[N, 24]), [[("dropout", 0, 0, [N, 24])]]))
    write("k3_cnn", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                 k3_sgd(0.05, "sparse_categorical_crossentropy")))

    # B. tf.keras 2.15 Sequential: dilated same conv, same average pool, depthwise conv with
    # depth multiplier, global average pool, dense, softmax activation layer.
    s = k2
    L = [s.input_layer("input_1", [N, 6, 6, 2]),
         s.conv2d("conv2d", 3, (2, 2), padding="same", dilation=(2, 2), activation="tanh", shape=[N, 6, 6, 2]),
         s.pool("AveragePooling2D", "average_pooling2d", (2, 2), padding="same", shape=[N, 6, 6, 3]),
         s.depthwise("depthwise_conv2d", (3, 3), 2, padding="same", shape=[N, 3, 3, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, 3, 3, 6]),
         s.dense("dense", 4, shape=[N, 6]),
         s.activation("activation", "softmax", [N, 4])]
    write("tf2_seq", s.sequential("sequential", L, [N, 6, 6, 2]))

    # C. Keras 3 Functional MLP with a frozen layer, Add, Concatenate and a nested Sequential
    # head; layer names differ from the class-derived weight paths; compile_config: Adam,
    # SparseCategoricalCrossentropy(from_logits=True) as an object.
    s = k3
    head = s.sequential("head", [s.input_layer("head_input", [N, 16]),
                                 s.dense("logits", 3, shape=[N, 16])], [N, 16], nested=True)
    L = [s.input_layer("features", [N, 12])]
    L[0]["name"] = "features"
    L[0]["inbound_nodes"] = []
    L.append(s.wire(s.dense("hidden", 8, "relu", shape=[N, 12]), [[("features", 0, 0, [N, 12])]]))
    L.append(s.wire(s.dense("frozen", 8, "tanh", trainable=False, shape=[N, 8]), [[("hidden", 0, 0, [N, 8])]]))
    L.append(s.wire(s.merge("Add", "residual"), [[("hidden", 0, 0, [N, 8]), ("frozen", 0, 0, [N, 8])]]))
    L.append(s.wire(s.dense("gate", 8, "sigmoid", shape=[N, 8]), [[("hidden", 0, 0, [N, 8])]]))
    L.append(s.wire(s.merge("Concatenate", "concat", axis=-1), [[("residual", 0, 0, [N, 8]), ("gate", 0, 0, [N, 8])]]))
    h = dict(head)
    h["name"] = "head"
    h["inbound_nodes"] = [{"args": [s.tensor("concat", 0, 0, [N, 16])], "kwargs": {}}]
    L.append(h)
    write("k3_residual", s.functional("functional", L, [("features", 0, 0)], [("head", 0, 0)],
                                      k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # D. tf.keras 2.15 Functional: a shared (weight-tied) Dense applied twice, then a nested
    # Sequential block, then a softmax Activation.
    s = k2
    block = s.sequential("block", [s.input_layer("block_input", [N, 10]),
                                   s.dense("dense_a", 6, "relu", shape=[N, 10]),
                                   s.dense("dense_b", 3, shape=[N, 6])], [N, 10], nested=True)
    L = [s.input_layer("input_1", [N, 10])]
    L[0]["name"] = "input_1"
    L[0]["inbound_nodes"] = []
    L.append(s.wire(s.dense("shared", 10, "tanh", shape=[N, 10]), [[("input_1", 0, 0, None)], [("shared", 0, 0, None)]]))
    b = dict(block)
    b["name"] = "block"
    b["inbound_nodes"] = [[["shared", 1, 0, {}]]]
    L.append(b)
    L.append(s.wire(s.activation("probs", "softmax", [N, 3]), [[("block", 0, 0, None)]]))
    write("tf2_shared_nested", s.functional("model", L, [("input_1", 0, 0)], [("probs", 0, 0)]))

    # E. Keras 3 Sequential: Reshape to a one-channel image, same conv, a frozen
    # BatchNormalization (inference mode), same max pool, global max pool, sigmoid Dense;
    # compile_config: SGD with momentum, binary_crossentropy.
    s = k3
    L = [s.input_layer("input_layer", [N, 16]),
         s.reshape("reshape", (4, 4, 1), [N, 16]),
         s.conv2d("conv2d", 2, (3, 3), padding="same", activation="relu", shape=[N, 4, 4, 1]),
         s.batchnorm("batch_normalization", trainable=False, shape=[N, 4, 4, 2]),
         s.pool("MaxPooling2D", "max_pooling2d", (3, 3), strides=(2, 2), padding="same", shape=[N, 4, 4, 2]),
         s.global_pool("GlobalMaxPooling2D", "global_max_pooling2d", [N, 2, 2, 2]),
         s.dense("dense", 1, "sigmoid", shape=[N, 2])]
    write("k3_seq_frozen_bn", s.sequential("sequential", L, [N, 16],
                                           k3_compile("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": False},
                                                      "binary_crossentropy")))

    # Keras 3 Sequential: Dense(8, mish) -> Dense(6, exponential) -> Dense(3, softmax);
    # compile_config: SGD.
    s = k3
    L = [s.input_layer("input_layer", [N, 5]),
         s.dense("dense", 8, "mish", shape=[N, 5]),
         s.dense("dense_1", 6, "exponential", shape=[N, 8]),
         s.dense("dense_2", 3, "softmax", shape=[N, 6])]
    write("k3_seq_mish_exp", s.sequential("sequential", L, [N, 5],
                                          k3_sgd(0.05, "sparse_categorical_crossentropy")))

    # F. Keras 3 Sequential LSTM stack: LSTM returning sequences, then a go_backwards LSTM
    # with hard_sigmoid gates (Keras 3's: relu6(x + 3) / 6), a Dense over the last state;
    # compile_config: Adam.
    s = k3
    L = [s.input_layer("input_layer", [N, 6, 5]),
         s.rnn("LSTM", "lstm", 8, return_sequences=True, shape=[N, 6, 5]),
         s.rnn("LSTM", "lstm_1", 6, go_backwards=True, recurrent_activation="hard_sigmoid", shape=[N, 6, 8]),
         s.dense("dense", 3, "softmax", shape=[N, 6])]
    write("k3_lstm", s.sequential("sequential", L, [N, 6, 5],
                                  k3_compile("Adam", {"learning_rate": 0.01, "beta_1": 0.9, "beta_2": 0.999,
                                                      "epsilon": 1e-07, "amsgrad": False},
                                             "sparse_categorical_crossentropy")))

    # G. tf.keras 2.15 Functional: Bidirectional GRU (reset_after, concat) returning sequences,
    # TimeDistributed Dense with gelu, a GRU without reset_after and tf.keras 2's hard_sigmoid
    # (clip(0.2 x + 0.5, 0, 1)) gates, a Dense.
    s = k2
    L = [s.input_layer("input_1", [N, 5, 4])]
    L[0]["name"] = "input_1"
    L[0]["inbound_nodes"] = []
    inner = s.rnn("GRU", "gru", 5, return_sequences=True)
    L.append(s.wire(s.wrapper("Bidirectional", "bidirectional", inner, [N, 5, 4], merge_mode="concat"),
                    [[("input_1", 0, 0, None)]]))
    L.append(s.wire(s.wrapper("TimeDistributed", "time_distributed", s.dense("dense", 6, "gelu"), [N, 5, 10]),
                    [[("bidirectional", 0, 0, None)]]))
    L.append(s.wire(s.rnn("GRU", "gru_1", 4, reset_after=False, recurrent_activation="hard_sigmoid", shape=[N, 5, 6]),
                    [[("time_distributed", 0, 0, None)]]))
    L.append(s.wire(s.dense("dense_1", 3, "softmax", shape=[N, 4]), [[("gru_1", 0, 0, None)]]))
    write("tf2_gru_bidir", s.functional("model", L, [("input_1", 0, 0)], [("dense_1", 0, 0)]))

    # H. Keras 3 Functional over token ids (int32 input): Embedding, Dense over (batch, steps,
    # features) with gelu and swish, Multiply/Subtract/Average, softsign, LeakyReLU, ELU, a
    # Bidirectional SimpleRNN summed, selu/softplus/hard_silu/hard_sigmoid/leaky_relu
    # activations, a Dense.
    s = k3
    L = [s.input_layer("ids", [N, 7])]
    L[0]["config"]["dtype"] = "int32"
    L[0]["name"] = "ids"
    L[0]["inbound_nodes"] = []
    def add(entry, inputs):
        L.append(s.wire(entry, [[(i, 0, 0, None) for i in inputs]]))
    add(s.embedding("embedding", 11, 6, [N, 7]), ["ids"])
    add(s.dense("a", 8, "gelu", shape=[N, 7, 6]), ["embedding"])
    add(s.dense("c", 8, "swish", shape=[N, 7, 6]), ["embedding"])
    add(s.merge("Multiply", "multiply"), ["a", "c"])
    add(s.merge("Subtract", "subtract"), ["a", "c"])
    add(s.merge("Average", "average"), ["multiply", "subtract", "a"])
    add(s.activation("softsign", "softsign"), ["average"])
    add(s.leaky_relu("leaky_re_lu", 0.3), ["softsign"])
    add(s.elu("elu", 0.5), ["leaky_re_lu"])
    add(s.wrapper("Bidirectional", "bidirectional", s.rnn("SimpleRNN", "simple_rnn", 5), merge_mode="sum"), ["elu"])
    add(s.dense("d", 8, "selu", shape=[N, 5]), ["bidirectional"])
    add(s.activation("softplus", "softplus"), ["d"])
    add(s.activation("hard_silu", "hard_silu"), ["softplus"])
    add(s.dense("e", 6, "hard_sigmoid", shape=[N, 8]), ["hard_silu"])
    add(s.activation("leaky", "leaky_relu"), ["e"])
    add(s.dense("logits", 3, "softmax", shape=[N, 6]), ["leaky"])
    write("k3_embedding_mix", s.functional("functional", L, [("ids", 0, 0)], [("logits", 0, 0)],
                                           k3_sgd(0.1, "sparse_categorical_crossentropy")))

    conv_family_fixtures(k3, k2)
    crop_pad_upsample_fixtures(k3, k2)

    # I. Keras 3 Sequential CNN-LSTM: Conv1D and MaxPooling1D, then an LSTM reading the 1-D
    # feature map's steps, a TimeDistributed-free Dense over the last state.
    s = k3
    L = [s.input_layer("input_layer", [N, 10, 3]),
         s.conv1d("conv1d", 4, 3, padding="same", activation="relu", shape=[N, 10, 3]),
         s.pool("MaxPooling1D", "max_pooling1d", (2,), shape=[N, 10, 4]),
         s.rnn("LSTM", "lstm", 5, shape=[N, 5, 4]),
         s.dense("dense", 3, "softmax", shape=[N, 5])]
    write("k3_conv1d_lstm", s.sequential("sequential", L, [N, 10, 3],
                                         k3_sgd(0.1, "sparse_categorical_crossentropy")))

    # Error cases.
    s = k3
    L = [s.input_layer("input_layer", [N, 4]), s.lambda_layer("lambda", [N, 4]), s.dense("dense", 2, shape=[N, 4])]
    write("err_lambda", s.sequential("sequential", L, [N, 4]))
    L = [s.input_layer("input_layer", [N, 10, 4]),
         s.entry("ConvLSTM1D", dict(s.base("conv_lstm1d"), filters=8, kernel_size=[3]), [N, 10, 4]),
         s.dense("dense", 2, shape=[N, 8])]
    write("err_convlstm", s.sequential("sequential", L, [N, 10, 4]))
    # A GRU with recurrent dropout.
    L = [s.input_layer("input_layer", [N, 10, 4]),
         s.rnn("GRU", "gru", 8, shape=[N, 10, 4]),
         s.dense("dense", 2, shape=[N, 8])]
    L[1]["config"]["recurrent_dropout"] = 0.25
    write("err_gru_dropout", s.sequential("sequential", L, [N, 10, 4]))
    # Variable-size images (None spatial dims), as a fully convolutional model declares them.
    L = [s.input_layer("image", [N, N, N, 3]),
         s.conv2d("conv2d", 4, (3, 3), activation="relu", shape=[N, N, N, 3]),
         s.global_pool("GlobalAveragePooling2D", "global_average_pooling2d", [N, N, N, 4]),
         s.dense("dense", 2, "softmax", shape=[N, 4])]
    write("variable_input", s.sequential("sequential", L, [N, N, N, 3]))
    # Keras 1 (keras.models.Sequential.to_json() of Keras 1.2).
    k1 = {"class_name": "Sequential", "keras_version": "1.2.2", "config": [
        {"class_name": "Convolution2D", "config": {
            "name": "convolution2d_1", "trainable": True, "batch_input_shape": [None, 28, 28, 1],
            "input_dtype": "float32", "nb_filter": 32, "nb_row": 3, "nb_col": 3, "init": "glorot_uniform",
            "activation": "relu", "border_mode": "valid", "subsample": [1, 1], "dim_ordering": "tf",
            "W_regularizer": None, "b_regularizer": None, "activity_regularizer": None,
            "W_constraint": None, "b_constraint": None, "bias": True}},
        {"class_name": "Flatten", "config": {"name": "flatten_1", "trainable": True}},
        {"class_name": "Dense", "config": {"name": "dense_1", "trainable": True, "output_dim": 10,
                                           "init": "glorot_uniform", "activation": "softmax",
                                           "W_regularizer": None, "b_regularizer": None,
                                           "activity_regularizer": None, "W_constraint": None,
                                           "b_constraint": None, "bias": True, "input_dim": None}}]}
    write("err_keras1", k1)

    # G. Self-attention (issue: Keras MultiHeadAttention): a Keras 3 Functional and a tf.keras
    # 2.15 Functional model, input (5 steps, 8 features) -> MultiHeadAttention(2 heads, key_dim
    # 3, value_dim 4, dropout 0.1) called as mha(x, x) -> Add with x -> LayerNormalization ->
    # GlobalAveragePooling1D -> Dense(3) (-> softmax Activation in tf.keras 2, which has no
    # compile_config here). Keras 3 writes the call's two positional tensors;
    # tf.keras 2 writes the value as a keyword tensor of the query's entry.
    # (k3_mha_causal: the same Keras 3 model with use_causal_mask = true, a decoder's mask.)
    for s, case in ((k3, "k3_mha"), (k2, "tf2_mha"), (k3, "k3_mha_causal")):
        x = "input_layer" if s.k3 else "input_1"
        L = [s.input_layer(x, [N, 5, 8])]
        L[0]["name"] = x
        L[0]["inbound_nodes"] = []
        m = s.mha("multi_head_attention", 2, 3, value_dim=4, dropout=0.1, shape=[N, 5, 8])
        m["name"] = "multi_head_attention"
        if s.k3:
            m["inbound_nodes"] = [{"args": [s.tensor(x, 0, 0, [N, 5, 8]), s.tensor(x, 0, 0, [N, 5, 8])],
                                   "kwargs": {"use_causal_mask": True} if "causal" in case else {}}]
        else:
            m["inbound_nodes"] = [[[x, 0, 0, {"value": [x, 0, 0]}]]]
        L.append(m)
        L.append(s.wire(s.merge("Add", "add"), [[(x, 0, 0, [N, 5, 8]), ("multi_head_attention", 0, 0, [N, 5, 8])]]))
        L.append(s.wire(s.layer_norm("layer_normalization", shape=[N, 5, 8]), [[("add", 0, 0, [N, 5, 8])]]))
        L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                        [[("layer_normalization", 0, 0, [N, 5, 8])]]))
        L.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
        if s.k3:
            write(case, s.functional("functional", L, [(x, 0, 0)], [("dense", 0, 0)],
                                     k3_adam(0.01, SPARSE_FROM_LOGITS)))
        else:
            L.append(s.wire(s.activation("activation", "softmax", [N, 3]), [[("dense", 0, 0, [N, 3])]]))
            write(case, s.functional("model", L, [(x, 0, 0)], [("activation", 0, 0)]))
    # Cross-attention (Keras 3): the query is the input (5 steps, 8 features), the value a
    # Dense(6) of its middle 3 steps (Cropping1D), called as mha(x, value=v) -> Add with x ->
    # LayerNormalization -> GlobalAveragePooling1D -> Dense(3).
    s = k3
    L = [s.input_layer("input_layer", [N, 5, 8])]
    L[0]["name"] = "input_layer"
    L[0]["inbound_nodes"] = []
    L.append(s.wire(s.cropping("cropping1d", (1, 1), [N, 5, 8]), [[("input_layer", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("memory", 6, "tanh", shape=[N, 3, 8]), [[("cropping1d", 0, 0, [N, 3, 8])]]))
    m = s.mha("multi_head_attention", 2, 3, value_dim=4, dropout=0.1, shape=[N, 5, 8])
    m["build_config"]["shapes_dict"]["value_shape"] = [N, 3, 6]
    m["name"] = "multi_head_attention"
    m["inbound_nodes"] = [{"args": [s.tensor("input_layer", 0, 0, [N, 5, 8])],
                           "kwargs": {"value": s.tensor("memory", 0, 0, [N, 3, 6])}}]
    L.append(m)
    L.append(s.wire(s.merge("Add", "add"), [[("input_layer", 0, 0, [N, 5, 8]), ("multi_head_attention", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.layer_norm("layer_normalization", shape=[N, 5, 8]), [[("add", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("layer_normalization", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_mha_cross", s.functional("functional", L, [("input_layer", 0, 0)], [("dense", 0, 0)],
                                       k3_adam(0.01, SPARSE_FROM_LOGITS)))

    # A Dense(8, relu) on the rows of the (5 steps, 6 features) input -> a normalization ->
    # GlobalAveragePooling1D -> a second normalization of the vector -> Dense(3), the
    # normalizations `norm(name, shape, second)`'s layers (named base and base + "_1").
    def normalized_rows(name, base, norm, compile_config):
        L = [s.input_layer("input_layer", [N, 5, 6])]
        L[0]["name"] = "input_layer"
        L[0]["inbound_nodes"] = []
        L.append(s.wire(s.dense("dense", 8, "relu", shape=[N, 5, 6]),
                        [[("input_layer", 0, 0, [N, 5, 6])]]))
        L.append(s.wire(norm(base, [N, 5, 8], False), [[("dense", 0, 0, [N, 5, 8])]]))
        L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d",
                                      [N, 5, 8]), [[(base, 0, 0, [N, 5, 8])]]))
        L.append(s.wire(norm(base + "_1", [N, 8], True),
                        [[("global_average_pooling1d", 0, 0, [N, 8])]]))
        L.append(s.wire(s.dense("dense_1", 3, shape=[N, 8]), [[(base + "_1", 0, 0, [N, 8])]]))
        write(name, s.functional("functional", L, [("input_layer", 0, 0)], [("dense_1", 0, 0)],
                                 compile_config))

    # RMSNormalization (Keras 3.9): epsilon 1e-6, then 0.01 on the vector; Adam from logits.
    normalized_rows("k3_rms_norm", "rms_normalization",
                    lambda name, shape, second: s.rms_norm(name, epsilon=0.01 if second else 1e-6,
                                                           shape=shape),
                    k3_adam(0.01, SPARSE_FROM_LOGITS))
    # UnitNormalization (Keras 3): axis -1, then [1] on the vector; SGD from logits.
    normalized_rows("k3_unit_norm", "unit_normalization",
                    lambda name, shape, second: s.unit_norm(name, axis=[1] if second else -1,
                                                            shape=shape),
                    k3_sgd(0.1, SPARSE_FROM_LOGITS))

    # An attention mask from a second input (Keras 3): x [N, 5, 8] and mask [N, 5, 5] (1 where
    # query t may attend to key s) -> MultiHeadAttention(2 heads, key_dim 4)(x, x,
    # attention_mask=mask) -> GlobalAveragePooling1D -> Dense(3); SGD from logits.
    L = model_inputs(s, ("input_layer", [N, 5, 8]), ("mask", [N, 5, 5]))
    m = s.mha("multi_head_attention", 2, 4, shape=[N, 5, 8])
    m["name"] = "multi_head_attention"
    m["inbound_nodes"] = [{"args": [s.tensor("input_layer", 0, 0, [N, 5, 8]),
                                    s.tensor("input_layer", 0, 0, [N, 5, 8])],
                           "kwargs": {"attention_mask": s.tensor("mask", 0, 0, [N, 5, 5])}}]
    L.append(m)
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("multi_head_attention", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    write("k3_mha_mask", s.functional("functional", L, [("input_layer", 0, 0), ("mask", 0, 0)],
                                      [("dense", 0, 0)],
                                      k3_sgd(0.1, SPARSE_FROM_LOGITS)))

    # The same attention in a tf.keras 2 file with one mask row per sequence: input_2 [N, 1, 5]
    # (a key-padding mask, broadcast over the queries), passed as the query entry's
    # attention_mask keyword tensor -> GlobalAveragePooling1D -> Dense(3) -> softmax.
    s = k2
    L = model_inputs(s, ("input_1", [N, 5, 8]), ("input_2", [N, 1, 5]))
    m = s.mha("multi_head_attention", 2, 4, shape=[N, 5, 8])
    m["name"] = "multi_head_attention"
    m["inbound_nodes"] = [[["input_1", 0, 0, {"value": ["input_1", 0, 0],
                                                "attention_mask": ["input_2", 0, 0]}]]]
    L.append(m)
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 5, 8]),
                    [[("multi_head_attention", 0, 0, [N, 5, 8])]]))
    L.append(s.wire(s.dense("dense", 3, shape=[N, 8]), [[("global_average_pooling1d", 0, 0, [N, 8])]]))
    L.append(s.wire(s.activation("activation", "softmax", [N, 3]), [[("dense", 0, 0, [N, 3])]]))
    write("tf2_mha_mask", s.functional("model", L, [("input_1", 0, 0), ("input_2", 0, 0)],
                                       [("activation", 0, 0)]))
    s = k3

    # Two inputs (a text and its metadata): token ids "text" [N, 6] (int32) -> Embedding(20,
    # 8) -> GlobalAveragePooling1D, and float features "meta" [N, 5] -> Dense(8, relu);
    # Concatenate -> Dense(3) logits; SGD from logits.
    L = model_inputs(s, ("text", [N, 6]), ("meta", [N, 5]))
    L[0]["config"]["dtype"] = "int32"
    L.append(s.wire(s.embedding("embedding", 20, 8, [N, 6]), [[("text", 0, 0, [N, 6])]]))
    L.append(s.wire(s.global_pool("GlobalAveragePooling1D", "global_average_pooling1d", [N, 6, 8]),
                    [[("embedding", 0, 0, [N, 6, 8])]]))
    L.append(s.wire(s.dense("dense", 8, "relu", shape=[N, 5]), [[("meta", 0, 0, [N, 5])]]))
    L.append(s.wire(s.merge("Concatenate", "concatenate", axis=-1),
                    [[("global_average_pooling1d", 0, 0, [N, 8]), ("dense", 0, 0, [N, 8])]]))
    L.append(s.wire(s.dense("dense_1", 3, shape=[N, 16]), [[("concatenate", 0, 0, [N, 16])]]))
    write("k3_two_inputs", s.functional("functional", L, [("text", 0, 0), ("meta", 0, 0)],
                                        [("dense_1", 0, 0)],
                                        k3_sgd(0.1, SPARSE_FROM_LOGITS)))

    # Keras 3 Sequential MLP compiled with SparseCategoricalCrossentropy(from_logits=True,
    # ignore_class=0): samples of class 0 add nothing to the loss, which averages over the
    # others.
    ignore0 = json.loads(json.dumps(SPARSE_FROM_LOGITS))
    ignore0["config"]["ignore_class"] = 0
    L = [s.dense("dense", 8, "relu", shape=[N, 12]), s.dense("dense_1", 3, shape=[N, 8])]
    write("k3_ignore_class", s.sequential("sequential", L, [N, 12], k3_sgd(0.1, ignore0)))

    # The same MLP with one logit, compiled with BinaryCrossentropy(from_logits=True,
    # label_smoothing=0.2): targets 0.8 y + 0.1.
    smoothed = {"module": "keras.losses", "class_name": "BinaryCrossentropy",
                "config": {"name": "binary_crossentropy", "reduction": "sum_over_batch_size",
                           "from_logits": True, "label_smoothing": 0.2, "axis": -1},
                "registered_name": None}
    L = [s.dense("dense", 8, "relu", shape=[N, 12]), s.dense("dense_1", 1, shape=[N, 8])]
    write("k3_label_smoothing", s.sequential("sequential", L, [N, 12], k3_sgd(0.1, smoothed)))

    noise_fixtures(k3, k2)
    seq2seq_fixtures(k3, k2)
    convnext_app_fixtures(k3)
    se_fixtures(k3)
    efficientnet_fixtures(k3)
    convnext_fixtures(k3)
    masked_rnn_fixtures(k3, k2)
    masked_output_fixtures(k3, k2)
    conv1d_transpose_fixtures(k2)
    volume_fixtures(k3)

    # MultiHeadAttention calls graphc refuses: a value_mask tensor, an attention mask of 3 keys
    # for 5, the attention scores as a second output.
    for case, kwargs, keys in (("err_mha_mask", {"value_mask": "mask"}, 5),
                               ("err_mha_mask_shape", {"attention_mask": "mask"}, 3),
                               ("err_mha_scores", {"return_attention_scores": True}, 5)):
        value = "input_layer"
        L = [s.input_layer("input_layer", [N, 5, 8])]
        L[0]["name"] = "input_layer"
        L[0]["inbound_nodes"] = []
        L.append(s.wire(s.dense("proj", 8, shape=[N, 5, 8]), [[("input_layer", 0, 0, [N, 5, 8])]]))
        L.append(s.wire(s.dense("mask", keys, "sigmoid", shape=[N, 5, 8]), [[("input_layer", 0, 0, [N, 5, 8])]]))
        m = s.mha("multi_head_attention", 2, 4, shape=[N, 5, 8])
        m["name"] = "multi_head_attention"
        kw = {k: (s.tensor(v, 0, 0, [N, 5, keys]) if isinstance(v, str) else v) for k, v in kwargs.items()}
        m["inbound_nodes"] = [{"args": [s.tensor("input_layer", 0, 0, [N, 5, 8]),
                                        s.tensor(value, 0, 0, [N, 5, 8])], "kwargs": kw}]
        L.append(m)
        write(case, s.functional("functional", L, [("input_layer", 0, 0)],
                                 [("multi_head_attention", 0, 0)]))


if __name__ == "__main__":
    main()
