"""ATB's Python surface (OperationTorch, atb_ops.Operation): every communication operator on the CPU backends,
LinearParallelOperation, bad inputs, property-based fuzzing, ranks that disagree."""
