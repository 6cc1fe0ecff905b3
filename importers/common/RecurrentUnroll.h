// Recurrent layers (SimpleRNN, LSTM, GRU) as graph-dialect ops unrolled over time, shared by the
// Keras importer (LSTM/GRU/SimpleRNN/Bidirectional) and the ONNX importer (LSTM/GRU nodes).
//
// Unrolling, rather than one fused recurrent op, makes every per-step tensor an ordinary value:
// autodiff, liveness, the arena planner and rematerialization see each gate of each step, so a
// long sequence's saved activations are planned and fitted like any other layer's. The cost is
// about 20 ops per step (the input projection of all steps is one dense).
#pragma once

#include <array>
#include <functional>
#include <string>

#include "mlir/IR/Builders.h"

namespace graphc {

enum class RecurrentCell { SimpleRnn, Lstm, Gru };

/// An activation of a cell, built by the importer's own mapping of names to ops.
using RecurrentActivation =
    std::function<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::Value)>;

/// One direction of a recurrent layer. Gates are blocks of `units` along the G * units axis of
/// the kernels and biases (G = 1, 4, 3 for SimpleRNN, LSTM, GRU); `gateSlots` says which block
/// holds each gate, in Keras's gate order: LSTM input, forget, cell, output; GRU update (z),
/// reset (r), candidate (h). Keras's own layout is slots {0, 1, 2, 3}; ONNX's LSTM (i, o, f, c)
/// is {0, 2, 3, 1} and its GRU (z, r, h) {0, 1, 2}.
struct RecurrentLayer {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t units = 0;
  std::array<int, 4> gateSlots = {0, 1, 2, 3};
  mlir::Value kernel;          // [features, G*units], or [G*units, features] if transposed
  mlir::Value recurrentKernel; // [units, G*units], or [G*units, units] if transposed
  bool transposedKernels = false;
  mlir::Value bias;            // [G*units] added to the input projection, or null
  mlir::Value recurrentBias;   // [G*units] added to the recurrent projection, or null (GRU's
                               // reset_after bias, ONNX's Rb)
  bool resetAfter = true;      // GRU: r * (h U_h + b_h) (Keras 3, TF2, PyTorch, ONNX
                               // linear_before_reset = 1); false: (r * h) U_h
  RecurrentActivation gate;      // recurrent_activation (sigmoid, hard_sigmoid, ...)
  RecurrentActivation candidate; // activation (tanh, ...)
  bool reverse = false;          // process the steps last to first (go_backwards)
  bool returnSequences = false;  // every step's state, not only the last one
  bool sequenceInInputOrder = false; // with reverse: step t's state at position t (the
                                     // backward half of Bidirectional, ONNX), rather than in
                                     // processing order (Keras go_backwards)
  std::string name;              // prefix of the ops' names (NameLoc)
  mlir::Value stepMask;          // [batch, time]: 1 where the step is taken, 0 where it is
                                 // skipped (Keras's mask: the states carry over), or null
  mlir::Value stateDropMask;     // [batch, units]: the state times it before the recurrent
                                 // kernel at every step (Keras's recurrent_dropout of LSTM and
                                 // SimpleRNN: one mask for all steps), or null
};

struct RecurrentOutputs {
  mlir::Value sequence; // [batch, time, units], with returnSequences
  mlir::Value lastH;    // [batch, units]: the state after the last processed step
  mlir::Value lastC;    // [batch, units]: LSTM's cell state after it
};

/// Builds `layer` over x = [batch, time, features] with zero initial states.
RecurrentOutputs unrollRecurrent(mlir::OpBuilder &b, const RecurrentLayer &layer, mlir::Value x);

} // namespace graphc
