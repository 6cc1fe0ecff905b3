// RUN: graphc-opt %s --split-input-file --verify-diagnostics --graphc-build-train-step
// RUN: not graphc-opt %s --split-input-file --graphc-build-train-step=loss=hinge 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not graphc-opt %s --split-input-file --graphc-build-train-step=optimizer=rmsprop 2>&1 | FileCheck %s --check-prefix=OPT

// An unknown loss option is refused before anything is built (every split fails the same way).
// LOSS: error: unknown loss 'hinge'; expected sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy or mse
// LOSS-NOT: func.func @train_step

// An unknown optimizer option is refused before anything is built.
// OPT: error: unknown optimizer 'rmsprop'; expected sgd, momentum or adam
// OPT-NOT: func.func @train_step

// Only parameters: there is no batch to train on.
// expected-error @+1 {{expected at least one data input, found none}}
func.func @no_input(%w: tensor<4x2xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x2xf32> {
  %y = graph.relu %w : tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A parameter that no op reads has no gradient and no update.
// expected-error @+1 {{parameter 'unused' does not influence the loss; remove it or mark it frozen}}
func.func @unused_parameter(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                            %w: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w"},
                            %u: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "unused"}) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// A parameter read only by a dead side branch does not influence the loss either.
// expected-error @+1 {{parameter 'side.weight' does not influence the loss; remove it or mark it frozen}}
func.func @dead_branch_parameter(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                                 %w: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w"},
                                 %u: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "side.weight"}) -> tensor<4x2xf32> {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %z = graph.dense %x, %u : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// An op on the gradient path without a backward rule (matmul is a backward-only op) is refused.
func.func @no_gradient_rule(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                            %w: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w"}) -> tensor<4x2xf32> {
  // expected-error @+1 {{graphc-build-train-step has no gradient for 'graph.matmul'}}
  %y = graph.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// The forward function returns one prediction, and a second result only as its loss weights
// (graph.kind = "loss_weights").
// expected-error @+1 {{the forward function must return one prediction (and optionally its loss weights), it returns 2 values}}
func.func @two_results(%x: tensor<4x3xf32> {graph.kind = "input", graph.name = "x"},
                       %w: tensor<3x2xf32> {graph.kind = "parameter", graph.name = "w"}) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %r = graph.relu %y : tensor<4x2xf32>
  return %y, %r : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// The module holds exactly one forward function.
// expected-error @+1 {{expected exactly one forward function, found 2}}
module {
  func.func @a(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {graph.kind = "parameter"}) -> tensor<4x2xf32> {
    %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
  func.func @b(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {graph.kind = "parameter"}) -> tensor<4x2xf32> {
    %y = graph.dense %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
}

// -----

// graph.rotary's tables are constants of the step: a trained table is refused, not given a
// gradient that graphc does not compute.
func.func @forward(%x: tensor<2x4x8xf32> {graph.kind = "input", graph.name = "x"},
                   %cos: tensor<4x8xf32> {graph.kind = "parameter", graph.name = "cos"},
                   %sin: tensor<4x8xf32> {graph.kind = "parameter", graph.name = "sin", graph.trainable = false}) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{graphc-build-train-step: graph.rotary's cos and sin tables must not need a gradient (freeze them)}}
  %y = graph.rotary %x, %cos, %sin : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// A random image transform of a trained layer's output would need the transform's gradient,
// which graph.random_affine does not have (importers put augmentation before trained layers).
func.func @augment_after_trained(%x: tensor<2x3x4x4xf32> {graph.kind = "input", graph.name = "x"},
                                 %step: tensor<f32> {graph.kind = "input", graph.name = "step", graph.role = "step"},
                                 %s: tensor<2x3x4x4xf32> {graph.kind = "parameter", graph.name = "shift"}) -> tensor<2x3x4x4xf32> {
  %h = graph.add %x, %s : tensor<2x3x4x4xf32>
  // expected-error @+1 {{graph.random_affine has no gradient for its input, which needs one (it reads a trained layer's output); put the image augmentation layers before every trained layer}}
  %y = graph.random_affine %h, %step {kind = "rotate", low0 = -0.1 : f32, high0 = 0.1 : f32, op_id = 0} : (tensor<2x3x4x4xf32>, tensor<f32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}
